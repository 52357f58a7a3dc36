//! MCP content and tinyagent's [`ContentPart`]s, both ways, and the text a model reads.

use rmcp::model::{CallToolResult, ContentBlock, ResourceContents, TextContent};
use tinyagent::tools::ToolOutput;
use tinyagent::{ContentPart, ToolError, tools::content_text};

/// An MCP content block as a content part: text, image, audio, embedded resource (text or
/// blob) and resource link each become their own kind; a kind this client does not know
/// becomes a text part saying so.
pub fn content_part(block: &ContentBlock) -> ContentPart {
    match block {
        ContentBlock::Text(text) => ContentPart::text(text.text.clone()),
        ContentBlock::Image(image) => {
            ContentPart::image(image.data.clone(), image.mime_type.clone())
        }
        ContentBlock::Audio(audio) => {
            ContentPart::audio(audio.data.clone(), audio.mime_type.clone())
        }
        ContentBlock::Resource(embedded) => match &embedded.resource {
            ResourceContents::TextResourceContents {
                uri,
                mime_type,
                text,
                ..
            } => ContentPart::resource_text(uri.clone(), mime_type.clone(), text.clone()),
            ResourceContents::BlobResourceContents {
                uri,
                mime_type,
                blob,
                ..
            } => ContentPart::resource_blob(uri.clone(), mime_type.clone(), blob.clone()),
            #[allow(unreachable_patterns)]
            _ => ContentPart::text("[resource of a kind this client does not know]"),
        },
        ContentBlock::ResourceLink(link) => {
            let mut part = ContentPart::resource_link(link.uri.clone(), link.name.clone());
            if let ContentPart::ResourceLink {
                description,
                mime_type,
                ..
            } = &mut part
            {
                description.clone_from(&link.description);
                mime_type.clone_from(&link.mime_type);
            }
            part
        }
        #[allow(unreachable_patterns)]
        _ => ContentPart::text("[content of a kind this client does not know]"),
    }
}

/// A content part as an MCP content block (the inverse of [`content_part`]).
pub fn content_block(part: &ContentPart) -> ContentBlock {
    match part {
        ContentPart::Text { text } => ContentBlock::text(text.clone()),
        ContentPart::Image { data, mime_type } => {
            ContentBlock::image(data.clone(), mime_type.clone())
        }
        ContentPart::Audio { data, mime_type } => {
            ContentBlock::audio(data.clone(), mime_type.clone())
        }
        ContentPart::Resource {
            uri,
            mime_type,
            text,
            blob,
        } => ContentBlock::resource(match (text, blob) {
            (_, Some(blob)) => ResourceContents::BlobResourceContents {
                uri: uri.clone(),
                mime_type: mime_type.clone(),
                blob: blob.clone(),
                meta: None,
            },
            (text, None) => ResourceContents::TextResourceContents {
                uri: uri.clone(),
                mime_type: mime_type.clone(),
                text: text.clone().unwrap_or_default(),
                meta: None,
            },
        }),
        ContentPart::ResourceLink {
            uri,
            name,
            description,
            mime_type,
        } => {
            let mut link = rmcp::model::Resource::new(uri.clone(), name.clone());
            link.description.clone_from(description);
            link.mime_type.clone_from(mime_type);
            ContentBlock::resource_link(link)
        }
        #[allow(unreachable_patterns)]
        other => ContentBlock::text(other.describe()),
    }
}

/// A `tools/call` result as a [`ToolOutput`]: every content block as a [`ContentPart`], the
/// structured content, and the error flag; its text is [`result_text`].
pub fn tool_output(result: &CallToolResult) -> ToolOutput {
    let parts: Vec<ContentPart> = result.content.iter().map(content_part).collect();
    let mut output = ToolOutput::parts(parts).with_text(result_text(result));
    if let Some(value) = &result.structured_content {
        output = output.with_structured(value.clone());
    }
    if result.is_error == Some(true) {
        output = output.into_error();
    }
    output
}

/// Renders the content of a `tools/call` result as text.
///
/// Text blocks are joined with newlines. Other kinds are described rather than dropped (see
/// [`ContentPart::describe`]): an image or audio block by its MIME type and size
/// (`[image image/png, 5.2 kB]`), an embedded text resource by its URI followed by its text,
/// a binary resource or a resource link by URI and MIME type. When there is no content but
/// structured content, the structured content is the text (as JSON).
pub fn result_text(result: &CallToolResult) -> String {
    if result.content.is_empty()
        && let Some(structured) = &result.structured_content
    {
        return structured.to_string();
    }
    let parts: Vec<ContentPart> = result.content.iter().map(content_part).collect();
    content_text(&parts)
}

/// Bounds rich content to `max_bytes`: media and binary resources that do not fit in what is
/// left are replaced by their description with a note; text is left to the caller.
pub(crate) fn bound_parts(parts: Vec<ContentPart>, max_bytes: usize) -> Vec<ContentPart> {
    let mut left = max_bytes;
    parts
        .into_iter()
        .map(|part| {
            let weight = part.weight();
            if part.is_text() {
                left = left.saturating_sub(weight);
                part
            } else if weight > left {
                ContentPart::text(format!(
                    "{} (left out: larger than the {max_bytes}-byte result limit)",
                    part.describe().lines().next().unwrap_or_default()
                ))
            } else {
                left -= weight;
                part
            }
        })
        .collect()
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

/// A tool's successful output as MCP content: its parts as content blocks when it has any
/// (else its text), and its structured content.
pub(crate) fn success_result(output: ToolOutput) -> CallToolResult {
    let (text, parts, structured) = output.into_parts();
    let content = if parts.is_empty() {
        vec![ContentBlock::Text(TextContent::new(text))]
    } else {
        parts.iter().map(content_block).collect()
    };
    let mut result = CallToolResult::success(content);
    result.structured_content = structured;
    result
}

/// A tool's error as an MCP error result the client's model reads.
pub(crate) fn error_result(error: &ToolError) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::Text(TextContent::new(
        error.message().to_owned(),
    ))])
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmcp::model::{ImageContent, TextContent};

    #[test]
    fn every_kind_converts_both_ways() {
        let mut link = rmcp::model::Resource::new("file:///big.csv", "big.csv");
        link.mime_type = Some("text/csv".into());
        let blocks = vec![
            ContentBlock::text("hi"),
            ContentBlock::image("aGVsbG8=", "image/png"),
            ContentBlock::audio("UklGRg==", "audio/wav"),
            ContentBlock::embedded_text("file:///a.txt", "A"),
            ContentBlock::resource(ResourceContents::BlobResourceContents {
                uri: "file:///b.bin".into(),
                mime_type: None,
                blob: "AQID".into(),
                meta: None,
            }),
            ContentBlock::resource_link(link),
        ];
        let parts: Vec<ContentPart> = blocks.iter().map(content_part).collect();
        assert_eq!(parts[1], ContentPart::image("aGVsbG8=", "image/png"));
        assert_eq!(
            parts[3],
            ContentPart::resource_text("file:///a.txt", Some("text/plain".into()), "A")
        );
        assert!(
            matches!(&parts[5], ContentPart::ResourceLink { mime_type: Some(m), .. } if m == "text/csv")
        );
        let back: Vec<ContentBlock> = parts.iter().map(content_block).collect();
        assert_eq!(back, blocks);
    }

    #[test]
    fn media_over_the_limit_is_described() {
        let parts = bound_parts(
            vec![
                ContentPart::text("x"),
                ContentPart::image("A".repeat(400), "image/png"),
                ContentPart::image("AAAA", "image/png"),
            ],
            100,
        );
        assert_eq!(
            parts[1].as_text(),
            Some("[image image/png, 300 B] (left out: larger than the 100-byte result limit)")
        );
        assert_eq!(parts[2], ContentPart::image("AAAA", "image/png"));
    }

    #[test]
    fn joins_text_and_describes_the_rest() {
        let result = CallToolResult::success(vec![
            ContentBlock::Text(TextContent::new("one")),
            ContentBlock::Image(ImageContent::new("aGVsbG8=", "image/png")),
            ContentBlock::Text(TextContent::new("two")),
        ]);
        assert_eq!(result_text(&result), "one\n[image image/png, 5 B]\ntwo");
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
