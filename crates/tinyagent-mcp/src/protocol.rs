//! What both ends of MCP share, the client ([`crate::McpToolset`]) and the server
//! ([`crate::McpServer`]): content converted between MCP and tinyagent, completions, prompt
//! messages, log levels, request ids, the spans of a call, newline-delimited framing, and
//! rmcp's errors as text.

pub(crate) mod completion;
pub(crate) mod content;
pub(crate) mod errors;
pub(crate) mod lines;
pub(crate) mod logging;
pub(crate) mod prompt_message;
pub(crate) mod request_id;
pub(crate) mod telemetry;
