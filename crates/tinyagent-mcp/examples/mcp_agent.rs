//! An agent whose tools come from an MCP server.
//!
//! ```text
//! cargo run -p tinyagent-mcp --example mcp_agent                       # the demo tools, served in-process
//! cargo run -p tinyagent-mcp --example mcp_agent -- python3 server.py  # any stdio MCP server
//! cargo run -p tinyagent-mcp --example mcp_agent -- http://127.0.0.1:8000/mcp
//! ```
//!
//! Without arguments it serves the tutorial's demo tools over streamable HTTP on 127.0.0.1 and
//! connects to them, so the whole round trip runs in one process. It lists the tools it got
//! from the server; then, when a model is configured (`OPENAI_API_KEY`, or `OPENAI_BASE_URL`
//! for Ollama, llama.cpp's server or any OpenAI-compatible server, with `OPENAI_MODEL`), an
//! agent answers a question with them. See [`configured_model`].

use std::sync::Arc;

use tinyagent::{AgentExt, LlmAgent, Model, Session};
use tinyagent_mcp::{McpServer, McpToolset};
use tinyagent_openai::{ConfigError, OpenAiModel};

/// The model the agent talks to, or `None` when none is configured: an OpenAI-compatible
/// provider configured from the environment. Any type implementing `tinyagent::Model` works
/// here.
fn configured_model() -> Result<Option<Arc<dyn Model>>, ConfigError> {
    match OpenAiModel::from_env() {
        Ok(model) => Ok(Some(Arc::new(model))),
        Err(ConfigError::NotConfigured { .. }) => Ok(None),
        Err(err) => Err(err),
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut _served = None;
    let toolset = match args.first() {
        Some(url) if url.starts_with("http://") || url.starts_with("https://") => {
            McpToolset::http(url.as_str())
        }
        Some(_) => McpToolset::stdio(&args.join(" "))?,
        None => {
            let handle = McpServer::new(tinyagent_demo::all_tools())
                .server_name("demo-tools")
                .serve_http("127.0.0.1:0")
                .await?;
            println!("serving the demo tools over MCP at {}", handle.url());
            let toolset = McpToolset::http(handle.url()).server_name("demo-tools");
            _served = Some(handle);
            toolset
        }
    };

    let tools = toolset.tools().await?;
    println!("tools from MCP server `{}`:", toolset.name());
    for tool in &tools {
        println!("  {:<20} {}", tool.name(), tool.description());
    }

    let Some(model) = configured_model()? else {
        println!();
        println!("No model is configured, so the agent does not run. Set OPENAI_API_KEY (OpenAI),");
        println!("or OPENAI_BASE_URL=http://localhost:11434/v1 with OPENAI_MODEL (Ollama, or any");
        println!("OpenAI-compatible server); the agent then answers with these MCP tools.");
        return Ok(());
    };

    let agent = LlmAgent::builder("mcp-assistant")
        .model(model)
        .instruction("你是一个全能助手。需要时调用工具，然后用中文简洁地回答。")
        .tool_resolver(toolset)
        .build()?;
    let answer = agent.ask(&Session::new(), "北京天气怎么样？").await?;
    println!("{answer}");
    Ok(())
}
