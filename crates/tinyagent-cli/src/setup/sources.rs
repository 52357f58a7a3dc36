//! Where the agent's tools come from: the built-in tools `--tools` names, remote A2A agents,
//! and MCP servers, connected.

use std::path::PathBuf;
use std::sync::Arc;

use serde_json::Value;
use tinyagent::Tool;
use tinyagent::ToolErrorKind;
use tinyagent_mcp::{McpClientError, McpToolInfo, McpToolset};

use crate::cli::ToolArgs;
use crate::error::CliError;

/// The names `--tools demo` stands for.
pub const DEMO_TOOLS: [&str; 3] = ["get_weather", "calculator", "get_current_time"];

/// The built-in tools the options ask for: `--tools` values, or the demo tools when no tool
/// option is given at all.
pub fn builtin_tools(args: &ToolArgs) -> Result<Vec<Arc<dyn Tool>>, CliError> {
    let mut names: Vec<&str> = Vec::new();
    let requested: Vec<&str> = if args.tools.is_empty()
        && args.mcp.is_empty()
        && args.mcp_url.is_empty()
        && args.a2a.is_empty()
    {
        vec!["demo"]
    } else {
        args.tools
            .iter()
            .map(|t| t.trim())
            .filter(|t| !t.is_empty())
            .collect()
    };
    for item in requested {
        match item {
            "none" => {}
            "demo" => names.extend(DEMO_TOOLS),
            "all" => names.extend(DEMO_TOOLS.into_iter().chain(["translator"])),
            "get_weather" | "weather" => names.push("get_weather"),
            "calculator" => names.push("calculator"),
            "get_current_time" | "time" => names.push("get_current_time"),
            "translator" => names.push("translator"),
            other => {
                return Err(CliError::usage(format!("unknown tool {other:?} in --tools")).with_hint(
                    "use demo, all, none, get_weather, calculator, get_current_time or translator",
                ));
            }
        }
    }
    let mut tools: Vec<Arc<dyn Tool>> = Vec::new();
    for name in names {
        if tools.iter().any(|t| t.name() == name) {
            continue;
        }
        tools.push(match name {
            "get_weather" => tinyagent_demo::weather_tool(),
            "calculator" => tinyagent_demo::calculator_tool(),
            "get_current_time" => tinyagent_demo::time_tool(),
            _ => tinyagent_demo::translator_tool(),
        });
    }
    Ok(tools)
}

/// The remote A2A agents the options give, as tools (an agent whose card cannot be read
/// fails here).
pub async fn a2a_tools(args: &ToolArgs) -> Result<Vec<Arc<dyn Tool>>, CliError> {
    let key = std::env::var("TINYAGENT_A2A_KEY")
        .ok()
        .filter(|k| !k.is_empty());
    let mut tools: Vec<Arc<dyn Tool>> = Vec::new();
    for url in &args.a2a {
        if !(url.starts_with("http://") || url.starts_with("https://")) {
            return Err(CliError::usage(format!(
                "invalid A2A agent URL {:?}: expected http:// or https://, such as \
                 http://127.0.0.1:8080/a2a/assistant",
                tinyagent::redact::url(url)
            )));
        }
        let mut builder = tinyagent_a2a::A2aAgentTool::builder(url.as_str());
        if let Some(key) = &key {
            builder = builder.bearer_token(key.as_str());
        }
        let tool = builder.connect().await.map_err(|e| {
            CliError::failure("a2a", tinyagent::redact::url(&e.to_string())).with_hint(
                "check the URL (the agent's base, without /.well-known/agent-card.json) and, \
                 for a server with keys, TINYAGENT_A2A_KEY",
            )
        })?;
        tools.push(Arc::new(tool));
    }
    Ok(tools)
}

/// The MCP toolsets the options give, connected (a server that fails to start fails here).
pub async fn connect_toolsets(args: &ToolArgs) -> Result<Vec<McpToolset>, CliError> {
    let mut toolsets = Vec::new();
    for command in &args.mcp {
        let toolset = McpToolset::stdio(command)
            .map(|t| t.server_name(command.as_str()))
            .map_err(|e| {
                CliError::usage(e)
                    .with_hint("--mcp takes a command line such as \"python3 server.py\"")
            })?;
        toolsets.push(toolset);
    }
    if let Some(problem) = args.mcp_header.iter().find_map(|h| h.problem.clone()) {
        return Err(CliError::usage(problem)
            .with_hint("--mcp-header 'Authorization: Bearer TOKEN' (repeatable)"));
    }
    if args.mcp_oauth && args.mcp_url.is_empty() {
        return Err(
            CliError::usage("--mcp-oauth needs an --mcp-url server to authorize with")
                .with_hint("OAuth is for streamable HTTP servers (--mcp-url URL --mcp-oauth)"),
        );
    }
    if !args.mcp_header.is_empty() && args.mcp_url.is_empty() {
        return Err(
            CliError::usage("--mcp-header needs an --mcp-url server to send it to").with_hint(
                "headers go to streamable HTTP servers (--mcp-url), not to --mcp commands",
            ),
        );
    }
    for url in &args.mcp_url {
        if !(url.starts_with("http://") || url.starts_with("https://")) {
            return Err(CliError::usage(format!(
                "invalid MCP server URL {:?}: expected http:// or https://, such as http://127.0.0.1:8000/mcp",
                tinyagent::redact::url(url)
            )));
        }
        let mut toolset = McpToolset::http(url.as_str());
        for header in &args.mcp_header {
            toolset = toolset.header(header.name.as_str(), header.value.as_str());
        }
        if args.mcp_oauth {
            toolset = toolset.oauth(cli_oauth(url));
        }
        toolsets.push(toolset);
    }
    let connected = futures::future::join_all(
        toolsets
            .iter()
            .map(|t| async move { (t, t.connect().await) }),
    )
    .await;
    for (toolset, result) in connected {
        if let Err(e) = result {
            let is_url = args.mcp_url.iter().any(|u| u == toolset.name());
            let (message, kind) = match &e {
                McpClientError::Connect(e) => (e.message().to_owned(), Some(e.kind())),
                other => (other.to_string(), None),
            };
            let oauth_hint;
            let hint = if kind == Some(ToolErrorKind::Denied) {
                if args.mcp_oauth {
                    oauth_hint = match oauth_dir() {
                        Some(dir) => format!(
                            "authorization did not succeed; run again to retry, or delete the \
                             stored tokens in {} to start over",
                            dir.display()
                        ),
                        None => "authorization did not succeed; run again to retry".to_owned(),
                    };
                    oauth_hint.as_str()
                } else if args.mcp_header.is_empty() {
                    "the server wants credentials: --mcp-header 'Authorization: Bearer TOKEN', \
                     or --mcp-oauth for a server that uses OAuth"
                } else {
                    "check the credentials given with --mcp-header"
                }
            } else if kind == Some(ToolErrorKind::InvalidInput) {
                "check the --mcp-header options"
            } else if is_url {
                "check that an MCP server listens at that URL (streamable HTTP, usually ending in /mcp)"
            } else {
                "check that the command runs an MCP server on its standard input and output"
            };
            return Err(CliError::failure("mcp", message).with_hint(hint));
        }
    }
    Ok(toolsets)
}

/// A tool and where it comes from (`demo`, or an MCP server's name).
pub struct SourcedTool {
    /// The tool.
    pub tool: Arc<dyn Tool>,
    /// Where it comes from.
    pub source: String,
    /// The server's name for it, for an MCP tool.
    pub remote_name: Option<String>,
}

/// A tool of an MCP server that is not offered, and why.
pub struct NotOffered {
    /// The server's name.
    pub source: String,
    /// What the server says about the tool.
    pub info: McpToolInfo,
}

/// Every tool the options give, and the MCP tools that are not offered.
pub struct ToolList {
    /// The offered tools, in order: built-in tools, then each server's.
    pub tools: Vec<SourcedTool>,
    /// The servers' tools that are not offered.
    pub not_offered: Vec<NotOffered>,
    /// The connections to the servers: their tools work while these live.
    pub toolsets: Vec<McpToolset>,
}

/// Every tool the options give, in order: built-in tools, then each server's (with the
/// server's names, and the tools a server lists that are not offered).
pub async fn all_tools(args: &ToolArgs) -> Result<ToolList, CliError> {
    let mut out: Vec<SourcedTool> = builtin_tools(args)?
        .into_iter()
        .map(|tool| SourcedTool {
            tool,
            source: "demo".to_owned(),
            remote_name: None,
        })
        .collect();
    for tool in a2a_tools(args).await? {
        out.push(SourcedTool {
            tool,
            source: "a2a".to_owned(),
            remote_name: None,
        });
    }
    let mut not_offered = Vec::new();
    let toolsets = connect_toolsets(args).await?;
    for toolset in &toolsets {
        let failed = |e: tinyagent::ToolError| {
            CliError::failure(
                "mcp",
                format!("MCP server {} failed: {}", toolset.name(), e.message()),
            )
        };
        let tools = toolset.tools().await.map_err(failed)?;
        let infos = toolset.tool_infos().await.map_err(failed)?;
        let source = toolset.name().to_owned();
        for tool in tools {
            let remote_name = infos
                .iter()
                .find(|i| i.name == tool.name() && i.not_offered.is_none())
                .map(|i| i.remote_name.clone());
            out.push(SourcedTool {
                tool,
                source: source.clone(),
                remote_name,
            });
        }
        not_offered.extend(
            infos
                .into_iter()
                .filter(|i| i.not_offered.is_some())
                .map(|info| NotOffered {
                    source: source.clone(),
                    info,
                }),
        );
    }
    Ok(ToolList {
        tools: out,
        not_offered,
        toolsets,
    })
}

/// The names of a schema's arguments, required ones marked with `*`.
pub fn argument_summary(schema: &Value) -> String {
    let required: Vec<&str> = schema["required"]
        .as_array()
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let Some(properties) = schema["properties"].as_object() else {
        return String::new();
    };
    properties
        .keys()
        .map(|name| {
            if required.contains(&name.as_str()) {
                format!("{name}*")
            } else {
                name.clone()
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests;

/// OAuth for the CLI: the authorization URL on standard error, the redirect on a loopback
/// port, tokens in `$XDG_CONFIG_HOME/tinyagent/mcp-oauth/` (or `~/.config/...`), one file per
/// server URL.
fn cli_oauth(url: &str) -> tinyagent_mcp::McpOAuth {
    let shown = url.to_owned();
    let mut oauth = tinyagent_mcp::McpOAuth::loopback(move |authorization_url| {
        eprintln!(
            "The MCP server {shown} asks you to authorize tinyagent. Open this URL in a browser, \
             sign in and allow access (waiting up to 5 minutes):\n\n  {authorization_url}\n"
        );
    })
    .client_name("tinyagent CLI");
    if let Some(dir) = oauth_dir() {
        oauth = oauth.credentials_file(dir.join(credentials_file_name(url)));
    }
    oauth
}

/// Where the CLI keeps OAuth tokens, if the user has a configuration folder.
pub fn oauth_dir() -> Option<PathBuf> {
    let base = std::env::var_os("XDG_CONFIG_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".config")))?;
    Some(base.join("tinyagent").join("mcp-oauth"))
}

/// A file name for a server URL: its letters and digits, other characters as `_`, cut to 120.
fn credentials_file_name(url: &str) -> String {
    let stem: String = url
        .trim_start_matches("https://")
        .trim_start_matches("http://")
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '.' {
                c
            } else {
                '_'
            }
        })
        .take(120)
        .collect();
    format!("{stem}.json")
}
