//! [`with_output_budget`]: long results cut to a budget, head and tail kept.

use std::sync::Arc;

use super::{ToolLayer, ToolMiddleware};
use crate::context::ToolContext;
use crate::error::ToolError;
use crate::tools::{Handler, Tool};
use crate::util::BoxFuture;

/// Cuts results longer than a budget of characters, keeping the head and the tail, with a
/// note in the middle saying how much was dropped.
///
/// A model's context is precious, and a tool that dumps a whole log or web page floods it. The
/// beginning of a result usually says what it is and the end how it finished, so both are
/// kept, in halves. The budget counts Unicode characters (not bytes), cuts only on character
/// boundaries, and includes the note, so a cut result is never longer than the budget (for
/// budgets too small to hold the note, the head alone is kept, followed by the note). Errors
/// pass through unchanged.
///
/// ```
/// use tinyagent::{handler_fn, ToolContext, ToolError, tools};
///
/// let big = tools::new_tool("dump", "dumps", serde_json::json!({"type": "object"}),
///     |_ctx: ToolContext, _input: String| async move { Ok::<_, ToolError>("x".repeat(10_000)) });
/// let small = tools::wrap_tool(big, [tools::with_output_budget(200)]);
/// # tokio_test::block_on(async {
/// let out = small.handle(&ToolContext::default(), "{}").await?;
/// assert!(out.chars().count() <= 200);
/// assert!(out.contains("characters omitted"), "{out}");
/// # Ok::<(), ToolError>(())
/// # }).unwrap();
/// ```
#[derive(Debug, Clone, Copy)]
pub struct OutputBudgetLayer {
    max_chars: usize,
}

impl OutputBudgetLayer {
    /// Results are cut to at most `max_chars` characters.
    pub fn new(max_chars: usize) -> Self {
        Self { max_chars }
    }

    /// Applies the budget to one text; what the middleware does to each result.
    ///
    /// ```
    /// use tinyagent::tools::OutputBudgetLayer;
    ///
    /// let text: String = ('a'..='z').cycle().take(1000).collect();
    /// let cut = OutputBudgetLayer::new(120).apply(&text);
    /// assert!(cut.starts_with("abcdef") && cut.ends_with("jkl"));
    /// assert!(cut.chars().count() <= 120 && cut.contains("characters omitted"), "{cut}");
    /// assert_eq!(OutputBudgetLayer::new(120).apply("short"), "short");
    /// ```
    pub fn apply(&self, text: &str) -> String {
        truncate_middle(text, self.max_chars)
    }
}

/// Cuts results longer than `max_chars` characters, head and tail kept; see [`OutputBudgetLayer`].
pub fn with_output_budget(max_chars: usize) -> ToolMiddleware {
    OutputBudgetLayer::new(max_chars).into()
}

impl ToolLayer for OutputBudgetLayer {
    fn layer(&self, _tool: &dyn Tool, next: Arc<dyn Handler>) -> Arc<dyn Handler> {
        Arc::new(BudgetHandler {
            next,
            max_chars: self.max_chars,
        })
    }
}

struct BudgetHandler {
    next: Arc<dyn Handler>,
    max_chars: usize,
}

impl Handler for BudgetHandler {
    fn handle<'a>(
        &'a self,
        ctx: &'a ToolContext,
        input: &'a str,
    ) -> BoxFuture<'a, Result<String, ToolError>> {
        Box::pin(async move {
            let output = self.next.handle(ctx, input).await?;
            if output.len() <= self.max_chars {
                return Ok(output);
            }
            Ok(truncate_middle(&output, self.max_chars))
        })
    }
}

fn note(dropped: usize, total: usize) -> String {
    format!("\n[… {dropped} of {total} characters omitted …]\n")
}

/// The byte offset of character `n` (or the end).
fn byte_at(text: &str, n: usize) -> usize {
    text.char_indices().nth(n).map_or(text.len(), |(i, _)| i)
}

fn truncate_middle(text: &str, max: usize) -> String {
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
    fn fits_the_budget_and_keeps_both_ends() {
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
    fn tiny_budgets_keep_the_head_and_the_note() {
        let cut = truncate_middle("abcdefghij", 3);
        assert!(cut.starts_with("abc"));
        assert!(cut.contains("7 of 10 characters omitted"), "{cut}");
        assert!(truncate_middle("abcdefghij", 0).starts_with("\n[… 10 of 10"));
    }
}
