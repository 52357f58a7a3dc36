//! W3C trace context (`traceparent`, `tracestate`): a request's headers continue its caller's
//! trace, and outgoing requests carry the current one onward.

use http::HeaderMap;
use http::header::{HeaderName, HeaderValue};
use opentelemetry::propagation::{Extractor, Injector, TextMapPropagator};
use opentelemetry::trace::TraceContextExt as _;
use opentelemetry_sdk::propagation::TraceContextPropagator;
use tracing_opentelemetry::OpenTelemetrySpanExt as _;

struct Headers<'a>(&'a HeaderMap);

/// The carriers a lookup found (an MCP request's `_meta`).
struct Found(Vec<(&'static str, String)>);

impl Found {
    fn new(lookup: &dyn Fn(&str) -> Option<String>) -> Self {
        let found = ["traceparent", "tracestate"]
            .into_iter()
            .filter_map(|name| lookup(name).map(|value| (name, value)))
            .collect();
        Self(found)
    }
}

impl Extractor for Found {
    fn get(&self, key: &str) -> Option<&str> {
        self.0
            .iter()
            .find(|(name, _)| *name == key)
            .map(|(_, value)| value.as_str())
    }

    fn keys(&self) -> Vec<&str> {
        self.0.iter().map(|(name, _)| *name).collect()
    }
}

/// Makes `span` continue the trace a lookup finds, for
/// [`tinyagent::telemetry::continue_with`](tinyagent_core::telemetry::continue_with).
pub(crate) fn continue_from(span: &tracing::Span, lookup: &dyn Fn(&str) -> Option<String>) -> bool {
    let cx = TraceContextPropagator::new().extract(&Found::new(lookup));
    cx.span().span_context().is_valid() && span.set_parent(cx).is_ok()
}

impl Extractor for Headers<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).and_then(|v| v.to_str().ok())
    }

    fn keys(&self) -> Vec<&str> {
        self.0.keys().map(HeaderName::as_str).collect()
    }
}

struct HeadersMut<'a>(&'a mut HeaderMap);

impl Injector for HeadersMut<'_> {
    fn set(&mut self, key: &str, value: String) {
        if let (Ok(name), Ok(value)) = (
            HeaderName::from_bytes(key.as_bytes()),
            HeaderValue::from_str(&value),
        ) {
            self.0.insert(name, value);
        }
    }
}

/// Makes `span` a child of the trace whose context `headers` carry (`traceparent`), so a
/// request to a server continues its caller's trace. Returns whether it did: `false` when the
/// headers carry no valid context or `span` is not exported (no [`Telemetry`](crate::Telemetry)
/// layer is listening).
pub fn continue_trace(span: &tracing::Span, headers: &HeaderMap) -> bool {
    let cx = TraceContextPropagator::new().extract(&Headers(headers));
    if !cx.span().span_context().is_valid() {
        return false;
    }
    span.set_parent(cx).is_ok()
}

/// Adds the current span's trace context (`traceparent`, and `tracestate` when it has one) to
/// `headers`, for a request that should continue this trace. Does nothing when the current
/// span is not exported.
pub fn inject_context(headers: &mut HeaderMap) {
    let cx = tracing::Span::current().context();
    if cx.span().span_context().is_valid() {
        TraceContextPropagator::new().inject_context(&cx, &mut HeadersMut(headers));
    }
}

/// The current span's trace context as header pairs, for
/// [`tinyagent::telemetry::propagate_with`](tinyagent_core::telemetry::propagate_with).
pub(crate) fn current_headers() -> Vec<(&'static str, String)> {
    let mut headers = HeaderMap::new();
    inject_context(&mut headers);
    ["traceparent", "tracestate"]
        .into_iter()
        .filter_map(|name| {
            let value = headers.get(name)?.to_str().ok()?;
            (!value.is_empty()).then(|| (name, value.to_owned()))
        })
        .collect()
}
