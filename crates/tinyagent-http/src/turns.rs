//! The history as APIs that keep the system prompt apart and want user and assistant turns
//! to alternate (Anthropic's messages, Gemini's contents) take it.

use tinyagent_core::{Message, ModelRequest, Role};

/// The system prompt (the instruction, then the text of the history's system messages,
/// joined by blank lines, then, when the request asks its answer in a
/// [shape](ModelRequest::response_format), the shape's schema: these APIs take no response
/// format alongside tools) and the other messages as turns: `convert` gives each message's
/// role on the wire and its parts; consecutive messages of one wire role are merged into one
/// turn, and messages without parts are left out.
///
/// ```
/// use tinyagent::{Message, ModelRequest, ToolResult};
///
/// let req = ModelRequest::new(vec![
///     Message::user("hi"),
///     Message::system("be brief"),
///     Message::from_tool_results([ToolResult::ok("c1", "t", "ok")]),
///     Message::user("thanks"),
/// ])
/// .instruction("you help");
/// let (system, turns) = tinyagent_http::system_and_turns(&req, |m| {
///     let role = if m.role == tinyagent::Role::Assistant { "assistant" } else { "user" };
///     (role, vec![m.text()])
/// });
/// assert_eq!(system, "you help\n\nbe brief");
/// assert_eq!(turns, [("user", vec!["hi".to_owned(), String::new(), "thanks".to_owned()])]);
///
/// // An answer in a shape: the schema is in the system prompt.
/// let shaped = req.response_format(tinyagent::model::ResponseFormat::json_schema(
///     "city",
///     serde_json::json!({"type": "object", "required": ["name"]}),
/// ));
/// let (system, _) = tinyagent_http::system_and_turns(&shaped, |m| ("user", vec![m.text()]));
/// assert!(system.ends_with(r#"{"type":"object","required":["name"]}"#), "{system}");
/// ```
pub fn system_and_turns<P>(
    req: &ModelRequest,
    mut convert: impl FnMut(&Message) -> (&'static str, Vec<P>),
) -> (String, Vec<(&'static str, Vec<P>)>) {
    let mut system = req.instruction.clone();
    let mut turns: Vec<(&'static str, Vec<P>)> = Vec::new();
    for message in &req.messages {
        if message.role == Role::System {
            let text = message.text();
            if !text.trim().is_empty() {
                if !system.is_empty() {
                    system.push_str("\n\n");
                }
                system.push_str(&text);
            }
            continue;
        }
        let (role, parts) = convert(message);
        if parts.is_empty() {
            continue;
        }
        match turns.last_mut() {
            Some((last, content)) if *last == role => content.extend(parts),
            _ => turns.push((role, parts)),
        }
    }
    if let Some(format) = &req.response_format {
        if !system.is_empty() {
            system.push_str("\n\n");
        }
        system.push_str(&format!(
            "When you give your final answer (not a tool call), answer with only a JSON value \
             that matches this JSON Schema, named {}: no other text, no code fence.\n{}",
            format.name, format.schema
        ));
    }
    (system, turns)
}
