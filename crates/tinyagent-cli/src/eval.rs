//! `tinyagent eval`: how well a model picks tools, on questions of one's own.
//!
//! A JSONL file holds one question per line, with the tool it needs (or `null`) and the
//! arguments that matter; each question is asked once with the tools the options give, one
//! model step, and the call (or answer) is compared. A question can follow a conversation
//! (`history`), so follow-ups are measured too. The report gives the right tool, fully right
//! arguments, no-tool precision and recall, a confusion table per tool, and the median time
//! and tokens per question, per part of the file (such as `tuning` and `reporting`) and for
//! all of it.
//!
//! ```json
//! {"question": "北京天气怎么样？", "tool": "get_weather", "arguments": {"city": ["北京", "Beijing"], "unit": [null, "celsius"]}}
//! {"question": "你好！", "tool": null, "part": "reporting"}
//! {"history": [{"user": "7 乘以 8 等于多少？"}, {"call": {"name": "calculator", "arguments": {"operation": "multiply", "a": 7, "b": 8}}, "result": "{\"result\":56.0}"}, {"assistant": "7 乘以 8 等于 56。"}], "question": "再乘以 2 呢？", "tool": "calculator", "arguments": {"a": 56, "b": 2}}
//! ```
//!
//! An expected argument is a string (equal, case and surrounding space ignored), a number,
//! `true`/`false`, `null` (absent or null), `{"contains": "text"}`, an object (each of its
//! keys expected in turn), or an array of alternatives (any one may match).

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use futures::StreamExt;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tinyagent::tools::{ToolResolver, ToolSearch};
use tinyagent::{
    Invocation, Message, Model, ModelError, ModelRequest, Part, Role, Session, ToolCall,
    ToolResult,
    model::{ModelErrorKind, ModelEvent, ToolDefinition},
};

use crate::error::CliError;

/// The label of "no tool" in the confusion table.
pub const NO_TOOL: &str = "(none)";
/// The label of a failed model call in the confusion table.
pub const ERROR: &str = "(error)";

/// One line of the file.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Case {
    /// A name for the question in the report (default: its line number).
    #[serde(default)]
    pub id: Option<String>,
    /// Which part of the set it belongs to (such as `tuning` or `reporting`), if any.
    #[serde(default)]
    pub part: Option<String>,
    /// The conversation before the question.
    #[serde(default)]
    pub history: Vec<Turn>,
    /// The user's message.
    pub question: String,
    /// The tool it needs, or `null` for none.
    pub tool: Option<String>,
    /// The arguments that matter (see the module's docs).
    #[serde(default)]
    pub arguments: serde_json::Map<String, Value>,
}

/// A message of a question's history.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged, deny_unknown_fields)]
pub enum Turn {
    /// `{"user": "…"}`
    User {
        /// The user's text.
        user: String,
    },
    /// `{"assistant": "…"}`
    Assistant {
        /// The assistant's answer.
        assistant: String,
    },
    /// `{"call": {"name": …, "arguments": {…}}, "result": "…"}`: a tool call and its result.
    Call {
        /// The call.
        call: HistoryCall,
        /// What the tool answered.
        result: String,
    },
}

/// A tool call in a history.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HistoryCall {
    /// The tool.
    pub name: String,
    /// Its arguments.
    #[serde(default)]
    pub arguments: Value,
}

/// Reads the questions of a JSONL file; empty lines are skipped, a bad line is an error that
/// names it.
pub fn read_cases(path: &Path) -> Result<Vec<Case>, CliError> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        CliError::usage(format!("cannot read {}: {e}", path.display()))
            .with_hint("tinyagent eval QUESTIONS.jsonl (one JSON object per line)")
    })?;
    parse_cases(&text).map_err(|e| CliError::usage(format!("{}: {e}", path.display())))
}

/// The questions of a JSONL text.
pub fn parse_cases(text: &str) -> Result<Vec<Case>, String> {
    let mut cases = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        let mut case: Case = serde_json::from_str(line).map_err(|e| {
            format!(
                "line {}: {e} (a question is {{\"question\": …, \"tool\": NAME or null, \
                 \"arguments\": {{…}}}})",
                n + 1
            )
        })?;
        if case.question.trim().is_empty() {
            return Err(format!("line {}: the question is empty", n + 1));
        }
        case.id.get_or_insert_with(|| format!("line {}", n + 1));
        cases.push(case);
    }
    if cases.is_empty() {
        return Err("no questions in the file".to_owned());
    }
    Ok(cases)
}

/// The messages a case sends: its history, then its question.
pub fn messages(case: &Case) -> Vec<Message> {
    let mut out = Vec::with_capacity(case.history.len() * 2 + 1);
    for (n, turn) in case.history.iter().enumerate() {
        match turn {
            Turn::User { user } => out.push(Message::user(user)),
            Turn::Assistant { assistant } => out.push(Message::assistant(assistant)),
            Turn::Call { call, result } => {
                let id = format!("call_{n}");
                let arguments = match &call.arguments {
                    Value::Null => "{}".to_owned(),
                    other => other.to_string(),
                };
                out.push(Message::new(
                    Role::Assistant,
                    vec![Part::ToolCall(ToolCall::new(&id, &call.name, arguments))],
                ));
                out.push(Message::from_tool_results([ToolResult::ok(
                    id, &call.name, result,
                )]));
            }
        }
    }
    out.push(Message::user(&case.question));
    out
}

/// A call of `call_tool` (tool search) as the call of the tool it names, with that tool's
/// arguments; any other call as it is.
fn unwrap_call_tool(name: &str, arguments: Value) -> (String, Value) {
    if name == tinyagent::tools::CALL_TOOL {
        if let Some(called) = arguments.get("name").and_then(Value::as_str) {
            let inner = arguments.get("arguments").cloned().unwrap_or(Value::Null);
            return (called.to_owned(), inner);
        }
    }
    (name.to_owned(), arguments)
}

/// The tools a search offers for a case: those relevant to its question and the user's
/// earlier messages, and the search's own two.
pub async fn searched(search: &ToolSearch, case: &Case) -> Vec<ToolDefinition> {
    let mut history = messages(case);
    let question = history
        .pop()
        .unwrap_or_else(|| Message::user(&case.question));
    let session = Session::new();
    session.append(history);
    let inv = Invocation::new(session, question);
    match search.resolve_tools(&inv).await {
        Ok(tools) => tools.iter().map(|t| t.definition()).collect(),
        Err(_) => Vec::new(),
    }
}

/// Whether `got` (the call's argument, if any) is what `want` expects.
pub fn matches(want: &Value, got: Option<&Value>) -> bool {
    match want {
        Value::Array(alternatives) => alternatives.iter().any(|w| matches(w, got)),
        Value::Null => got.is_none_or(Value::is_null),
        Value::String(want) => got
            .and_then(Value::as_str)
            .is_some_and(|g| g.trim().to_lowercase() == want.trim().to_lowercase()),
        Value::Number(want) => got
            .and_then(Value::as_f64)
            .zip(want.as_f64())
            .is_some_and(|(g, w)| (g - w).abs() <= 1e-9 * w.abs().max(1.0)),
        Value::Bool(want) => got.and_then(Value::as_bool) == Some(*want),
        Value::Object(want) => match want.get("contains").and_then(Value::as_str) {
            Some(part) if want.len() == 1 => got
                .and_then(Value::as_str)
                .is_some_and(|g| g.to_lowercase().contains(&part.to_lowercase())),
            _ => got
                .and_then(Value::as_object)
                .is_some_and(|got| want.iter().all(|(key, w)| matches(w, got.get(key)))),
        },
    }
}

/// What the model did with one question.
#[derive(Debug, Clone, Serialize)]
pub struct Outcome {
    /// The case's id.
    pub id: String,
    /// Its part, if any.
    pub part: Option<String>,
    /// The question.
    pub question: String,
    /// The tool it needs (`None`: none).
    pub expected: Option<String>,
    /// The tool called (`None`: an answer without a tool).
    pub called: Option<String>,
    /// The call's arguments as the model wrote them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub arguments: Option<Value>,
    /// The answer, when no tool was called.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub answer: Option<String>,
    /// The model's error, when the call failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The right tool (or rightly none).
    pub right_tool: bool,
    /// The right tool with every expected argument right.
    pub right_arguments: bool,
    /// Seconds the model took.
    pub seconds: f64,
    /// Prompt and output tokens, as the model reported them.
    pub input_tokens: Option<u64>,
    /// Output tokens.
    pub output_tokens: Option<u64>,
}

impl Outcome {
    /// The confusion table's label of what was expected.
    pub fn expected_label(&self) -> &str {
        self.expected.as_deref().unwrap_or(NO_TOOL)
    }

    /// The confusion table's label of what was done.
    pub fn called_label(&self) -> &str {
        if self.error.is_some() {
            ERROR
        } else {
            self.called.as_deref().unwrap_or(NO_TOOL)
        }
    }
}

/// Asks one question: one model step with the tools offered.
pub async fn ask(
    model: &Arc<dyn Model>,
    tools: &[ToolDefinition],
    instruction: &str,
    max_tokens: u32,
    case: &Case,
) -> Outcome {
    let req = ModelRequest::new(messages(case))
        .instruction(instruction)
        .tools(tools.to_vec())
        .max_tokens(max_tokens);
    let started = Instant::now();
    // Streamed, as the agent asks; the last event carries the whole reply.
    let result = async {
        let mut events = model.stream(&req);
        while let Some(event) = events.next().await {
            if let ModelEvent::Done(response) = event? {
                return Ok(response);
            }
        }
        Err(ModelError::new(
            ModelErrorKind::InvalidResponse,
            "the reply ended before it was complete",
        ))
    }
    .await;
    let seconds = started.elapsed().as_secs_f64();
    let mut outcome = Outcome {
        id: case.id.clone().unwrap_or_default(),
        part: case.part.clone(),
        question: case.question.clone(),
        expected: case.tool.clone(),
        called: None,
        arguments: None,
        answer: None,
        error: None,
        right_tool: false,
        right_arguments: false,
        seconds,
        input_tokens: None,
        output_tokens: None,
    };
    match result {
        Ok(response) => {
            outcome.input_tokens = response.usage.input_tokens;
            outcome.output_tokens = response.usage.output_tokens;
            match response.message.tool_calls().next() {
                Some(call) => {
                    let arguments = serde_json::from_str::<Value>(&call.arguments)
                        .unwrap_or_else(|_| Value::String(call.arguments.clone()));
                    let (called, arguments) = unwrap_call_tool(&call.name, arguments);
                    outcome.called = Some(called);
                    outcome.arguments = Some(arguments);
                }
                None => outcome.answer = Some(response.message.text()),
            }
        }
        Err(err) => outcome.error = Some(err.to_string()),
    }
    outcome.right_tool = outcome.error.is_none() && outcome.called == case.tool;
    outcome.right_arguments = outcome.right_tool
        && case.arguments.iter().all(|(key, want)| {
            matches(
                want,
                outcome.arguments.as_ref().and_then(|args| args.get(key)),
            )
        });
    outcome
}

/// The figures of a set of outcomes.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Summary {
    /// The part (`all` for every question).
    pub part: String,
    /// Questions.
    pub questions: usize,
    /// Of them, those that need a tool.
    pub need_a_tool: usize,
    /// Of those, the share (0 to 1) that got the right tool.
    pub right_tool: Option<f64>,
    /// Of those, the share that got the right tool with every expected argument right.
    pub right_arguments: Option<f64>,
    /// Of the questions answered without a tool, the share that needed none.
    pub no_tool_precision: Option<f64>,
    /// Of the questions that need no tool, the share answered without one.
    pub no_tool_recall: Option<f64>,
    /// Failed model calls.
    pub errors: usize,
    /// The median seconds per question.
    pub median_seconds: f64,
    /// The median prompt tokens per question (when the model reports them).
    pub median_input_tokens: Option<f64>,
    /// The median output tokens per question.
    pub median_output_tokens: Option<f64>,
}

fn share(part: usize, whole: usize) -> Option<f64> {
    (whole > 0).then(|| part as f64 / whole as f64)
}

fn median(mut values: Vec<f64>) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    values.sort_by(f64::total_cmp);
    let mid = values.len() / 2;
    Some(if values.len().is_multiple_of(2) {
        (values[mid - 1] + values[mid]) / 2.0
    } else {
        values[mid]
    })
}

/// The figures of `outcomes`, under the name `part`.
pub fn summarize(part: &str, outcomes: &[&Outcome]) -> Summary {
    let tool: Vec<_> = outcomes.iter().filter(|o| o.expected.is_some()).collect();
    let no_tool_needed = outcomes.len() - tool.len();
    let answered_without = outcomes
        .iter()
        .filter(|o| o.error.is_none() && o.called.is_none())
        .count();
    let right_none = outcomes
        .iter()
        .filter(|o| o.expected.is_none() && o.right_tool)
        .count();
    Summary {
        part: part.to_owned(),
        questions: outcomes.len(),
        need_a_tool: tool.len(),
        right_tool: share(tool.iter().filter(|o| o.right_tool).count(), tool.len()),
        right_arguments: share(
            tool.iter().filter(|o| o.right_arguments).count(),
            tool.len(),
        ),
        no_tool_precision: share(right_none, answered_without),
        no_tool_recall: share(right_none, no_tool_needed),
        errors: outcomes.iter().filter(|o| o.error.is_some()).count(),
        median_seconds: median(outcomes.iter().map(|o| o.seconds).collect()).unwrap_or(0.0),
        median_input_tokens: median(
            outcomes
                .iter()
                .filter_map(|o| o.input_tokens.map(|t| t as f64))
                .collect(),
        ),
        median_output_tokens: median(
            outcomes
                .iter()
                .filter_map(|o| o.output_tokens.map(|t| t as f64))
                .collect(),
        ),
    }
}

/// Counts of (expected, called) labels.
pub fn confusion(outcomes: &[Outcome]) -> BTreeMap<String, BTreeMap<String, usize>> {
    let mut table: BTreeMap<String, BTreeMap<String, usize>> = BTreeMap::new();
    for outcome in outcomes {
        *table
            .entry(outcome.expected_label().to_owned())
            .or_default()
            .entry(outcome.called_label().to_owned())
            .or_default() += 1;
    }
    table
}

/// The summaries: each named part in order of first appearance, then `all`.
pub fn summaries(outcomes: &[Outcome]) -> Vec<Summary> {
    let mut parts: Vec<&str> = Vec::new();
    for part in outcomes.iter().filter_map(|o| o.part.as_deref()) {
        if !parts.contains(&part) {
            parts.push(part);
        }
    }
    let mut out: Vec<Summary> = parts
        .iter()
        .map(|part| {
            let of_part: Vec<&Outcome> = outcomes
                .iter()
                .filter(|o| o.part.as_deref() == Some(part))
                .collect();
            summarize(part, &of_part)
        })
        .collect();
    out.push(summarize("all", &outcomes.iter().collect::<Vec<_>>()));
    out
}

/// The whole report, as `--report` writes it.
pub fn report(model: &str, tools: &[ToolDefinition], outcomes: &[Outcome]) -> Value {
    json!({
        "model": model,
        "tools": tools.iter().map(|t| t.name.as_str()).collect::<Vec<_>>(),
        "summaries": summaries(outcomes),
        "confusion": confusion(outcomes),
        "questions": outcomes,
    })
}

fn percent(value: Option<f64>) -> String {
    value.map_or_else(|| "—".to_owned(), |v| format!("{:.0}%", v * 100.0))
}

/// The summaries as a table.
pub fn summary_table(summaries: &[Summary]) -> String {
    let mut out = String::from(
        "part        questions  right tool  right arguments  no-tool precision  no-tool recall  median s  median tokens in/out\n",
    );
    for s in summaries {
        let tokens = match (s.median_input_tokens, s.median_output_tokens) {
            (Some(i), Some(o)) => format!("{i:.0}/{o:.0}"),
            _ => "—".to_owned(),
        };
        out.push_str(&format!(
            "{:<11} {:>9}  {:>10}  {:>15}  {:>17}  {:>14}  {:>8.2}  {:>21}{}\n",
            s.part,
            s.questions,
            percent(s.right_tool),
            percent(s.right_arguments),
            percent(s.no_tool_precision),
            percent(s.no_tool_recall),
            s.median_seconds,
            tokens,
            if s.errors > 0 {
                format!("  ({} failed)", s.errors)
            } else {
                String::new()
            }
        ));
    }
    out
}

/// The confusion table: a row per expected tool, a column per tool called.
pub fn confusion_table(outcomes: &[Outcome]) -> String {
    let table = confusion(outcomes);
    let mut columns: Vec<&str> = Vec::new();
    for row in table.values() {
        for called in row.keys() {
            if !columns.contains(&called.as_str()) {
                columns.push(called);
            }
        }
    }
    columns.sort_unstable();
    let width = table
        .keys()
        .map(|k| k.chars().count())
        .chain(columns.iter().map(|c| c.chars().count()))
        .max()
        .unwrap_or(8)
        .max(8);
    let mut out = format!("{:<width$}", "expected \\ called");
    for column in &columns {
        out.push_str(&format!("  {column:>width$}"));
    }
    out.push('\n');
    for (expected, row) in &table {
        out.push_str(&format!("{expected:<width$}"));
        for column in &columns {
            let n = row.get(*column).copied().unwrap_or(0);
            out.push_str(&format!("  {n:>width$}"));
        }
        out.push('\n');
    }
    out
}

/// One line per question, as it is answered.
pub fn outcome_line(outcome: &Outcome) -> String {
    let mark = if outcome.error.is_some() {
        "ERR"
    } else if outcome.right_arguments || (outcome.right_tool && outcome.expected.is_none()) {
        "ok "
    } else if outcome.right_tool {
        "arg"
    } else {
        "BAD"
    };
    let got = match (&outcome.error, &outcome.called) {
        (Some(error), _) => format!("error: {error}"),
        (None, Some(name)) => format!(
            "{name} {}",
            outcome
                .arguments
                .as_ref()
                .map_or_else(String::new, Value::to_string)
        ),
        (None, None) => {
            let answer = outcome.answer.as_deref().unwrap_or_default();
            let short: String = answer.chars().take(60).collect();
            let more = if answer.chars().count() > 60 {
                "…"
            } else {
                ""
            };
            format!("answer {:?}", format!("{short}{more}"))
        }
    };
    let part = outcome
        .part
        .as_deref()
        .map_or_else(String::new, |p| format!("[{p}] "));
    format!(
        "{mark} {part}{} → {got} ({:.1} s)",
        outcome.question, outcome.seconds
    )
}

#[cfg(test)]
mod tests;
