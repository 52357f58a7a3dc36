//! rmcp's errors as text a person (or a model) can act on: no internal type names, the cause
//! first, and what kind of failure it is; and why an MCP server stopped ([`McpServeError`]).

use std::net::SocketAddr;

use rmcp::model::{CallToolRequestParams, CustomRequest, ErrorCode};
use rmcp::service::{ClientInitializeError, ServiceError};
use rmcp::transport::streamable_http_client::{
    AuthRequiredError, InsufficientScopeError, StreamableHttpError,
};
use serde_json::Value;
use tinyagent::ToolError;

/// An HTTP server's refusal to let us in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum AuthProblem {
    /// 401: no credentials, or wrong ones.
    Unauthorized,
    /// 403: credentials that are not enough.
    Forbidden,
}

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

/// Whether an error (or one of its sources) is an HTTP 401 or 403.
pub(crate) fn auth_problem(error: &(dyn std::error::Error + 'static)) -> Option<AuthProblem> {
    let mut current: Option<&(dyn std::error::Error + 'static)> = Some(error);
    while let Some(e) = current {
        if e.downcast_ref::<AuthRequiredError>().is_some() {
            return Some(AuthProblem::Unauthorized);
        }
        if e.downcast_ref::<InsufficientScopeError>().is_some() {
            return Some(AuthProblem::Forbidden);
        }
        if let Some(http) = e.downcast_ref::<StreamableHttpError<reqwest::Error>>() {
            match http {
                StreamableHttpError::AuthRequired(_) => return Some(AuthProblem::Unauthorized),
                StreamableHttpError::InsufficientScope(_) => return Some(AuthProblem::Forbidden),
                StreamableHttpError::UnexpectedServerResponse(text) => {
                    if text.starts_with("HTTP 401") {
                        return Some(AuthProblem::Unauthorized);
                    }
                    if text.starts_with("HTTP 403") {
                        return Some(AuthProblem::Forbidden);
                    }
                }
                _ => {}
            }
        }
        if let Some(transport) = e.downcast_ref::<rmcp::transport::DynamicTransportError>() {
            current = Some(transport.error.as_ref());
            continue;
        }
        current = e.source();
    }
    None
}

/// Whether a failed handshake was an HTTP 401 or 403.
pub(crate) fn init_auth_problem(error: &ClientInitializeError) -> Option<AuthProblem> {
    match error {
        ClientInitializeError::TransportError { error, .. } => auth_problem(error),
        other => auth_problem(other),
    }
}

/// A failed handshake, as text.
pub(crate) fn init_error_text(error: &ClientInitializeError) -> String {
    match error {
        ClientInitializeError::ConnectionClosed(_) => {
            "the connection closed before the MCP handshake finished".to_owned()
        }
        ClientInitializeError::TransportError { error, .. } => chain_text(error),
        ClientInitializeError::JsonRpcError(data) => {
            format!("the server refused the handshake: {}", data.message)
        }
        ClientInitializeError::ExpectedInitResponse(_)
        | ClientInitializeError::ExpectedInitResult(_) => {
            "the server did not answer the handshake with an initialize result".to_owned()
        }
        other => chain_text(other),
    }
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

/// The error for a request rmcp could not type: a known MCP method whose params do not fit
/// (rmcp falls back to a custom request then) is invalid params (-32602), saying what is
/// wrong; anything else is method not found (-32601).
pub(crate) fn custom_request_error(request: &CustomRequest) -> rmcp::ErrorData {
    const KNOWN: [&str; 12] = [
        "initialize",
        "ping",
        "tools/list",
        "tools/call",
        "resources/list",
        "resources/read",
        "resources/templates/list",
        "resources/subscribe",
        "resources/unsubscribe",
        "prompts/list",
        "prompts/get",
        "logging/setLevel",
    ];
    let method = request.method.as_str();
    if !KNOWN.contains(&method) {
        return rmcp::ErrorData::new(
            rmcp::model::ErrorCode::METHOD_NOT_FOUND,
            format!("Method not found: {method}"),
            None,
        );
    }
    let params = request.params.clone().unwrap_or(Value::Null);
    let problem = if method == "tools/call" {
        match serde_json::from_value::<CallToolRequestParams>(params.clone()) {
            Err(e) => e.to_string(),
            Ok(_) => "the params do not match the method".to_owned(),
        }
    } else {
        "the params do not match the method".to_owned()
    };
    let problem = if method == "tools/call" && params.get("name").is_none_or(|n| !n.is_string()) {
        "`name` (a string) is missing".to_owned()
    } else if method == "tools/call"
        && params
            .get("arguments")
            .is_some_and(|a| !a.is_object() && !a.is_null())
    {
        "`arguments` must be an object".to_owned()
    } else {
        problem
    };
    rmcp::ErrorData::invalid_params(format!("Invalid params for {method}: {problem}"), None)
}

/// Why a toolset could not be made or could not connect.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum McpClientError {
    /// The command line was empty or its quoting unbalanced.
    #[error("invalid MCP server command line `{command}`: {reason}")]
    InvalidCommand {
        /// The command line as given.
        command: String,
        /// What is wrong with it.
        reason: String,
    },
    /// Connecting or listing the tools failed.
    #[error("{0}")]
    Connect(#[source] ToolError),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transport_wrappers_are_left_out() {
        let io = std::io::Error::new(std::io::ErrorKind::ConnectionRefused, "connection refused");
        let wrapped = rmcp::transport::DynamicTransportError::from_parts(
            "rmcp::transport::worker::WorkerTransport<Something>",
            std::any::TypeId::of::<u8>(),
            Box::new(io),
        );
        let error = ClientInitializeError::TransportError {
            error: wrapped,
            context: "send initialize request".into(),
        };
        let text = init_error_text(&error);
        assert_eq!(text, "connection refused");
        assert!(!text.contains("rmcp::"), "{text}");
    }

    #[test]
    fn auth_failures_are_recognised() {
        let e: StreamableHttpError<reqwest::Error> =
            StreamableHttpError::AuthRequired(AuthRequiredError::new("Bearer".into()));
        assert_eq!(auth_problem(&e), Some(AuthProblem::Unauthorized));
        let e: StreamableHttpError<reqwest::Error> =
            StreamableHttpError::UnexpectedServerResponse("HTTP 403 Forbidden: no".into());
        assert_eq!(auth_problem(&e), Some(AuthProblem::Forbidden));
        let e = std::io::Error::other("x");
        assert_eq!(auth_problem(&e), None);
    }
}

/// Why serving stopped or could not start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum McpServeError {
    /// Binding, accepting or reading and writing failed.
    #[error("MCP server I/O failed: {0}")]
    Io(#[from] std::io::Error),
    /// The MCP handshake with the client failed.
    #[error("MCP handshake failed: {0}")]
    Handshake(String),
    /// The serving task ended abnormally.
    #[error("the MCP server task failed: {0}")]
    Task(String),
    /// No bearer token, and an address that is not loopback.
    #[error(
        "refusing to serve MCP on {addr} without a bearer token: anyone who can reach it could \
         call the tools; set a bearer token, listen on a loopback address (127.0.0.1), or allow \
         unauthenticated access explicitly"
    )]
    Unauthenticated {
        /// The address.
        addr: SocketAddr,
    },
}
