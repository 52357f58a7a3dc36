//! Why a toolset could not be made or connect ([`McpClientError`]), and a failed handshake as
//! text a person can act on (an HTTP 401 or 403 told apart).

use rmcp::service::ClientInitializeError;
use rmcp::transport::streamable_http_client::{
    AuthRequiredError, InsufficientScopeError, StreamableHttpError,
};
use tinyagent::ToolError;

use crate::protocol::errors::chain_text;

/// An HTTP server's refusal to let us in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum AuthProblem {
    /// 401: no credentials, or wrong ones.
    Unauthorized,
    /// 403: credentials that are not enough.
    Forbidden,
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

/// A failed connection attempt to server `label`, saying why (`text`).
pub(crate) fn connect_error(label: &str, text: impl std::fmt::Display) -> ToolError {
    ToolError::unavailable(format!("could not connect to MCP server `{label}`: {text}"))
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
