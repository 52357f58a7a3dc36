//! Rich tool results in the agent loop: the content a call left in its
//! [`ContentSlot`](crate::ContentSlot), bounded by the agent's tool output budget.

use crate::content::{ContentPart, RichContent, content_text};
use crate::message::ToolResult;
use crate::tools::OutputBudgetLayer;

/// Adds a call's rich content to its (successful) result, bounded by `max` characters: text
/// parts keep their head and tail, media and resources that do not fit in what is left of
/// the budget are replaced by their description and a note, and structured content larger
/// than the budget is left out (the text still holds its JSON, bounded). The result's text
/// becomes the text rendering of the bounded parts.
pub(super) fn attach(result: ToolResult, rich: RichContent, max: Option<usize>) -> ToolResult {
    let RichContent { parts, structured } = rich;
    let mut left = max.unwrap_or(usize::MAX);
    let mut bounded = Vec::with_capacity(parts.len());
    for part in parts {
        let weight = part.weight();
        match part {
            ContentPart::Text { text } => {
                let text = match max {
                    Some(max) if text.len() > max => OutputBudgetLayer::new(max).apply(&text),
                    _ => text,
                };
                left = left.saturating_sub(text.len());
                bounded.push(ContentPart::text(text));
            }
            part if weight > left => bounded.push(ContentPart::text(format!(
                "{} (left out: larger than the {}-character tool output budget)",
                part.describe().lines().next().unwrap_or_default(),
                max.unwrap_or_default()
            ))),
            part => {
                left -= weight;
                bounded.push(part);
            }
        }
    }
    let structured = structured.filter(|value| match max {
        Some(max) => value.to_string().len() <= max,
        None => true,
    });
    let mut result = result;
    if !bounded.is_empty() {
        let text = content_text(&bounded);
        result.content = match max {
            Some(max) if text.len() > max => OutputBudgetLayer::new(max).apply(&text),
            _ => text,
        };
        result = result.with_parts(bounded);
    }
    match structured {
        Some(value) => result.with_structured(value),
        None => result,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn media_over_the_budget_is_described_not_sent() {
        let big = ContentPart::image("A".repeat(4_000), "image/png");
        let small = ContentPart::image("AAAA", "image/jpeg");
        let rich = RichContent::new(
            vec![ContentPart::text("charts:"), big, small.clone()],
            Some(serde_json::json!({"n": 2})),
        );
        let result = attach(ToolResult::ok("c1", "chart", "ignored"), rich, Some(1_000));
        assert_eq!(result.parts.len(), 3);
        assert_eq!(result.parts[2], small);
        let note = result.parts[1].as_text().unwrap();
        assert!(
            note.starts_with("[image image/png, 3.0 kB] (left out"),
            "{note}"
        );
        assert_eq!(
            result.content,
            format!("charts:\n{note}\n[image image/jpeg, 3 B]")
        );
        assert_eq!(result.structured, Some(serde_json::json!({"n": 2})));

        let unbounded = attach(
            ToolResult::ok("c1", "chart", "x"),
            RichContent::new(
                vec![ContentPart::image("A".repeat(4_000), "image/png")],
                None,
            ),
            None,
        );
        assert!(unbounded.has_media());
    }

    #[test]
    fn oversized_structured_content_is_left_out() {
        let rich = RichContent::new(vec![], Some(serde_json::json!({"s": "x".repeat(100)})));
        let result = attach(ToolResult::ok("c", "t", "{…}"), rich, Some(50));
        assert_eq!(result.structured, None);
        assert_eq!(result.content, "{…}");
        assert!(result.parts.is_empty());
    }
}
