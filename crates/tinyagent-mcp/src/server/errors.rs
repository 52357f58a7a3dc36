//! Why an MCP server stopped ([`McpServeError`]), and the answer to a request rmcp could not
//! type.

use std::net::SocketAddr;

use rmcp::model::{CallToolRequestParams, CustomRequest};
use serde_json::Value;

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
