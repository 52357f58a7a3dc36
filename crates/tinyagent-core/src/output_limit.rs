//! Long outputs cut to a limit of characters: [`ToolOutput::limited`], which the
//! output limit layer (`OutputLimitLayer`) and agents' `max_tool_output` both apply.

use crate::content::{ContentPart, content_text};
use crate::output::ToolOutput;

impl ToolOutput {
    /// This output within `max_chars` characters: a text longer than that keeps its head and
    /// its tail with a note in the middle saying how much was left out; a medium part (image,
    /// audio, resource) that does not fit what is left is replaced by its description; a
    /// structured content whose JSON is longer than the limit is left out (its text stays).
    ///
    /// A model's context is precious, and a tool that dumps a whole log or web page floods it.
    /// The beginning of a result usually says what it is and the end how it finished, so both
    /// are kept, in halves. The limit counts Unicode characters (not bytes), cuts only on
    /// character boundaries, and includes the note, so a cut text is never longer than the
    /// limit (for limits too small to hold the note, the head alone is kept, followed by the
    /// note).
    ///
    /// ```
    /// use tinyagent::tools::ToolOutput;
    ///
    /// let text: String = ('a'..='z').cycle().take(1000).collect();
    /// let cut = ToolOutput::text(text).limited(120);
    /// assert!(cut.as_text().starts_with("abcdef") && cut.as_text().ends_with("jkl"));
    /// assert!(cut.as_text().chars().count() <= 120);
    /// assert!(cut.as_text().contains("characters omitted"));
    /// assert_eq!(ToolOutput::text("short").limited(120).as_text(), "short");
    /// ```
    #[must_use]
    pub fn limited(self, max_chars: usize) -> ToolOutput {
        let is_error = self.is_error();
        let (text, parts, structured) = self.into_parts();
        let structured = structured.filter(|value| value.to_string().len() <= max_chars);
        let mut out = if parts.is_empty() {
            ToolOutput::text(truncate_middle(&text, max_chars))
        } else {
            let mut left = max_chars;
            let mut bounded = Vec::with_capacity(parts.len());
            for part in parts {
                let weight = part.weight();
                match part {
                    ContentPart::Text { text } => {
                        let text = truncate_middle(&text, max_chars);
                        left = left.saturating_sub(text.len());
                        bounded.push(ContentPart::text(text));
                    }
                    part if weight > left => bounded.push(ContentPart::text(format!(
                        "{} (left out: larger than the {max_chars}-character tool output limit)",
                        part.describe().lines().next().unwrap_or_default(),
                    ))),
                    part => {
                        left -= weight;
                        bounded.push(part);
                    }
                }
            }
            let text = truncate_middle(&content_text(&bounded), max_chars);
            ToolOutput::from_rendered(text, bounded)
        };
        if let Some(value) = structured {
            out = out.with_structured(value);
        }
        if is_error { out.into_error() } else { out }
    }
}

fn note(dropped: usize, total: usize) -> String {
    format!("\n[… {dropped} of {total} characters omitted …]\n")
}

/// The byte offset of character `n` (or the end).
fn byte_at(text: &str, n: usize) -> usize {
    text.char_indices().nth(n).map_or(text.len(), |(i, _)| i)
}

/// `text` within `max` characters, head and tail kept around a note of what was left out.
pub fn truncate_middle(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_owned();
    }
    let total = text.chars().count();
    if total <= max {
        return text.to_owned();
    }
    // The note's length with the largest possible count bounds its final length.
    let note_len = note(total, total).chars().count();
    let keep = max.saturating_sub(note_len);
    if keep < 2 {
        let head_end = byte_at(text, max);
        return format!("{}{}", &text[..head_end], note(total - max, total));
    }
    let head = keep.div_ceil(2);
    let tail = keep - head;
    let head_end = byte_at(text, head);
    let tail_start = byte_at(text, total - tail);
    format!(
        "{}{}{}",
        &text[..head_end],
        note(total - keep, total),
        &text[tail_start..]
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fits_the_limit_and_keeps_both_ends() {
        let text: String = "上海多云".repeat(500);
        for max in [60, 61, 100, 1999] {
            let cut = truncate_middle(&text, max);
            assert!(cut.chars().count() <= max, "{max}: {}", cut.chars().count());
            assert!(cut.starts_with("上海"));
            assert!(cut.ends_with("多云"));
        }
        assert_eq!(truncate_middle(&text, 2000), text);
    }

    #[test]
    fn tiny_limits_keep_the_head_and_the_note() {
        let cut = truncate_middle("abcdefghij", 3);
        assert!(cut.starts_with("abc"));
        assert!(cut.contains("7 of 10 characters omitted"), "{cut}");
        assert!(truncate_middle("abcdefghij", 0).starts_with("\n[… 10 of 10"));
    }

    #[test]
    fn media_over_the_limit_is_described_not_sent() {
        let big = ContentPart::image("A".repeat(4_000), "image/png");
        let small = ContentPart::image("AAAA", "image/jpeg");
        let output = ToolOutput::parts(vec![ContentPart::text("charts:"), big, small.clone()])
            .with_structured(serde_json::json!({"n": 2}));
        let (text, parts, structured) = output.limited(1_000).into_parts();
        assert_eq!(parts.len(), 3);
        assert_eq!(parts[2], small);
        let note = parts[1].as_text().unwrap();
        assert!(
            note.starts_with("[image image/png, 3.0 kB] (left out"),
            "{note}"
        );
        assert_eq!(text, format!("charts:\n{note}\n[image image/jpeg, 3 B]"));
        assert_eq!(structured, Some(serde_json::json!({"n": 2})));
    }

    #[test]
    fn oversized_structured_content_is_left_out() {
        let output =
            ToolOutput::text("{…}").with_structured(serde_json::json!({"s": "x".repeat(100)}));
        let (text, parts, structured) = output.limited(50).into_parts();
        assert_eq!(structured, None);
        assert_eq!(text, "{…}");
        assert!(parts.is_empty());
    }

    #[test]
    fn an_error_output_stays_an_error() {
        let cut = ToolOutput::error("x".repeat(500)).limited(100);
        assert!(cut.is_error());
        assert!(cut.as_text().chars().count() <= 100);
    }
}
