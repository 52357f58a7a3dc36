//! rmcp's errors as text a person (or a model) can act on, on both ends: no internal type
//! names, the cause first, and what kind of failure it is.

use rmcp::model::ErrorCode;
use rmcp::service::ServiceError;
use tinyagent::ToolError;

/// The text of an error and of its sources, joined with `: `, leaving out rmcp's transport
/// wrapper (which names internal types) and repeated parts.
pub(crate) fn chain_text(error: &(dyn std::error::Error + 'static)) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut current: Option<&(dyn std::error::Error + 'static)> = Some(error);
    while let Some(e) = current {
        if let Some(transport) = e.downcast_ref::<rmcp::transport::DynamicTransportError>() {
            current = Some(transport.error.as_ref());
            continue;
        }
        let text = e.to_string();
        if !text.is_empty() && !parts.iter().any(|p| p.contains(&text)) {
            parts.push(text);
        }
        current = e.source();
    }
    // A cause may quote the server's URL (reqwest's errors do): never with its credentials.
    tinyagent::redact::url(&parts.join(": "))
}

/// A failed request, as the model should read it.
pub(crate) fn service_error(label: &str, err: ServiceError, doing: &str) -> ToolError {
    match err {
        ServiceError::TransportClosed | ServiceError::TransportSend(_) => {
            let cause = match &err {
                ServiceError::TransportSend(e) => format!(" ({})", chain_text(e)),
                _ => String::new(),
            };
            ToolError::unavailable(format!(
                "MCP server `{label}` is not running: the connection closed while {doing}{cause}; \
                 it is being reconnected (a server process is started again), and the next \
                 call goes to the new connection"
            ))
            .with_source(err)
        }
        ServiceError::Timeout { timeout } => ToolError::timed_out(format!(
            "MCP server `{label}` timed out after {timeout:?} while {doing}"
        ))
        .with_source(err),
        ServiceError::Cancelled { ref reason } => ToolError::cancelled(format!(
            "MCP server `{label}` cancelled {doing}{}",
            reason
                .as_deref()
                .map(|r| format!(": {r}"))
                .unwrap_or_default()
        ))
        .with_source(err),
        ServiceError::McpError(ref data) => {
            let message = format!(
                "MCP server `{label}` returned an error while {doing}: {}",
                data.message
            );
            let error = if data.code == ErrorCode::INVALID_PARAMS {
                ToolError::invalid_input(message)
            } else if data.code == ErrorCode::METHOD_NOT_FOUND {
                ToolError::not_found(message)
            } else {
                ToolError::failed(message)
            };
            error.with_source(err)
        }
        ServiceError::UnexpectedResponse => ToolError::failed(format!(
            "MCP server `{label}` sent an answer of the wrong kind while {doing}"
        ))
        .with_source(err),
        other => ToolError::failed(format!(
            "MCP server `{label}` failed while {doing}: {}",
            chain_text(&other)
        ))
        .with_source(other),
    }
}
