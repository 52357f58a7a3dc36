//! MCP spans, in OpenTelemetry's MCP conventions: `tools/call {tool}` of kind client around a
//! remote tool's call (its trace context sent on in the request's `_meta`), and of kind server
//! around a served call (continuing the trace its `_meta` carries).

use rmcp::ErrorData;
use rmcp::model::{CallToolRequestParams, CallToolResponse, CallToolResult, RequestMetaObject};
use tracing::Span;
use tracing::field::Empty;

/// The span of a `tools/call` sent to a server, whose trace context goes in `params`'
/// `_meta` (`traceparent`, `tracestate`) when spans are exported.
pub(crate) fn client_span(params: &mut CallToolRequestParams, server: &str) -> Span {
    let tool = params.name.to_string();
    let span = tracing::info_span!(
        target: "tinyagent_mcp",
        "mcp_client",
        otel.name = format!("tools/call {tool}"),
        otel.kind = "client",
        mcp.method.name = "tools/call",
        gen_ai.operation.name = "execute_tool",
        gen_ai.tool.name = %tool,
        tinyagent.mcp.server = %server,
        jsonrpc.request.id = Empty,
        error.type = Empty,
        otel.status_code = Empty,
    );
    let headers = span.in_scope(tinyagent::telemetry::trace_headers);
    if !headers.is_empty() {
        let meta = params.meta.get_or_insert_with(Default::default);
        for (name, value) in headers {
            meta.insert(name.to_owned(), value.into());
        }
    }
    span
}

/// The span of a served `tools/call`, continuing the caller's trace from the request's
/// `_meta` (which rmcp hands over as `meta`).
pub(crate) fn server_span(
    request: &CallToolRequestParams,
    meta: &RequestMetaObject,
    id: &str,
) -> Span {
    let span = tracing::info_span!(
        target: "tinyagent_mcp",
        "mcp_server",
        otel.name = format!("tools/call {}", request.name),
        otel.kind = "server",
        mcp.method.name = "tools/call",
        gen_ai.operation.name = "execute_tool",
        gen_ai.tool.name = %request.name,
        jsonrpc.request.id = %id,
        error.type = Empty,
        otel.status_code = Empty,
    );
    let lookup = |name: &str| meta.get(name).and_then(|v| v.as_str()).map(str::to_owned);
    tinyagent::telemetry::continue_trace(&span, &lookup);
    span
}

/// Records how a call ended on its span: `tool_error` for a result marked as an error, the
/// JSON-RPC error code for a refused request.
pub(crate) fn end(span: &Span, outcome: Result<&CallToolResult, i64>) {
    let error = match outcome {
        Ok(result) if result.is_error == Some(true) => Some("tool_error".to_owned()),
        Ok(_) => None,
        Err(code) => Some(code.to_string()),
    };
    if let Some(error) = error {
        fail(span, &error);
    }
}

/// Records how a served call ended on its span.
pub(crate) fn end_response(span: &Span, answer: &Result<CallToolResponse, ErrorData>) {
    match answer {
        Ok(CallToolResponse::Complete(result)) => end(span, Ok(result)),
        Ok(_) => {}
        Err(err) => end(span, Err(i64::from(err.code.0))),
    }
}

/// Records a failed call on its span.
pub(crate) fn fail(span: &Span, error: &str) {
    span.record("error.type", error);
    span.record("otel.status_code", "ERROR");
}
