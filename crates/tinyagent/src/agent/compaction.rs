//! Context that fits: [`ContextPolicy`], applied to the history before every model call.
//!
//! First the outputs of older tool calls are cut to a short head (the call and the head stay,
//! so the model still sees what was asked and roughly what came back); if the history is
//! still over its budget, the oldest whole turns are summarised by a model and replaced by the
//! summary. A tool call is never separated from its result, and neither the instruction nor the
//! current turn is ever summarised. The summary is kept in the session's state (under
//! [`COMPACTION_KEY`]), so the next turn starts from it, while the session's messages keep the
//! whole conversation.

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::message::{Message, Part, Role};
use crate::model::{Model, ModelError, ModelRequest, ToolChoice};

/// The session state key holding the summary of the turns compaction replaced:
/// `{"upto": N, "summary": "..."}`, where the summary stands for the session's first `N`
/// messages.
pub const COMPACTION_KEY: &str = "tinyagent.compaction";

/// Default of [`ContextPolicy::keep_tool_outputs`].
pub const DEFAULT_KEEP_TOOL_OUTPUTS: usize = 4;
/// Default of [`ContextPolicy::trimmed_output_chars`].
pub const DEFAULT_TRIMMED_OUTPUT_CHARS: usize = 200;

/// What the summariser is told.
const SUMMARY_INSTRUCTION: &str = "Summarise the conversation below for whoever continues it. \
Keep every fact, number, name, decision and open question it needs; keep what tools returned \
that is still relevant; leave out greetings and repetition. Write plain prose, at most a few \
paragraphs, in the conversation's language.";

/// How the text of a summary starts in the history.
const SUMMARY_HEADING: &str = "[Summary of the earlier conversation]";

/// How an agent keeps the history it sends within a token budget: older tool outputs cut to
/// a short head first, then the oldest whole turns summarised by a model, never separating a
/// tool call from its result and never touching the instruction or the current turn. The
/// summary is kept in the session's state under [`COMPACTION_KEY`]; the session's messages
/// keep the whole conversation.
///
/// ```
/// use std::sync::Arc;
/// use tinyagent::agent::ContextPolicy;
/// use tinyagent::testing::ScriptedModel;
/// use tinyagent::LlmAgent;
///
/// let cheap = Arc::new(ScriptedModel::default()); // say, a small, cheap model
/// let agent = LlmAgent::builder("assistant")
///     .model(Arc::new(ScriptedModel::default()))
///     .context_policy(ContextPolicy::new(32_000).keep_tool_outputs(2).summarizer(cheap))
///     .build()
///     .unwrap();
/// # let _ = agent;
/// ```
#[derive(Clone)]
pub struct ContextPolicy {
    max_tokens: u64,
    keep_tool_outputs: usize,
    trimmed_output_chars: usize,
    summarize: bool,
    summarizer: Option<Arc<dyn Model>>,
}

impl std::fmt::Debug for ContextPolicy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ContextPolicy")
            .field("max_tokens", &self.max_tokens)
            .field("keep_tool_outputs", &self.keep_tool_outputs)
            .field("trimmed_output_chars", &self.trimmed_output_chars)
            .field("summarize", &self.summarize)
            .field("summarizer", &self.summarizer.as_ref().map(|m| m.name()))
            .finish()
    }
}

impl ContextPolicy {
    /// A budget of `max_tokens` for the history the model is sent (counted by the agent's
    /// model where it can, estimated otherwise: see [`max_tokens`](Self::max_tokens)).
    pub fn new(max_tokens: u64) -> Self {
        Self {
            max_tokens,
            keep_tool_outputs: DEFAULT_KEEP_TOOL_OUTPUTS,
            trimmed_output_chars: DEFAULT_TRIMMED_OUTPUT_CHARS,
            summarize: true,
            summarizer: None,
        }
    }

    /// How many of the latest tool results are never trimmed (default 4).
    #[must_use]
    pub fn keep_tool_outputs(mut self, n: usize) -> Self {
        self.keep_tool_outputs = n;
        self
    }

    /// How many characters of an older tool output are kept when it is trimmed (default 200).
    #[must_use]
    pub fn trimmed_output_chars(mut self, n: usize) -> Self {
        self.trimmed_output_chars = n;
        self
    }

    /// Whether old turns are summarised when trimming is not enough (default `true`).
    #[must_use]
    pub fn summarize(mut self, summarize: bool) -> Self {
        self.summarize = summarize;
        self
    }

    /// The model that writes summaries (default: the agent's own).
    #[must_use]
    pub fn summarizer(mut self, model: Arc<dyn Model>) -> Self {
        self.summarizer = Some(model);
        self
    }

    /// The history's budget, in tokens: counted by the agent's model's tokenizer where it
    /// has one ([`Model::count_tokens`]; the embedded model does), estimated otherwise.
    pub fn max_tokens(&self) -> u64 {
        self.max_tokens
    }

    pub(crate) fn summarizer_model(&self) -> Option<&Arc<dyn Model>> {
        self.summarizer.as_ref()
    }
}

/// The summary stored in the session's state.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Stored {
    /// How many of the session's messages the summary stands for.
    pub(crate) upto: usize,
    /// The id of the session's message at `upto`, the first one the summary does not cover:
    /// a history that no longer has it there (cleared, replaced) is not this summary's.
    #[serde(default)]
    pub(crate) next_id: String,
    pub(crate) summary: String,
}

impl Stored {
    pub(crate) fn from_state(value: Option<Value>) -> Option<Self> {
        value.and_then(|v| serde_json::from_value(v).ok())
    }
}

/// How tokens are counted: by the model's own tokenizer where it has one
/// ([`Model::count_tokens`]), else estimated.
#[derive(Clone, Copy)]
pub(crate) struct Tokens<'a>(pub(crate) Option<&'a dyn Model>);

impl Tokens<'_> {
    /// Estimates only.
    #[cfg(test)]
    pub(crate) const ESTIMATE: Tokens<'static> = Tokens(None);

    /// The tokens `text` costs.
    fn text(self, text: &str) -> u64 {
        self.0
            .and_then(|model| model.count_tokens(text))
            .unwrap_or_else(|| text_tokens(text))
    }

    /// The tokens a message costs (with a few for its framing).
    pub(crate) fn message(self, message: &Message) -> u64 {
        let parts: u64 = message
            .parts
            .iter()
            .map(|part| match part {
                Part::Text { text } | Part::Reasoning { text, .. } => self.text(text),
                Part::ToolCall(call) => self.text(&call.name) + self.text(&call.arguments) + 4,
                Part::ToolResult(result) => {
                    self.text(&result.content) + 4 + 256 * result.parts.len() as u64
                }
                // A kind of part this version does not know: its JSON's length.
                other => serde_json::to_string(other).map_or(0, |json| self.text(&json)),
            })
            .sum();
        parts + 4
    }

    /// The tokens of a history.
    pub(crate) fn history(self, messages: &[Message]) -> u64 {
        messages.iter().map(|m| self.message(m)).sum()
    }
}

/// The tokens a text costs, estimated: a token per four ASCII bytes, one per other character
/// (CJK text runs about a token a character).
fn text_tokens(text: &str) -> u64 {
    let (ascii, other) = text.chars().fold((0u64, 0u64), |(a, o), c| {
        if c.is_ascii() { (a + 1, o) } else { (a, o + 1) }
    });
    ascii.div_ceil(4) + other
}

/// The history as the next turn starts it: the messages the stored summary does not cover,
/// the session index of the first of them (`0` without a summary), and the summary. A summary
/// whose history is gone (the session's messages were cleared or replaced) is ignored.
pub(crate) fn restore(
    messages: Vec<Message>,
    stored: Option<Stored>,
) -> (Vec<Message>, usize, Option<String>) {
    match stored {
        Some(s)
            if s.upto > 0
                && s.upto < messages.len()
                && (s.next_id.is_empty() || messages[s.upto].id == s.next_id) =>
        {
            let kept: Vec<Message> = messages.into_iter().skip(s.upto).collect();
            (kept, s.upto, Some(s.summary))
        }
        _ => (messages, 0, None),
    }
}

/// Puts `summary` at the start of `messages`: into the first message when it is the user's
/// (so roles still alternate, as some APIs require), else as a user message of its own.
fn with_summary(messages: &mut Vec<Message>, summary: &str) {
    let text = format!("{SUMMARY_HEADING}\n{summary}");
    match messages.first_mut() {
        Some(first) if first.role == Role::User => first.parts.insert(0, Part::text(text)),
        _ => messages.insert(0, Message::user(text)),
    }
}

/// What one compaction did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Outcome {
    pub(crate) before: u64,
    pub(crate) after: u64,
    pub(crate) trimmed: usize,
    pub(crate) summarized: usize,
}

/// Cuts the outputs of all but the latest `keep` tool results to `chars` characters. Returns
/// how many were cut.
fn trim_tool_outputs(messages: &mut [Message], keep: usize, chars: usize) -> usize {
    let total: usize = messages.iter().map(|m| m.tool_results().count()).sum();
    let mut to_trim = total.saturating_sub(keep);
    let mut trimmed = 0;
    for message in messages.iter_mut() {
        for part in &mut message.parts {
            if to_trim == 0 {
                return trimmed;
            }
            if let Part::ToolResult(result) = part {
                to_trim -= 1;
                let length = result.content.chars().count();
                if length > chars || !result.parts.is_empty() {
                    let head: String = result.content.chars().take(chars).collect();
                    let cut = length.saturating_sub(chars);
                    result.content = format!(
                        "{head}… [trimmed to save context: {cut} more characters{}]",
                        if result.parts.is_empty() {
                            String::new()
                        } else {
                            format!(" and {} content parts", result.parts.len())
                        }
                    );
                    result.parts.clear();
                    result.structured = None;
                    trimmed += 1;
                }
            }
        }
    }
    trimmed
}

/// The history as text for the summariser.
fn transcript(messages: &[Message]) -> String {
    let mut out = String::new();
    for message in messages {
        for part in &message.parts {
            let line = match part {
                Part::Text { text } => format!("{}: {text}", role_name(message.role)),
                Part::ToolCall(call) => {
                    format!("assistant called {}({})", call.name, call.arguments)
                }
                Part::ToolResult(result) => format!(
                    "{} {}: {}",
                    result.name,
                    if result.is_error {
                        "failed"
                    } else {
                        "returned"
                    },
                    result.content
                ),
                // Reasoning, and kinds of parts this version does not know, are left out.
                _ => continue,
            };
            out.push_str(&line);
            out.push('\n');
        }
    }
    out
}

fn role_name(role: Role) -> &'static str {
    match role {
        Role::User => "user",
        Role::Assistant => "assistant",
        _ => "tool",
    }
}

/// Where the turns up to the current one may be cut: indices of user messages that start a
/// turn (a message with text from the user, not tool results), in `1..=current`.
fn turn_starts(messages: &[Message], current: usize) -> Vec<usize> {
    (1..=current.min(messages.len().saturating_sub(1)))
        .filter(|&i| {
            messages[i].role == Role::User
                && messages[i]
                    .parts
                    .iter()
                    .any(|p| matches!(p, Part::Text { .. }))
        })
        .collect()
}

/// Applies the policy to `messages` (`current` is the index of the current turn's first
/// message). Trimming needs no model; summarising calls `summarize` with the request to send.
/// Returns what was done, and the new summary with the number of `messages` it replaced.
pub(crate) async fn compact<F, Fut>(
    policy: &ContextPolicy,
    tokens: Tokens<'_>,
    messages: &mut Vec<Message>,
    current: usize,
    summarize: F,
) -> (Option<Outcome>, Option<(String, usize)>)
where
    F: FnOnce(ModelRequest) -> Fut,
    Fut: std::future::Future<Output = Result<String, ModelError>>,
{
    let before = tokens.history(messages);
    if before <= policy.max_tokens {
        return (None, None);
    }
    let trimmed = trim_tool_outputs(
        messages,
        policy.keep_tool_outputs,
        policy.trimmed_output_chars,
    );
    let mut after = tokens.history(messages);
    let mut summarized = 0;
    let mut summary = None;
    if after > policy.max_tokens && policy.summarize {
        // Room for the summary: a quarter of the budget.
        let room = policy.max_tokens / 4;
        let starts = turn_starts(messages, current);
        let cut = starts
            .iter()
            .copied()
            .find(|&c| tokens.history(&messages[c..]) + room <= policy.max_tokens)
            .or_else(|| starts.last().copied());
        if let Some(cut) = cut {
            let req = ModelRequest::new(vec![Message::user(transcript(&messages[..cut]))])
                .instruction(SUMMARY_INSTRUCTION)
                .tool_choice(ToolChoice::None)
                .max_tokens(u32::try_from(room.max(64)).unwrap_or(u32::MAX));
            match summarize(req).await {
                Ok(text) if !text.trim().is_empty() => {
                    let text = text.trim().to_owned();
                    messages.drain(..cut);
                    with_summary(messages, &text);
                    summarized = cut;
                    summary = Some((text, cut));
                    after = tokens.history(messages);
                }
                Ok(_) => tracing::warn!("the summariser gave an empty summary; history kept"),
                Err(err) => {
                    tracing::warn!(error = %err, "summarising old turns failed; history kept")
                }
            }
        }
    }
    let outcome = (trimmed > 0 || summarized > 0).then_some(Outcome {
        before,
        after,
        trimmed,
        summarized,
    });
    (outcome, summary)
}

/// The compaction state of one run: where the history the run holds starts in the session.
pub(crate) struct RunCompaction<'a> {
    pub(crate) policy: &'a ContextPolicy,
    /// How the history's tokens are counted (the agent's model's tokenizer, if it has one).
    pub(crate) tokens: Tokens<'a>,
    /// The session index of the run's first history message (after a stored summary).
    pub(crate) base: usize,
    /// The summary of the session's messages before `base`.
    pub(crate) summary: Option<String>,
}

impl RunCompaction<'_> {
    /// The request to send for this step: `req` with the summary first, compacted. When old
    /// turns were summarised, `req` itself loses them too (the summary, stored in the
    /// session's state, stands for them), and `first_new` moves with the current turn. The
    /// messages of `req` are never changed, so the session stores them as they are.
    pub(crate) async fn request<F, Fut>(
        &mut self,
        req: &mut ModelRequest,
        first_new: &mut usize,
        session: &crate::context::Session,
        summarize: F,
    ) -> (ModelRequest, Option<Outcome>)
    where
        F: FnOnce(ModelRequest) -> Fut,
        Fut: std::future::Future<Output = Result<String, ModelError>>,
    {
        let mut sent = req.clone();
        if let Some(summary) = &self.summary {
            with_summary(&mut sent.messages, summary);
        }
        // The summary merged into the first message adds none; on its own, one.
        let offset = sent.messages.len() - req.messages.len();
        let (outcome, summary) = compact(
            self.policy,
            self.tokens,
            &mut sent.messages,
            *first_new + offset,
            summarize,
        )
        .await;
        if let Some((text, cut)) = summary {
            // `sent[..cut]` is the old summary and `req.messages[..cut - offset]`.
            let covered = cut - offset;
            req.messages.drain(..covered);
            *first_new -= covered;
            self.base += covered;
            let stored = Stored {
                upto: self.base,
                next_id: req
                    .messages
                    .first()
                    .map(|m| m.id.clone())
                    .unwrap_or_default(),
                summary: text.clone(),
            };
            self.summary = Some(text);
            session.set(
                COMPACTION_KEY,
                serde_json::to_value(stored).unwrap_or(Value::Null),
            );
        }
        (sent, outcome)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::{ToolCall, ToolResult};

    fn turn(i: usize, output: &str) -> Vec<Message> {
        vec![
            Message::user(format!("question {i}")),
            Message::new(
                Role::Assistant,
                vec![ToolCall::new(format!("c{i}"), "fetch", "{}").into()],
            ),
            Message::from_tool_results([ToolResult::ok(format!("c{i}"), "fetch", output)]),
            Message::assistant(format!("answer {i}")),
        ]
    }

    #[tokio::test]
    async fn old_outputs_are_trimmed_first_and_calls_keep_their_results() {
        let big = "x".repeat(4_000);
        let mut messages: Vec<Message> = (0..5).flat_map(|i| turn(i, &big)).collect();
        let current = messages.len();
        messages.push(Message::user("question 5"));
        let policy = ContextPolicy::new(3_000)
            .keep_tool_outputs(2)
            .summarize(false);
        let (outcome, summary) = compact(
            &policy,
            Tokens::ESTIMATE,
            &mut messages,
            current,
            |_| async { unreachable!("no summary asked for") },
        )
        .await;
        let outcome = outcome.unwrap();
        assert_eq!(outcome.trimmed, 3);
        assert!(outcome.after < outcome.before);
        assert!(summary.is_none());
        let contents: Vec<usize> = messages
            .iter()
            .flat_map(|m| m.tool_results())
            .map(|r| r.content.len())
            .collect();
        assert!(contents[..3].iter().all(|&n| n < 300), "{contents:?}");
        assert_eq!(contents[3..], [4_000, 4_000]);
        // Every call still has its result.
        assert_eq!(messages.iter().flat_map(|m| m.tool_calls()).count(), 5);
    }

    #[tokio::test]
    async fn whole_old_turns_are_summarised_and_the_current_turn_is_kept() {
        let mut messages: Vec<Message> = (0..6).flat_map(|i| turn(i, &"y".repeat(800))).collect();
        let current = messages.len();
        messages.push(Message::user("question 6"));
        let policy = ContextPolicy::new(600).keep_tool_outputs(1);
        let (outcome, summary) = compact(
            &policy,
            Tokens::ESTIMATE,
            &mut messages,
            current,
            |req| async move {
                assert!(req.messages[0].text().contains("question 0"));
                assert_eq!(req.tool_choice, Some(ToolChoice::None));
                Ok("The user asked six questions; each was answered.".to_owned())
            },
        )
        .await;
        let outcome = outcome.unwrap();
        let (text, cut) = summary.unwrap();
        assert_eq!(outcome.summarized, cut);
        assert!(outcome.after <= 600, "{outcome:?}");
        assert!(text.starts_with("The user asked"));
        // The history starts at a turn, with the summary in its first (user) message.
        assert_eq!(messages[0].role, Role::User);
        assert!(
            messages[0].text().starts_with(SUMMARY_HEADING),
            "{}",
            messages[0].text()
        );
        assert_eq!(messages.last().unwrap().text(), "question 6");
        let calls: Vec<&str> = messages
            .iter()
            .flat_map(|m| m.tool_calls())
            .map(|c| c.id.as_str())
            .collect();
        let results: Vec<&str> = messages
            .iter()
            .flat_map(|m| m.tool_results())
            .map(|r| r.call_id.as_str())
            .collect();
        assert_eq!(
            calls, results,
            "no call without its result, no result without its call"
        );
    }

    #[test]
    fn a_stored_summary_stands_for_the_messages_it_covers() {
        let messages: Vec<Message> = (0..3).flat_map(|i| turn(i, "z")).collect();
        let stored = Stored {
            upto: 8,
            next_id: messages[8].id.clone(),
            summary: "two turns".to_owned(),
        };
        let (restored, base, summary) = restore(messages.clone(), Some(stored.clone()));
        assert_eq!(base, 8);
        assert_eq!(restored, messages[8..]);
        assert_eq!(summary.as_deref(), Some("two turns"));
        let (unchanged, base, summary) = restore(messages.clone(), None);
        assert_eq!((unchanged, base, summary), (messages.clone(), 0, None));
        // A history that is not the one summarised (cleared and written anew) keeps its
        // messages.
        let other: Vec<Message> = (0..3).flat_map(|i| turn(i, "w")).collect();
        let (kept, base, summary) = restore(other.clone(), Some(stored));
        assert_eq!((kept, base, summary), (other, 0, None));
    }

    #[test]
    fn cjk_text_counts_a_token_a_character() {
        assert_eq!(text_tokens("abcd"), 1);
        assert_eq!(text_tokens("北京天气"), 4);
    }
}
