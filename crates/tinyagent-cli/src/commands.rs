//! The subcommands: `run`, `chat`, `tools`, `serve-mcp`.

use std::io::{self, BufRead, IsTerminal, Read, Write};

use anstyle::Style;
use futures::StreamExt;
use serde_json::json;
use std::sync::Arc;
use std::time::Duration;

use tinyagent::agent::{Decisions, PendingCall};
use tinyagent::tools::middleware::Approval;
use tinyagent::{Agent, AgentError, Event, Invocation, Session, Tool, tools};
use tinyagent_mcp::McpServer;
use tokio::runtime::Runtime;

use crate::cli::{AgentArgs, ToolArgs};
use crate::error::CliError;
use crate::input::Input;
use crate::render::{Mode, Renderer};
use crate::setup::{self, Assembled};

mod eval;

pub use eval::{EvalArgs, eval};

/// `tinyagent run`: one question, one answer.
pub fn run(runtime: &Runtime, question: Vec<String>, args: &AgentArgs) -> Result<(), CliError> {
    let mut question = question.join(" ");
    if question.trim().is_empty() && !io::stdin().is_terminal() {
        io::stdin().read_to_string(&mut question).map_err(|e| {
            CliError::failure(
                "input",
                format!("cannot read the question from standard input: {e}"),
            )
        })?;
    }
    let question = question.trim().to_owned();
    if question.is_empty() {
        return Err(CliError::usage("no question given").with_hint(
            "tinyagent run \"北京天气怎么样？\" (or pipe the question into tinyagent run)",
        ));
    }
    let mut renderer = Renderer::new(Mode::from_args(&args.output));
    let result = runtime.block_on(async {
        let assembled = tokio::select! {
            assembled = setup::assemble(args) => assembled?,
            _ = tokio::signal::ctrl_c() => return Err(CliError::interrupted()),
        };
        let session = Session::new();
        let mut decide = |call: &PendingCall| {
            if io::stdin().is_terminal() {
                ask_on_terminal(call, &mut || {
                    let mut line = String::new();
                    io::stdin().read_line(&mut line).map_err(|e| {
                        CliError::failure("input", format!("cannot read an answer: {e}"))
                    })?;
                    Ok(Some(line))
                })
            } else {
                Ok(Approval::deny(
                    "the call needs approval and there was no terminal to ask on",
                ))
            }
        };
        tokio::select! {
            result = turn(&assembled, &session, &question, &mut renderer, &mut decide) => result,
            _ = tokio::signal::ctrl_c() => Err(CliError::interrupted()),
        }
    });
    if let Err(error) = &result {
        renderer.failed(error);
    }
    result
}

/// One user message through the agent, every event shown. A run that pauses for approval
/// (`--confirm`) asks `decide` about each waiting call, then goes on.
async fn turn(
    assembled: &Assembled,
    session: &Session,
    message: &str,
    renderer: &mut Renderer,
    decide: &mut dyn FnMut(&PendingCall) -> Result<Approval, CliError>,
) -> Result<(), CliError> {
    renderer.thinking("thinking");
    let mut events = assembled
        .agent
        .run(Invocation::new(session.clone(), message));
    // Whether `message` still has to run (the session had a paused run to finish first).
    let mut message_waits = false;
    loop {
        let mut pending = None;
        while let Some(event) = events.next().await {
            match event {
                Ok(Event::Paused { pending: calls, .. }) => pending = Some(calls),
                // A run that paused and failed after its decided calls ran: go on from there.
                Err(AgentError::Paused { pending: calls, .. }) => {
                    pending = Some(calls);
                    message_waits = true;
                }
                Ok(event) => renderer.event(&event)?,
                Err(err) => {
                    renderer.stop();
                    return Err(CliError::from_agent(err, assembled.server.as_deref()));
                }
            }
        }
        renderer.stop();
        let Some(pending) = pending else {
            if std::mem::take(&mut message_waits) {
                renderer.thinking("thinking");
                events = assembled
                    .agent
                    .run(Invocation::new(session.clone(), message));
                continue;
            }
            return Ok(());
        };
        let mut decisions = Decisions::new();
        for call in &pending {
            decisions = decisions.decide(call.call.id.clone(), decide(call)?);
        }
        renderer.thinking("thinking");
        events = assembled
            .agent
            .run(Invocation::resume(session.clone(), decisions));
    }
}

/// Asks on the terminal whether a waiting call may run: `y` approves, anything else denies.
/// Without a terminal to ask on (`interactive` false and no line), the call is denied.
fn ask_on_terminal(
    call: &PendingCall,
    read_line: &mut dyn FnMut() -> Result<Option<String>, CliError>,
) -> Result<Approval, CliError> {
    {
        let mut err = anstream::stderr().lock();
        let bold = Style::new().bold();
        let _ = write!(
            err,
            "{bold}?{bold:#} run {bold}{}{bold:#} {} — {} [y/N] ",
            call.call.name, call.call.arguments, call.reason
        );
        let _ = err.flush();
    }
    let answer = read_line()?.unwrap_or_default();
    if !io::stdin().is_terminal() {
        // A terminal echoes the answer and its newline; piped input does not.
        eprintln!("{}", answer.trim());
    }
    Ok(match answer.trim().to_lowercase().as_str() {
        "y" | "yes" | "是" | "好" => Approval::Approve,
        _ => Approval::deny("the user declined this call"),
    })
}

const CHAT_HELP: &str = "\
/help   this help
/tools  the tools the agent has
/clear  forget the conversation
/exit   leave (or Ctrl-D)
Ctrl-C stops the answer being written.";

/// `tinyagent chat`: a conversation in one session.
pub fn chat(runtime: &Runtime, args: &AgentArgs) -> Result<(), CliError> {
    let mode = Mode::from_args(&args.output);
    let assembled = runtime.block_on(async {
        tokio::select! {
            assembled = setup::assemble(args) => assembled,
            _ = tokio::signal::ctrl_c() => Err(CliError::interrupted()),
        }
    });
    let mut renderer = Renderer::new(mode);
    let assembled = match assembled {
        Ok(assembled) => assembled,
        Err(error) => {
            renderer.failed(&error);
            return Err(error);
        }
    };
    let interactive = io::stdin().is_terminal();
    if mode == Mode::Human {
        let dim = Style::new().dimmed();
        let mut err = anstream::stderr().lock();
        let _ = writeln!(
            err,
            "{dim}tinyagent chat · model {} · tools: {} · /help for commands, Ctrl-D to leave{dim:#}",
            assembled.agent.model().name(),
            if assembled.tool_names.is_empty() {
                "none".to_owned()
            } else {
                assembled.tool_names.join(", ")
            }
        );
    }
    let mut input = if interactive {
        Input::editor()?
    } else {
        Input::Lines(io::stdin().lock().lines())
    };
    let mut session = Session::new();
    while let Some(line) = input.read_line()? {
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        match line {
            "/exit" | "/quit" => break,
            "/help" => {
                eprintln!("{CHAT_HELP}");
                continue;
            }
            "/clear" => {
                session = Session::new();
                eprintln!("(conversation cleared)");
                continue;
            }
            "/tools" => {
                eprintln!("{}", assembled.tool_names.join(", "));
                continue;
            }
            _ => {}
        }
        let mut decide = |call: &PendingCall| ask_on_terminal(call, &mut || input.read_line());
        let result = runtime.block_on(async {
            tokio::select! {
                result = turn(&assembled, &session, line, &mut renderer, &mut decide) => result,
                _ = tokio::signal::ctrl_c() => Err(CliError::interrupted()),
            }
        });
        if let Err(error) = result {
            renderer.failed(&error);
            if !interactive {
                input.save();
                return Err(error);
            }
            if error.code == crate::error::EXIT_INTERRUPTED {
                eprintln!("(interrupted)");
            } else {
                error.print();
            }
        }
    }
    input.save();
    Ok(())
}

/// `tinyagent tools`: every tool the options give; MCP tools offered under another name than
/// the server's show it, and tools a server lists but that are not offered are named on
/// standard error with the reason.
pub async fn tools(args: &ToolArgs, as_json: bool) -> Result<(), CliError> {
    let list = setup::all_tools(args).await?;
    for skipped in &list.not_offered {
        eprintln!(
            "note: MCP server {}: tool {:?} is not offered: {}",
            skipped.source,
            skipped.info.remote_name,
            skipped.info.not_offered.as_deref().unwrap_or_default()
        );
    }
    let tools = list.tools;
    let mut out = anstream::stdout().lock();
    let written = if as_json {
        let list: Vec<_> = tools
            .iter()
            .map(|t| {
                let mut entry = json!({
                    "name": t.tool.name(),
                    "description": t.tool.description(),
                    "input_schema": t.tool.input_schema(),
                    "source": t.source,
                });
                if let Some(remote) = &t.remote_name {
                    entry["remote_name"] = json!(remote);
                }
                entry
            })
            .collect();
        serde_json::to_string_pretty(&list)
            .map_err(io::Error::other)
            .and_then(|text| writeln!(out, "{text}"))
    } else {
        tool_table(&tools, &mut out)
    };
    written
        .and_then(|()| out.flush())
        .or_else(crate::error::output_error)
}

fn tool_table(tools: &[setup::SourcedTool], out: &mut impl Write) -> io::Result<()> {
    if tools.is_empty() {
        return writeln!(out, "no tools (see --tools, --mcp and --mcp-url)");
    }
    let rows: Vec<[String; 4]> = tools
        .iter()
        .map(|t| {
            [
                t.tool.name().to_owned(),
                setup::argument_summary(t.tool.input_schema()),
                match &t.remote_name {
                    // A tool offered under another name than the server's shows the server's.
                    Some(remote) if remote != t.tool.name() => {
                        format!("{} ({remote:?})", t.source)
                    }
                    _ => t.source.clone(),
                },
                crate::error::one_line(t.tool.description()),
            ]
        })
        .collect();
    let header = [
        "NAME",
        "ARGUMENTS (* required)",
        "SOURCE (server's name)",
        "DESCRIPTION",
    ];
    let width = |i: usize| {
        rows.iter()
            .map(|r| r[i].chars().count())
            .chain([header[i].chars().count()])
            .max()
            .unwrap_or(0)
    };
    let widths = [width(0), width(1), width(2)];
    let bold = Style::new().bold();
    let line = |cells: [&str; 4]| {
        let mut text = String::new();
        for (i, cell) in cells.iter().take(3).enumerate() {
            text.push_str(cell);
            text.push_str(&" ".repeat(widths[i] - cell.chars().count() + 2));
        }
        text.push_str(cells[3]);
        text
    };
    writeln!(out, "{bold}{}{bold:#}", line(header))?;
    for row in &rows {
        writeln!(out, "{}", line([&row[0], &row[1], &row[2], &row[3]]))?;
    }
    Ok(())
}

/// `tinyagent serve-mcp`: tools over MCP — the demo tools, or those the tool options give,
/// MCP servers' included (a gateway). Each served tool is wrapped with logging and a timeout.
/// The HTTP options of `serve-mcp --http`.
#[derive(Debug, Clone, Default)]
pub struct McpHttpOptions {
    /// Serve a non-loopback address without a token.
    pub allow_unauthenticated: bool,
    /// Host names clients use besides the address itself.
    pub allowed_hosts: Vec<String>,
    /// The most connections at once.
    pub max_connections: usize,
}

pub async fn serve_mcp(
    http: Option<String>,
    bearer_token: Option<String>,
    call_timeout: Duration,
    options: McpHttpOptions,
    args: &ToolArgs,
) -> Result<(), CliError> {
    let default_tools = args.tools.is_empty()
        && args.mcp.is_empty()
        && args.mcp_url.is_empty()
        && args.a2a.is_empty();
    // The MCP servers' connections live as long as the server serves their tools.
    let mut toolsets = Vec::new();
    let tools: Vec<Arc<dyn Tool>> = if default_tools {
        tinyagent_demo::all_tools()
    } else {
        let list = setup::all_tools(args).await?;
        toolsets = list.toolsets;
        for skipped in &list.not_offered {
            tracing::warn!(server = %skipped.source, tool = %skipped.info.remote_name,
                reason = skipped.info.not_offered.as_deref().unwrap_or_default(),
                "MCP tool not served");
        }
        list.tools.into_iter().map(|t| t.tool).collect()
    };
    let names: Vec<String> = tools.iter().map(|t| t.name().to_owned()).collect();
    let mut seen = std::collections::HashSet::new();
    if let Some(twice) = names.iter().find(|n| !seen.insert(n.as_str())) {
        return Err(CliError::usage(format!(
            "two tools are named {twice:?}; a server cannot serve both"
        ))
        .with_hint("give the MCP servers' tools distinct names (or leave the built-in ones out with --tools none)"));
    }
    let tools = tools.into_iter().map(|tool| {
        tools::wrap_tool(
            tool,
            [tools::with_logging(), tools::with_timeout(call_timeout)],
        )
    });
    let description = if default_tools {
        "The demo tools of tinyagent: weather and translator (both return fixed demo data, not \
         real weather or translations), calculator, current time."
            .to_owned()
    } else {
        format!("Tools served by tinyagent: {}.", names.join(", "))
    };
    // A gateway also passes the prompts and resources of the servers it fronts.
    let server = crate::gateway::pass_through(McpServer::new(tools), &toolsets).await;
    let mut server = server
        .server_name("tinyagent")
        .version(env!("CARGO_PKG_VERSION"))
        .instructions(description);
    crate::gateway::forward_updates(&server, &toolsets);
    let token = bearer_token.or_else(|| {
        std::env::var(ENV_MCP_TOKEN)
            .ok()
            .filter(|t| !t.trim().is_empty())
    });
    let failed = |e: tinyagent_mcp::McpServeError| CliError::failure("mcp", e);
    match http {
        None => server.serve_stdio().await.map_err(failed),
        Some(addr) => {
            let guarded = token.is_some();
            if let Some(token) = token {
                server = server.bearer_token(token);
            }
            server = server
                .allow_unauthenticated(options.allow_unauthenticated)
                .http_max_connections(options.max_connections);
            if !options.allowed_hosts.is_empty() {
                server = server.allowed_hosts(options.allowed_hosts);
            }
            let handle = server.serve_http(addr.as_str()).await.map_err(|e| match e {
                tinyagent_mcp::McpServeError::Unauthenticated { addr } => CliError::usage(format!(
                    "refusing to serve MCP on {addr} without a bearer token: anyone who can reach it could call the tools"
                ))
                .with_hint(
                    "add --bearer-token TOKEN (or set TINYAGENT_MCP_TOKEN), listen on 127.0.0.1, or pass --allow-unauthenticated",
                ),
                e => CliError::failure("mcp", format!("cannot serve MCP at {addr}: {e}"))
                    .with_hint("is the address free? use HOST:PORT, such as 127.0.0.1:8000"),
            })?;
            eprintln!(
                "serving {} tools over MCP at {}{} (Ctrl-C to stop)",
                names.len(),
                handle.url(),
                if guarded {
                    ", bearer token required"
                } else {
                    ""
                }
            );
            let _ = tokio::signal::ctrl_c().await;
            handle.shutdown().await;
            Ok(())
        }
    }
}

/// The environment variable holding the bearer token `serve-mcp --http` requires.
pub const ENV_MCP_TOKEN: &str = "TINYAGENT_MCP_TOKEN";
