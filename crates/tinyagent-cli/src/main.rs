//! `tinyagent`: an agent in the terminal, with the demo tools, MCP tools and any model.
//!
//! ```text
//! tinyagent run "北京天气怎么样？"       # one question, one answer
//! tinyagent chat                        # a conversation, with line editing and history
//! tinyagent tools [--json]              # the tools the options give, with their arguments
//! tinyagent serve-mcp [--http ADDRESS]  # the demo tools over MCP
//! tinyagent serve [--listen ADDRESS]    # the agent over HTTP (OpenAI API, sessions, a page)
//! ```
//!
//! Exit codes: 0 success, 1 runtime failure, 2 usage error, 130 interrupted. Failures print
//! one `error: …` line (and maybe a `hint: …` line) on standard error, never a backtrace.

mod cli;
mod commands;
mod error;
mod eval;
mod gateway;
mod input;
mod render;
mod serve;
mod setup;

/// mimalloc: glibc's malloc serialises frees across threads behind arena locks, which a server
/// running many agents at once pays on every allocation (see docs/benchmarks.md).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::io::IsTerminal;
use std::process::ExitCode;
use std::time::Duration;

use clap::Parser;

use crate::cli::{Cli, Command};
use crate::error::CliError;

fn main() -> ExitCode {
    install_panic_hook();
    let cli = Cli::parse();
    let verbose = match &cli.command {
        Command::Run { agent, .. } | Command::Chat { agent } => agent.output.verbose,
        Command::Tools { .. }
        | Command::Eval { .. }
        | Command::ServeMcp { .. }
        | Command::Serve { .. } => false,
    };
    let serving = match cli.command {
        Command::ServeMcp { .. } => Some(tracing::Level::WARN),
        Command::Serve { .. } => Some(tracing::Level::INFO),
        _ => None,
    };
    let serve_metrics = matches!(cli.command, Command::Serve { .. });

    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            init_logs(verbose, serving, &tinyagent_otel::Telemetry::disabled());
            return report(&CliError::failure(
                "runtime",
                format!("cannot start the async runtime: {e}"),
            ));
        }
    };
    let telemetry = telemetry(&runtime, serve_metrics);
    init_logs(verbose, serving, &telemetry);
    let metrics = telemetry.prometheus().cloned();
    let result = match cli.command {
        Command::Run { question, agent } => commands::run(&runtime, question, &agent),
        Command::Chat { agent } => commands::chat(&runtime, &agent),
        Command::Tools { tools, json } => runtime.block_on(commands::tools(&tools, json)),
        Command::Eval {
            file,
            part,
            report,
            json,
            instruction,
            model,
            tools,
            search,
        } => runtime.block_on(commands::eval(commands::EvalArgs {
            file,
            part,
            report,
            json,
            instruction,
            model,
            tools,
            search,
        })),
        Command::ServeMcp {
            http,
            bearer_token,
            call_timeout,
            allow_unauthenticated,
            allowed_hosts,
            max_connections,
            tools,
        } => runtime.block_on(commands::serve_mcp(
            http,
            bearer_token,
            Duration::from_secs(call_timeout),
            commands::McpHttpOptions {
                allow_unauthenticated,
                allowed_hosts,
                max_connections: max_connections as usize,
            },
            &tools,
        )),
        Command::Serve { serve, agent } => runtime.block_on(serve::serve(&serve, &agent, metrics)),
    };
    // What is still buffered goes to the collector before the runtime stops.
    telemetry.shutdown();
    // Tasks still blocked on standard input or a child process must not hold the exit.
    runtime.shutdown_timeout(Duration::from_millis(200));
    match result {
        Ok(()) => ExitCode::SUCCESS,
        // In JSON mode the renderer has also printed the error as an event on standard output.
        Err(error) => report(&error),
    }
}

/// Prints `error: …` (and `hint: …`) on standard error; returns the error's exit code.
fn report(error: &CliError) -> ExitCode {
    error.print();
    ExitCode::from(error.code)
}

/// A panic prints one line, never a backtrace. (Panics in tools are caught by the agent and
/// become error results; this line says where one happened.)
fn install_panic_hook() {
    std::panic::set_hook(Box::new(|info| {
        let payload = info
            .payload()
            .downcast_ref::<&str>()
            .map(|s| (*s).to_owned())
            .or_else(|| info.payload().downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "unknown panic".to_owned());
        let place = info
            .location()
            .map(|l| format!(" at {}:{}", l.file(), l.line()))
            .unwrap_or_default();
        eprintln!(
            "tinyagent: internal error: {}{place}",
            error::one_line(&payload)
        );
    }));
}

/// OpenTelemetry as the `OTEL_*` variables ask (nothing when none is set), and for `serve`
/// the metrics of `/metrics`. Built inside the runtime: a gRPC exporter needs it. A setting
/// that cannot be used is said once, and the command goes on without telemetry.
fn telemetry(runtime: &tokio::runtime::Runtime, prometheus: bool) -> tinyagent_otel::Telemetry {
    let _entered = runtime.enter();
    tinyagent_otel::Telemetry::builder()
        .prometheus(prometheus)
        .build()
        .unwrap_or_else(|err| {
            eprintln!("warning: {err}; going on without OpenTelemetry");
            tinyagent_otel::Telemetry::disabled()
        })
}

/// Logs on standard error: with `--verbose` (debug level), for the servers (`serve-mcp` from
/// warnings, `serve` from info: a line per request), and for any command at the level
/// `TINYAGENT_LOG` names (`debug`, `info`, `warn`, `error`), which overrides the others. Beside
/// them, `telemetry`'s layer (spans and metrics to OpenTelemetry), whatever the log level.
fn init_logs(
    verbose: bool,
    serving: Option<tracing::Level>,
    telemetry: &tinyagent_otel::Telemetry,
) {
    use tracing_subscriber::Layer as _;
    use tracing_subscriber::filter::FilterExt as _;
    use tracing_subscriber::layer::SubscriberExt;
    use tracing_subscriber::util::SubscriberInitExt;
    let named = std::env::var("TINYAGENT_LOG")
        .ok()
        .and_then(|l| l.trim().parse::<tracing::Level>().ok());
    let level = match (named, serving) {
        (Some(level), _) => Some(level),
        (None, Some(default)) => Some(default),
        (None, None) if verbose => Some(tracing::Level::DEBUG),
        (None, None) => None,
    };
    // No `Option` layer: a `None` beside a filtered layer would turn every span off.
    let registry = tracing_subscriber::registry().with(telemetry.layer());
    let _ = match level {
        Some(level) => {
            // A served request's span repeats what its log line says: not as the line's prefix.
            let not_request = tracing_subscriber::filter::filter_fn(|meta| {
                !(meta.is_span() && meta.target() == "tinyagent_server" && meta.name() == "request")
            });
            registry
                .with(logs().with_filter(targets(level).and(not_request)))
                .try_init()
        }
        None if telemetry.exports_traces() || telemetry.keeps_metrics() => registry.try_init(),
        None => return,
    };
}

/// The log lines' layer: on standard error, coloured on a terminal unless `NO_COLOR` is set.
fn logs<S>() -> impl tracing_subscriber::Layer<S> + Send + Sync
where
    S: tracing::Subscriber + for<'a> tracing_subscriber::registry::LookupSpan<'a>,
{
    tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none())
}

/// What is logged at `level`.
fn targets(level: tracing::Level) -> tracing_subscriber::filter::Targets {
    // llama.cpp's own logs (through llama-cpp-2): errors, and its warnings when debugging.
    // Its info is a dump of the model file's metadata, and its warnings on loading the
    // default model (a token's type it corrects itself) are not the user's to act on.
    let llama = if level >= tracing::Level::DEBUG {
        tracing::Level::WARN
    } else {
        tracing::Level::ERROR
    };
    tracing_subscriber::filter::Targets::new()
        .with_target("llama-cpp-2", llama)
        .with_target("llama_cpp_2", llama)
        .with_default(level)
}
