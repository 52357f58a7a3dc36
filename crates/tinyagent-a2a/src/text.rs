//! Text in and out of A2A messages and artifacts: what a tinyagent agent reads and writes.

use a2a::{A2AError, Message, Part, PartContent, Role, new_message_id};

/// The text of an incoming message: its text parts in order, and its data parts as JSON.
/// File parts (bytes or a URL) are refused: the agent reads text.
pub(crate) fn message_text(message: &Message) -> Result<String, A2AError> {
    let mut text = String::new();
    for (i, part) in message.parts.iter().enumerate() {
        let piece = match &part.content {
            PartContent::Text(t) => t.clone(),
            PartContent::Data(value) => value.to_string(),
            PartContent::Raw(_) | PartContent::Url(_) => {
                return Err(A2AError::invalid_params(format!(
                    "message part {i} is a file; this agent reads text and data parts only"
                )));
            }
        };
        if !text.is_empty() && !piece.is_empty() {
            text.push('\n');
        }
        text.push_str(&piece);
    }
    if text.trim().is_empty() {
        return Err(A2AError::invalid_params(
            "the message has no text: send a text part",
        ));
    }
    Ok(text)
}

/// The text of parts a remote agent gave (artifacts, status messages): text parts, and data
/// parts as JSON; a file part is named, not fetched.
pub(crate) fn parts_text(parts: &[Part]) -> String {
    let mut text = String::new();
    for part in parts {
        match &part.content {
            PartContent::Text(t) => text.push_str(t),
            PartContent::Data(value) => text.push_str(&value.to_string()),
            PartContent::Url(url) => text.push_str(&format!("[file: {url}]")),
            PartContent::Raw(bytes) => text.push_str(&format!(
                "[file: {}, {} bytes]",
                part.filename.as_deref().unwrap_or("unnamed"),
                bytes.len()
            )),
        }
    }
    text
}

/// An agent message with these parts, in a task.
pub(crate) fn agent_message(task_id: &str, context_id: &str, parts: Vec<Part>) -> Message {
    Message {
        message_id: new_message_id(),
        context_id: Some(context_id.to_owned()),
        task_id: Some(task_id.to_owned()),
        role: Role::Agent,
        parts,
        metadata: None,
        extensions: None,
        reference_task_ids: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn text_and_data_parts_are_read_files_are_refused() {
        let message = Message::new(
            Role::User,
            vec![Part::text("7 × 8?"), Part::data(json!({"unit": "c"}))],
        );
        assert_eq!(message_text(&message).unwrap(), "7 × 8?\n{\"unit\":\"c\"}");
        let file = Message::new(Role::User, vec![Part::url("https://example.com/a.png")]);
        let err = message_text(&file).unwrap_err();
        assert!(err.to_string().contains("file"), "{err}");
        let empty = Message::new(Role::User, vec![Part::text("  ")]);
        assert!(message_text(&empty).is_err());
    }

    #[test]
    fn parts_of_every_kind_have_a_text() {
        let parts = vec![
            Part::text("a"),
            Part::data(json!([1])),
            Part::url("u"),
            Part::raw(vec![0; 3]).with_filename("f.bin"),
        ];
        assert_eq!(parts_text(&parts), "a[1][file: u][file: f.bin, 3 bytes]");
    }
}
