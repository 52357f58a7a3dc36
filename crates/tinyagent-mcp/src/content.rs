//! Turning an MCP tool result into the text a model reads.

use rmcp::model::{CallToolResult, ContentBlock, ResourceContents};

/// Renders the content of a `tools/call` result as text.
///
/// Text blocks are joined with newlines. Other kinds are described rather than dropped: an
/// image or audio block by its MIME type and size, an embedded text resource by its URI
/// followed by its text, a binary resource or a resource link by URI and MIME type. When
/// there is no content but structured content, the structured content is the text (as JSON).
pub fn result_text(result: &CallToolResult) -> String {
    let mut parts: Vec<String> = result.content.iter().map(describe_block).collect();
    if parts.is_empty()
        && let Some(structured) = &result.structured_content
    {
        parts.push(structured.to_string());
    }
    parts.join("\n")
}

fn describe_block(block: &ContentBlock) -> String {
    match block {
        ContentBlock::Text(text) => text.text.clone(),
        ContentBlock::Image(image) => format!(
            "[image: {}, {} bytes base64]",
            image.mime_type,
            image.data.len()
        ),
        ContentBlock::Audio(audio) => format!(
            "[audio: {}, {} bytes base64]",
            audio.mime_type,
            audio.data.len()
        ),
        ContentBlock::Resource(embedded) => match &embedded.resource {
            ResourceContents::TextResourceContents { uri, text, .. } => {
                format!("[resource {uri}]\n{text}")
            }
            ResourceContents::BlobResourceContents {
                uri,
                mime_type,
                blob,
                ..
            } => format!(
                "[binary resource {uri}: {}, {} bytes base64]",
                mime_type.as_deref().unwrap_or("unknown type"),
                blob.len()
            ),
            #[allow(unreachable_patterns)]
            _ => "[resource of an unknown kind]".to_owned(),
        },
        ContentBlock::ResourceLink(link) => {
            let mime = link
                .mime_type
                .as_deref()
                .map(|m| format!(", {m}"))
                .unwrap_or_default();
            format!("[resource link {} <{}>{mime}]", link.name, link.uri)
        }
        #[allow(unreachable_patterns)]
        _ => "[content of a kind this client does not know]".to_owned(),
    }
}

/// The most bytes of a tool result a toolset passes on by default: 100 000 bytes (about
/// 25 000 tokens). See [`McpToolset::max_result_bytes`](crate::McpToolset::max_result_bytes).
pub const DEFAULT_MAX_RESULT_BYTES: usize = 100_000;

/// Cuts `text` to at most `max_bytes` bytes (on a character boundary) and, when it cut,
/// appends a marker saying how much was cut, so the model knows the result is incomplete.
/// The marker comes on top of `max_bytes`.
///
/// ```
/// use tinyagent_mcp::truncate_result;
///
/// assert_eq!(truncate_result("short".to_owned(), 100), "short");
/// let cut = truncate_result("x".repeat(1000), 100);
/// assert!(cut.starts_with(&"x".repeat(100)));
/// assert!(cut.ends_with("[result truncated: 900 of 1000 bytes cut, the limit is 100 bytes]"));
/// ```
pub fn truncate_result(mut text: String, max_bytes: usize) -> String {
    let total = text.len();
    if total <= max_bytes {
        return text;
    }
    let mut end = max_bytes;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text.truncate(end);
    text.push_str(&format!(
        "\n[result truncated: {} of {total} bytes cut, the limit is {max_bytes} bytes]",
        total - end
    ));
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmcp::model::{ImageContent, TextContent};

    #[test]
    fn joins_text_and_describes_the_rest() {
        let result = CallToolResult::success(vec![
            ContentBlock::Text(TextContent::new("one")),
            ContentBlock::Image(ImageContent::new("aGVsbG8=", "image/png")),
            ContentBlock::Text(TextContent::new("two")),
        ]);
        assert_eq!(
            result_text(&result),
            "one\n[image: image/png, 8 bytes base64]\ntwo"
        );
    }

    #[test]
    fn truncation_keeps_whole_characters() {
        let cut = truncate_result("天气".repeat(10), 4);
        assert!(
            cut.starts_with("天\n[result truncated: 57 of 60 bytes cut"),
            "{cut}"
        );
        assert_eq!(truncate_result(String::new(), 0), "");
    }

    #[test]
    fn structured_content_stands_in_for_missing_content() {
        let mut result = CallToolResult::success(vec![]);
        result.structured_content = Some(serde_json::json!({"a": 1}));
        assert_eq!(result_text(&result), r#"{"a":1}"#);
    }
}
