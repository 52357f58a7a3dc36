//! Serves the demo tools (weather, calculator, current time, translator) over MCP.
//!
//! ```text
//! serve_demo_tools                     # stdio: for an MCP client that starts this program
//! serve_demo_tools --http 127.0.0.1:8000   # streamable HTTP at http://127.0.0.1:8000/mcp
//! ```
//!
//! Logs go to standard error (set `RUST_LOG`-style levels with `TINYAGENT_MCP_LOG`, default
//! `warn`); on stdio, standard output carries only MCP messages.

use std::process::ExitCode;

use tinyagent_mcp::McpServer;

#[tokio::main]
async fn main() -> ExitCode {
    let level = std::env::var("TINYAGENT_MCP_LOG")
        .ok()
        .and_then(|l| l.parse::<tracing::Level>().ok())
        .unwrap_or(tracing::Level::WARN);
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_max_level(level)
        .with_ansi(false)
        .init();

    let args: Vec<String> = std::env::args().skip(1).collect();
    let server = McpServer::new(tinyagent_demo::all_tools())
        .server_name("tinyagent-demo-tools")
        .instructions("The tutorial's demo tools: weather, calculator, current time, translator.");
    let result = match args.as_slice() {
        [] => server.serve_stdio().await,
        [flag, addr] if flag == "--http" => match server.serve_http(addr.as_str()).await {
            Ok(handle) => {
                eprintln!("serving the demo tools over MCP at {}", handle.url());
                let _ = tokio::signal::ctrl_c().await;
                handle.shutdown().await;
                Ok(())
            }
            Err(e) => Err(e),
        },
        _ => {
            eprintln!("usage: serve_demo_tools [--http ADDRESS]");
            return ExitCode::from(2);
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("serve_demo_tools: {e}");
            ExitCode::FAILURE
        }
    }
}
