//! [`with_logging`]: one `tracing` span per call, named after OpenTelemetry's GenAI conventions.

use std::sync::Arc;
use std::time::Instant;

use tracing::Instrument as _;
use tracing::field::Empty;

use super::layer::{ToolLayer, ToolMiddleware};
use crate::context::ToolContext;
use crate::error::ToolError;
use crate::redact::{normalize_key, redact_with};
use crate::util::BoxFuture;
use crate::{Handler, Tool, ToolInput, ToolOutput};

/// Logs every call through `tracing`, with spans.
///
/// Each call runs inside an `INFO` span named `execute_tool`, whose OpenTelemetry name
/// (`otel.name`) is `execute_tool {tool name}`, with the GenAI attributes
/// `gen_ai.operation.name = "execute_tool"`, `gen_ai.tool.name` and, when the context has one,
/// `gen_ai.tool.call.id`. When the call ends the span gets `duration_ms` and either
/// `output_len` or `error.type` (the [kind](crate::error::ToolErrorKind) as a snake-case name). Inside
/// it, three events are logged: `tool call started` (`INFO`), `tool call succeeded` (`INFO`,
/// with output length and duration) and `tool call failed` (`WARN`, with the error and
/// duration).
///
/// Arguments and results are not recorded unless asked for
/// ([`record_arguments`](Self::record_arguments), [`record_results`](Self::record_results)),
/// as `gen_ai.tool.call.arguments` and `gen_ai.tool.call.result`.
///
/// Everything logged is redacted, always: recorded arguments and results, and the error text
/// of a failed call (which may quote the arguments). The model still gets the error unredacted;
/// only the log line differs. [`redact::text`](crate::redact::text) does the work:
///
/// - the values of sensitive keys, at any depth of JSON and in free text (`key=value`,
///   `key: value`, `"key": "value"`, query strings, truncated or too deeply nested JSON), are
///   replaced by `[REDACTED]`. Sensitive keys are those containing `password`, `passwd`,
///   `passphrase`, `passcode`, `secret`, `api_key`, `access_key`, `private_key`,
///   `secret_key`, `signing_key`, `encryption_key`, `ssh_key`, `authorization`, `credential`,
///   `cookie`, `session_id`, `connection_string`, `credit_card` or `card_number` (compared
///   after Unicode compatibility normalisation (NFKC), case-insensitively, ignoring
///   punctuation, so `aws_access_key_id`, `X-Api-Key` and a full-width `ｐａｓｓｗｏｒｄ`
///   count), keys ending in `token` (`access_token`, `refreshToken`; not `max_tokens`), keys
///   with one of the words `key`, `pwd`, `pass`, `pin`, `otp`, `totp`, `auth`, `bearer`, `jwt`,
///   `cvv`, `cvc`, `ssn` (`key`, `db_pass`, `pin_code`; not `keyword`, `bypass` or
///   `shipping`), and any added with [`redact_key`](Self::redact_key);
/// - credentials inside any value, JSON or plain text, are replaced too: authorization
///   schemes (`Bearer …`, `Basic …`), the password of `scheme://user:password@host`, and
///   tokens whose shape gives them away (`sk-…`, `sk_live_…`, `ghp_…`, `glpat-…`, `hf_…`,
///   `npm_…`, `xoxb-…`, `AKIA…`, `AIza…`, `ya29.…`, JWTs, PEM and PGP private keys).
///
/// Recorded text is cut to [`max_recorded_len`](Self::max_recorded_len) characters, error text
/// to the same length. Redaction cannot know every secret: a tool that returns secrets in a
/// shape none of these rules recognise should not have its results recorded.
///
/// With no subscriber listening the layer costs a few nanoseconds per call.
///
/// ```
/// use std::time::Duration;
/// use tinyagent::{ToolContext, ToolError, tools};
///
/// let weather = tinyagent_demo::weather_tool();
/// let logged = tools::wrap_tool(weather, [
///     tools::middleware::LoggingLayer::new().record_arguments(true).into(),
///     tools::with_timeout(Duration::from_secs(3)),
/// ]);
/// # tokio_test::block_on(async {
/// let ctx = ToolContext::default().with_call_id("call_1");
/// let out = logged.handle(&ctx, r#"{"city":"上海"}"#).await?; // Shanghai
/// assert!(out.contains("多云")); // cloudy
/// # Ok::<(), ToolError>(())
/// # }).unwrap();
/// ```
#[derive(Debug, Clone)]
pub struct LoggingLayer {
    record_arguments: bool,
    record_results: bool,
    extra_keys: Vec<String>,
    max_recorded_len: usize,
}

impl Default for LoggingLayer {
    fn default() -> Self {
        Self::new()
    }
}

impl LoggingLayer {
    /// Logging with neither arguments nor results recorded.
    pub fn new() -> Self {
        Self {
            record_arguments: false,
            record_results: false,
            extra_keys: Vec::new(),
            max_recorded_len: 2048,
        }
    }

    /// Records the call's arguments (redacted) on the span and the start event.
    #[must_use]
    pub fn record_arguments(mut self, yes: bool) -> Self {
        self.record_arguments = yes;
        self
    }

    /// Records the call's result (redacted) on the span and the success event.
    #[must_use]
    pub fn record_results(mut self, yes: bool) -> Self {
        self.record_results = yes;
        self
    }

    /// Also redacts the values of this key (compared like the built-in ones).
    #[must_use]
    pub fn redact_key(mut self, key: impl Into<String>) -> Self {
        self.extra_keys.push(normalize_key(&key.into()));
        self
    }

    /// The most characters of arguments or results recorded (default 2048); the rest is
    /// replaced by a note of how much was left out.
    #[must_use]
    pub fn max_recorded_len(mut self, chars: usize) -> Self {
        self.max_recorded_len = chars;
        self
    }

    fn render(&self, text: &str) -> String {
        let redacted = redact_with(text, &self.extra_keys);
        truncate_chars(redacted, self.max_recorded_len)
    }
}

/// Logs every call through `tracing`, recording neither arguments nor results; see [`LoggingLayer`].
pub fn with_logging() -> ToolMiddleware {
    LoggingLayer::new().into()
}

impl ToolLayer for LoggingLayer {
    fn layer(&self, tool: &dyn Tool, next: Arc<dyn Handler>) -> Arc<dyn Handler> {
        Arc::new(LoggingHandler {
            next,
            tool_name: tool.name().into(),
            span_name: format!("execute_tool {}", tool.name()).into(),
            config: Arc::new(self.clone()),
        })
    }
}

struct LoggingHandler {
    next: Arc<dyn Handler>,
    tool_name: Arc<str>,
    span_name: Arc<str>,
    config: Arc<LoggingLayer>,
}

impl Handler for LoggingHandler {
    fn call<'a>(
        &'a self,
        ctx: &'a ToolContext,
        input: ToolInput,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        // Inside an agent the call already has its `execute_tool` span: record into it.
        let span = if ctx.is_in_tool_span() {
            tracing::Span::current()
        } else {
            tracing::info_span!(
                "execute_tool",
                otel.name = &*self.span_name,
                gen_ai.operation.name = "execute_tool",
                gen_ai.tool.name = &*self.tool_name,
                gen_ai.tool.call.id = Empty,
                gen_ai.tool.call.arguments = Empty,
                gen_ai.tool.call.result = Empty,
                duration_ms = Empty,
                output_len = Empty,
                error.type = Empty,
                otel.status_code = Empty,
            )
        };
        let enabled = !span.is_disabled() || tracing::enabled!(tracing::Level::WARN);
        if !enabled {
            return self.next.call(ctx, input);
        }
        let call = async move {
            let span = tracing::Span::current();
            if let Some(id) = ctx.call_id() {
                span.record("gen_ai.tool.call.id", id);
            }
            // Events first, then span fields, so a log line does not repeat them.
            if self.config.record_arguments {
                let arguments = self.config.render(input.text());
                tracing::info!(arguments = %arguments, "tool call started");
                span.record("gen_ai.tool.call.arguments", arguments.as_str());
            } else {
                tracing::info!("tool call started");
            }
            let started = Instant::now();
            let result = self.next.call(ctx, input).await;
            // Milliseconds, to the microsecond.
            let duration_ms = started.elapsed().as_micros() as f64 / 1000.0;
            match &result {
                Ok(output) => {
                    if self.config.record_results {
                        let rendered = self.config.render(output.as_text());
                        tracing::info!(
                            output_len = output.as_text().len(),
                            duration_ms,
                            result = %rendered,
                            "tool call succeeded"
                        );
                        span.record("gen_ai.tool.call.result", rendered.as_str());
                    } else {
                        tracing::info!(
                            output_len = output.as_text().len(),
                            duration_ms,
                            "tool call succeeded"
                        );
                    }
                    span.record("output_len", output.as_text().len());
                }
                Err(err) => {
                    let error = self.config.render(err.message());
                    tracing::warn!(
                        error = %error,
                        error.type = err.kind().as_str(),
                        duration_ms,
                        "tool call failed"
                    );
                    span.record("error.type", err.kind().as_str());
                    span.record("otel.status_code", "ERROR");
                }
            }
            span.record("duration_ms", duration_ms);
            result
        };
        Box::pin(call.instrument(span))
    }
}

fn truncate_chars(text: String, max: usize) -> String {
    if text.len() <= max {
        return text;
    }
    match text.char_indices().nth(max) {
        None => text,
        Some((cut, _)) => {
            let rest = text[cut..].chars().count();
            format!("{}…({rest} more characters)", &text[..cut])
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn truncation_counts_characters() {
        assert_eq!(truncate_chars("上海上海".into(), 4), "上海上海");
        assert_eq!(
            truncate_chars("上海上海".into(), 1),
            "上…(3 more characters)"
        );
        assert_eq!(truncate_chars("abc".into(), 0), "…(3 more characters)");
    }
}
