//! What a run tells observability tools: `tracing` spans named and attributed after
//! OpenTelemetry's GenAI semantic conventions, and the switch that lets them carry content.
//!
//! Every run of an `LlmAgent` makes these spans (at `INFO`, target
//! `tinyagent`), whatever subscriber listens; `tinyagent-otel` turns them into OpenTelemetry
//! spans and metrics and exports them over OTLP, and any other `tracing` subscriber sees them
//! as they are:
//!
//! | span | `otel.name` | kind | attributes |
//! |---|---|---|---|
//! | a run | `invoke_agent {agent}` | internal | `gen_ai.operation.name = "invoke_agent"`, `gen_ai.agent.name`, `gen_ai.conversation.id` (the session's id), `gen_ai.usage.input_tokens`, `gen_ai.usage.output_tokens`, `error.type` |
//! | a model call | `chat {model}` | client | `gen_ai.operation.name = "chat"`, `gen_ai.provider.name`, `gen_ai.request.model`, `gen_ai.request.max_tokens`, `gen_ai.request.temperature`, `gen_ai.response.model`, `gen_ai.response.id`, `gen_ai.response.finish_reasons`, `gen_ai.usage.input_tokens`, `gen_ai.usage.output_tokens`, `gen_ai.usage.cache_read.input_tokens`, `gen_ai.usage.cache_creation.input_tokens`, `tinyagent.cost` (US dollars, when known), `error.type` |
//! | a tool call | `execute_tool {tool}` | internal | `gen_ai.operation.name = "execute_tool"`, `gen_ai.tool.name`, `gen_ai.tool.call.id`, `gen_ai.tool.type = "function"`, `error.type` (the [`ToolErrorKind`](crate::ToolErrorKind)) |
//!
//! A nested agent's run (an agent used as a tool) is a child of the tool call that ran it, so
//! a tree of agents is one trace. Retries and timeouts inside a tool call are events of its
//! span (the middleware logs them there).
//!
//! Content (the model's answer, tool arguments and results) is not recorded unless
//! [`capture_content`] turns it on (`tinyagent-otel` does when
//! `OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true`); it is then recorded, redacted
//! as logs are ([`redact::text`](crate::redact::text())), as `gen_ai.output.messages`,
//! `gen_ai.tool.call.arguments` and `gen_ai.tool.call.result`.
//!
//! Requests to model providers carry the trace onward ([`trace_headers`]).
//!
//! The attribute names are those of the GenAI conventions in OpenTelemetry's semantic
//! conventions 1.38 (their latest experimental version, which is what tinyagent has always
//! emitted; see [`SEMCONV_VERSION`]).

use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, Ordering};

use tracing::Span;
use tracing::field::Empty;

use crate::model::{ModelError, ModelRequest, ModelResponse, Usage};
use crate::redact;

/// The version of OpenTelemetry's semantic conventions whose GenAI names the spans follow.
pub const SEMCONV_VERSION: &str = "1.38.0";

/// The most characters of content recorded in one attribute; the rest is cut.
const MAX_CONTENT: usize = 8 * 1024;

static CAPTURE_CONTENT: AtomicBool = AtomicBool::new(false);

/// Turns the recording of content (answers, tool arguments and results) on spans on or off,
/// for the whole process. Off by default. What is recorded is redacted first.
///
/// ```
/// tinyagent::telemetry::capture_content(true);
/// assert!(tinyagent::telemetry::captures_content());
/// tinyagent::telemetry::capture_content(false);
/// ```
pub fn capture_content(on: bool) {
    CAPTURE_CONTENT.store(on, Ordering::Relaxed);
}

/// Whether content is recorded on spans (see [`capture_content`]).
pub fn captures_content() -> bool {
    CAPTURE_CONTENT.load(Ordering::Relaxed)
}

/// What gives the headers that carry the current trace onward (W3C `traceparent` and
/// `tracestate`): set by whatever exports the spans (`tinyagent-otel` does).
pub type TraceHeaders = fn() -> Vec<(&'static str, String)>;

static TRACE_HEADERS: OnceLock<TraceHeaders> = OnceLock::new();

/// Sets, once for the process, what gives the trace context headers that the providers'
/// requests carry ([`trace_headers`]). Later calls change nothing.
pub fn propagate_with(headers: TraceHeaders) {
    let _ = TRACE_HEADERS.set(headers);
}

/// The headers that carry the current span's trace onward, for an outgoing request (the
/// providers send them with every model call); none unless spans are exported.
///
/// ```
/// assert!(tinyagent::telemetry::trace_headers().is_empty());
/// ```
pub fn trace_headers() -> Vec<(&'static str, String)> {
    TRACE_HEADERS
        .get()
        .map_or_else(Vec::new, |headers| headers())
}

/// What makes a span continue the trace a request carries: given the span and a lookup of the
/// request's carriers (`traceparent`, `tracestate`), it sets the span's parent and says whether
/// it did. Set by whatever exports the spans (`tinyagent-otel` does).
pub type ContinueTrace = fn(&Span, &dyn Fn(&str) -> Option<String>) -> bool;

static CONTINUE_TRACE: OnceLock<ContinueTrace> = OnceLock::new();

/// Sets, once for the process, how a served request's trace is continued
/// ([`continue_trace`]). Later calls change nothing.
pub fn continue_with(adopt: ContinueTrace) {
    let _ = CONTINUE_TRACE.set(adopt);
}

/// Makes `span` continue the trace whose context `lookup` finds (an MCP request's
/// `_meta.traceparent`, say); `false` when there is none or spans are not exported.
pub fn continue_trace(span: &Span, lookup: &dyn Fn(&str) -> Option<String>) -> bool {
    CONTINUE_TRACE
        .get()
        .is_some_and(|adopt| adopt(span, lookup))
}

/// `text`, redacted and cut for an attribute.
#[doc(hidden)]
pub fn content(text: &str) -> String {
    let redacted = redact::text(text);
    match redacted.char_indices().nth(MAX_CONTENT) {
        Some((cut, _)) => format!("{}…", &redacted[..cut]),
        None => redacted,
    }
}

/// The span of one run of `agent` in the session `conversation`.
#[doc(hidden)]
pub fn agent_span(agent: &str, conversation: &str, invocation: &str) -> Span {
    tracing::info_span!(
        target: "tinyagent",
        "invoke_agent",
        otel.name = format!("invoke_agent {agent}"),
        otel.kind = "internal",
        gen_ai.operation.name = "invoke_agent",
        gen_ai.agent.name = %agent,
        gen_ai.conversation.id = %conversation,
        invocation.id = %invocation,
        gen_ai.usage.input_tokens = Empty,
        gen_ai.usage.output_tokens = Empty,
        error.type = Empty,
        otel.status_code = Empty,
    )
}

/// Records what a run has spent so far on its span.
#[doc(hidden)]
pub fn record_agent_usage(span: &Span, usage: &Usage) {
    if let Some(n) = usage.input_tokens {
        span.record("gen_ai.usage.input_tokens", int(n));
    }
    if let Some(n) = usage.output_tokens {
        span.record("gen_ai.usage.output_tokens", int(n));
    }
}

/// A count as the signed integer OpenTelemetry attributes hold (`tracing-opentelemetry`
/// writes other integers as text).
fn int(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// Marks `span` failed, with `error_type` as its `error.type`.
#[doc(hidden)]
pub fn fail(span: &Span, error_type: &str) {
    span.record("error.type", error_type);
    span.record("otel.status_code", "ERROR");
}

/// The span of one model call.
#[doc(hidden)]
pub fn chat_span(model: &str, provider: Option<&str>, req: &ModelRequest) -> Span {
    tracing::info_span!(
        target: "tinyagent",
        "chat",
        otel.name = format!("chat {model}"),
        otel.kind = "client",
        gen_ai.operation.name = "chat",
        gen_ai.provider.name = provider,
        gen_ai.request.model = %model,
        gen_ai.request.max_tokens = req.max_tokens.map(i64::from),
        gen_ai.request.temperature = req.sampling.temperature.map(f64::from),
        gen_ai.response.model = Empty,
        gen_ai.response.id = Empty,
        gen_ai.response.finish_reasons = Empty,
        gen_ai.usage.input_tokens = Empty,
        gen_ai.usage.output_tokens = Empty,
        gen_ai.usage.cache_read.input_tokens = Empty,
        gen_ai.usage.cache_creation.input_tokens = Empty,
        tinyagent.cost = Empty,
        gen_ai.output.messages = Empty,
        error.type = Empty,
        otel.status_code = Empty,
    )
}

/// Records a model call's answer on its span.
#[doc(hidden)]
pub fn end_chat_span(span: &Span, response: &ModelResponse) {
    let usage = &response.usage;
    if let Some(model) = &response.model {
        span.record("gen_ai.response.model", model.as_str());
    }
    if let Some(id) = &response.id {
        span.record("gen_ai.response.id", id.as_str());
    }
    // A string array, written as JSON: `tracing` fields carry no arrays.
    let reasons = serde_json::json!([response.finish_reason.as_str()]).to_string();
    span.record("gen_ai.response.finish_reasons", reasons.as_str());
    let fields = [
        ("gen_ai.usage.input_tokens", usage.input_tokens),
        ("gen_ai.usage.output_tokens", usage.output_tokens),
        (
            "gen_ai.usage.cache_read.input_tokens",
            usage.cached_input_tokens,
        ),
        (
            "gen_ai.usage.cache_creation.input_tokens",
            usage.cache_write_input_tokens,
        ),
    ];
    for (name, value) in fields {
        if let Some(n) = value {
            span.record(name, int(n));
        }
    }
    if let Some(cost) = usage.cost {
        span.record("tinyagent.cost", cost.usd());
    }
    if captures_content() {
        let message = serde_json::json!([{
            "role": "assistant",
            "parts": [{"type": "text", "content": content(&response.message.text())}],
            "finish_reason": response.finish_reason.as_str(),
        }]);
        span.record("gen_ai.output.messages", message.to_string().as_str());
    }
}

/// Records a failed model call on its span.
#[doc(hidden)]
pub fn fail_chat_span(span: &Span, err: &ModelError) {
    fail(span, err.kind().as_str());
}

/// The span of one tool call made by an agent.
#[doc(hidden)]
pub fn tool_span(tool: &str, call_id: &str) -> Span {
    tracing::info_span!(
        target: "tinyagent",
        "execute_tool",
        otel.name = format!("execute_tool {tool}"),
        otel.kind = "internal",
        gen_ai.operation.name = "execute_tool",
        gen_ai.tool.name = %tool,
        gen_ai.tool.call.id = %call_id,
        gen_ai.tool.type = "function",
        gen_ai.tool.call.arguments = Empty,
        gen_ai.tool.call.result = Empty,
        duration_ms = Empty,
        output_len = Empty,
        error.type = Empty,
        otel.status_code = Empty,
    )
}

/// Marks a span `error.type = "cancelled"` if it is dropped before [`done`](Self::done): a run,
/// model call or tool call whose future was dropped (a client gone, a time limit) must not
/// count as a success.
#[doc(hidden)]
pub struct Unfinished(Option<Span>);

impl Unfinished {
    #[doc(hidden)]
    pub fn new(span: &Span) -> Self {
        Self(Some(span.clone()))
    }

    /// The work ended (well or not, as the span records): nothing to mark.
    #[doc(hidden)]
    pub fn done(mut self) {
        self.0 = None;
    }
}

impl Drop for Unfinished {
    fn drop(&mut self) {
        if let Some(span) = self.0.take() {
            fail(&span, "cancelled");
        }
    }
}
