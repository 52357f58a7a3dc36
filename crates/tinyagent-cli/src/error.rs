//! [`CliError`]: what the program prints when it fails, and its exit code.

use std::fmt;

use tinyagent::model::{Cost, ModelErrorKind};
use tinyagent::{AgentError, ModelError};

/// Exit code of a runtime failure (the model, a tool server or the agent failed).
pub const EXIT_FAILURE: u8 = 1;
/// Exit code of a usage error (clap uses it too).
pub const EXIT_USAGE: u8 = 2;
/// Exit code after Ctrl-C.
pub const EXIT_INTERRUPTED: u8 = 130;

/// A failure, shown as one `error: …` line and an optional `hint: …` line on standard error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CliError {
    /// What went wrong, on one line.
    pub message: String,
    /// What to do about it, on one line.
    pub hint: Option<String>,
    /// The process's exit code.
    pub code: u8,
    /// A stable snake-case name of the failure, for `--json`.
    pub kind: &'static str,
}

impl CliError {
    /// A runtime failure.
    pub fn failure(kind: &'static str, message: impl fmt::Display) -> Self {
        Self {
            message: one_line(&message.to_string()),
            hint: None,
            code: EXIT_FAILURE,
            kind,
        }
    }

    /// A usage error (exit code 2).
    pub fn usage(message: impl fmt::Display) -> Self {
        Self {
            code: EXIT_USAGE,
            ..Self::failure("usage", message)
        }
    }

    /// The run was interrupted by Ctrl-C.
    pub fn interrupted() -> Self {
        Self {
            code: EXIT_INTERRUPTED,
            ..Self::failure("interrupted", "interrupted")
        }
    }

    /// Adds a hint.
    #[must_use]
    pub fn with_hint(mut self, hint: impl fmt::Display) -> Self {
        self.hint = Some(one_line(&hint.to_string()));
        self
    }

    /// The error of an agent run; `server` is the model server's base URL, when the model is
    /// one.
    pub fn from_agent(err: AgentError, server: Option<&str>) -> Self {
        match err {
            AgentError::Model(err) => Self::from_model(&err, server),
            AgentError::Resolver { source, .. } => Self::failure(
                "tool_server",
                format!("a tool server failed: {}", source.message()),
            ),
            AgentError::ToolConflict { name, .. } => Self::failure(
                "tool_conflict",
                format!("two tool sources offer a tool named {name:?}"),
            )
            .with_hint("leave one of them out (--tools none keeps the demo tools away)"),
            AgentError::ReplyTruncated {
                max_tokens, tools, ..
            } => {
                let limit = match max_tokens {
                    Some(n) => format!("max_tokens {n}"),
                    None => "the server's default".to_owned(),
                };
                Self::failure(
                    "truncated",
                    format!(
                        "the model's reply was cut off by the token limit ({limit}) while it was \
                         calling {}; the calls were not run",
                        tools.join(", ")
                    ),
                )
                .with_hint("raise the limit with --max-tokens N")
            }
            AgentError::StepLimit { max_steps, .. } => Self::failure(
                "step_limit",
                format!("no answer after {max_steps} model calls (the model kept calling tools)"),
            )
            .with_hint(
                "raise the limit with --max-steps, or let the last call answer from what the \
                 tools gave with --answer-at-step-limit",
            ),
            AgentError::BudgetExhausted {
                resource: tinyagent::budget::BudgetResource::Cost,
                limit,
                used,
                ..
            } => {
                let (limit, used) = (Cost::from_nano_usd(limit), Cost::from_nano_usd(used));
                Self::failure(
                    "cost_limit",
                    format!(
                        "stopped before the next model call: the run's model calls have cost \
                         {used}, and --max-cost is {limit}"
                    ),
                )
                .with_hint("raise the limit with --max-cost USD")
            }
            other => Self::failure("agent", other),
        }
    }

    /// The error of a model call, with a hint on what to check.
    pub fn from_model(err: &ModelError, server: Option<&str>) -> Self {
        let message = err.message();
        let Some(url) = server else {
            let failure =
                Self::failure(err.kind().as_str(), format!("the model failed: {message}"));
            if err.kind() == ModelErrorKind::ContextLengthExceeded {
                // The embedded model: its window is the command line's to set.
                return failure.with_hint(
                    "raise the context window with --context-size TOKENS (or \
                     TINYAGENT_CONTEXT_SIZE), or offer fewer tools (--tools, fewer --mcp servers)",
                );
            }
            return failure;
        };
        let url = tinyagent::redact::url(url);
        match err.kind() {
            ModelErrorKind::Authentication => Self::failure(
                "authentication",
                format!("the model server refused the request: {message}"),
            )
            .with_hint("check the API key (--api-key or OPENAI_API_KEY)"),
            ModelErrorKind::Unavailable if message.starts_with("could not connect") => {
                Self::failure(
                    "unavailable",
                    format!("cannot reach the model server at {url}: {message}"),
                )
                .with_hint("is the server running? check --base-url or OPENAI_BASE_URL")
            }
            ModelErrorKind::Unavailable => Self::failure(
                "unavailable",
                format!("the model server at {url} failed: {message}"),
            )
            .with_hint(
                "the trouble is on the server's side and retrying did not help; try again \
                 later, or look at the server's logs or status page",
            ),
            ModelErrorKind::TimedOut => Self::failure(
                "timed_out",
                format!("the model server at {url} did not answer in time: {message}"),
            )
            .with_hint(
                "give it longer with --timeout SECS (or TINYAGENT_TIMEOUT), or check that the \
                 server is up and not overloaded",
            ),
            ModelErrorKind::RateLimited => {
                let hint = if message.contains("out of quota") {
                    "add credit to the account or raise its limits; waiting does not help"
                } else {
                    "wait a little and try again, or ask for higher rate limits"
                };
                Self::failure(
                    "rate_limited",
                    format!("the model server at {url} refused the request: {message}"),
                )
                .with_hint(hint)
            }
            ModelErrorKind::InvalidResponse => {
                let hint = if message.contains("max_reply_bytes") {
                    "the server did not stop writing; lower --max-tokens, or check that the \
                     server honours max_tokens"
                } else if message.starts_with("the stream") {
                    "the connection was cut while the reply streamed, and retrying did not \
                     help; try again, or check any proxy between here and the server"
                } else {
                    "check --base-url (or OPENAI_BASE_URL): it must be the root of an \
                     OpenAI-compatible API, usually ending in /v1"
                };
                Self::failure(
                    "invalid_response",
                    format!("the model server at {url} sent an unusable answer: {message}"),
                )
                .with_hint(hint)
            }
            kind => Self::failure(kind.as_str(), format!("the model failed: {message}")),
        }
    }

    /// Prints `error: …` and `hint: …` on standard error (coloured on a terminal, unless
    /// `NO_COLOR` is set).
    pub fn print(&self) {
        use std::io::Write;
        let red = anstyle::AnsiColor::Red.on_default().bold();
        let bold = anstyle::Style::new().bold();
        let mut err = anstream::stderr().lock();
        let _ = writeln!(err, "{red}error:{red:#} {}", self.message);
        if let Some(hint) = &self.hint {
            let _ = writeln!(err, "{bold}hint:{bold:#} {hint}");
        }
    }

    /// The error as a JSON object: `{"type":"error","kind":…,"message":…,"hint":…}`.
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "type": "error",
            "kind": self.kind,
            "message": self.message,
            "hint": self.hint,
        })
    }
}

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

/// A failed write to standard output or error: an error, except for a closed pipe (the reader
/// has what it wanted, as with `tinyagent tools | head -3`), which is not one.
pub fn output_error(err: std::io::Error) -> Result<(), CliError> {
    if err.kind() == std::io::ErrorKind::BrokenPipe {
        return Ok(());
    }
    Err(CliError::failure(
        "output",
        format!("cannot write the output: {err}"),
    ))
}

/// The text on one line: line breaks and runs of spaces become one space.
pub fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_fit_on_one_line() {
        let err = CliError::failure("x", "first line\n  second\r\nthird");
        assert_eq!(err.message, "first line second third");
        assert_eq!(err.code, EXIT_FAILURE);
    }

    #[test]
    fn a_refused_key_says_what_to_check() {
        let err = ModelError::new(ModelErrorKind::Authentication, "401: Incorrect API key");
        let cli = CliError::from_agent(AgentError::Model(err), Some("http://x/v1"));
        assert_eq!(cli.kind, "authentication");
        assert!(cli.message.contains("Incorrect API key"), "{cli:?}");
        assert!(cli.hint.unwrap().contains("--api-key"));
    }

    #[test]
    fn an_unreachable_server_is_named() {
        let err = ModelError::new(ModelErrorKind::Unavailable, "connection refused");
        let cli = CliError::from_model(&err, Some("http://127.0.0.1:9/v1"));
        assert!(cli.message.contains("http://127.0.0.1:9/v1"), "{cli:?}");
        assert_eq!(cli.to_json()["kind"], "unavailable");
    }
}
