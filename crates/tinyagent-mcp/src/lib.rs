//! # tinyagent-mcp
//!
//! [MCP](https://modelcontextprotocol.io) both ways for tinyagent, on rmcp (the official Rust
//! MCP SDK):
//!
//! - [`McpToolset`]: the tools of an MCP server, over stdio (a child process) or streamable
//!   HTTP, offered to an agent as a [`ToolResolver`](tinyagent::tools::ToolResolver);
//! - [`McpServer`]: any set of tinyagent tools, agent tools included, served to MCP clients
//!   over stdio or streamable HTTP.
//!
//! ```no_run
//! use tinyagent::LlmAgent;
//! use tinyagent::testing::ScriptedModel;
//! use tinyagent_mcp::{McpServer, McpToolset};
//!
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! // Serve the demo tools over streamable HTTP...
//! let handle = McpServer::new(tinyagent_demo::all_tools()).serve_http("127.0.0.1:0").await?;
//!
//! // ...and give an agent the tools of that server.
//! let toolset = McpToolset::http(handle.url()).prefix("demo_");
//! let agent = LlmAgent::builder("assistant")
//!     .model(ScriptedModel::new([]))
//!     .tool_resolver(toolset)
//!     .build()?;
//! # Ok(()) }
//! ```

mod client;
mod protocol;
mod server;

#[doc(hidden)]
#[path = "fuzz.rs"]
pub mod __fuzz;

pub use client::{
    DEFAULT_AUTHORIZATION_TIMEOUT, DEFAULT_CALL_TIMEOUT, DEFAULT_CONNECT_TIMEOUT, ElicitationFn,
    ElicitationHandler, McpClientError, McpHealth, McpOAuth, McpPromptInfo, McpResourceInfo,
    McpToolInfo, McpToolset, elicitation_fn,
};
pub use protocol::completion::{McpCompletion, McpCompletionRequest};
pub use protocol::content::{
    DEFAULT_MAX_RESULT_BYTES, content_block, content_part, result_text, tool_output,
    truncate_result,
};
pub use protocol::prompt_message::{McpPromptMessage, PromptRole};
pub use server::{
    DEFAULT_HTTP_HEADER_TIMEOUT, DEFAULT_HTTP_MAX_CONNECTIONS, HttpServerHandle, MCP_HTTP_PATH,
    McpHttpService, McpPrompt, McpResource, McpResourceTemplate, McpServeError, McpServer,
    ResourceBody,
};

/// rmcp, the MCP SDK this crate is built on, for its model types and transports.
pub use rmcp;
