//! The command line, as clap parses it.

use clap::{Args, Parser, Subcommand};

mod agent;
mod seconds;

pub use seconds::parse_secs;

pub use agent::{AgentArgs, ModelArgs, OutputArgs, Provider, SearchArgs, ToolArgs, ToolSearchMode};

const AFTER_HELP: &str = "\
Models (first match wins):
  1. --local or --model-file: the embedded model (the file given, else the GGUF file named by
     TINYAGENT_GGUF, else models/Qwen2.5-Coder-1.5B-Instruct.Q4_K_M.gguf in the current folder or one
     above it; get it with `bash scripts/fetch-model.sh`).
  2. --base-url or --api-key given, or OPENAI_BASE_URL or OPENAI_API_KEY set: an
     OpenAI-compatible server. Each setting comes from its flag, else its variable
     (OPENAI_BASE_URL, OPENAI_API_KEY, OPENAI_MODEL), else the default
     (https://api.openai.com/v1, no key, gpt-4o-mini). --model alone is an error: it
     names a model on a server, so say which server.
  3. Otherwise: the embedded model.

Waiting for a server: --timeout SECS (or TINYAGENT_TIMEOUT) is how long it may stay
silent, before it starts answering and between two pieces of a reply (default 60); a whole
answer, retries included, may take up to 10 minutes or the timeout, whichever is longer.

Tools: --tools demo (get_weather, calculator, get_current_time) when no tool option is
given; --mcp and --mcp-url add the tools of MCP servers (--mcp-header adds an HTTP header,
such as a bearer token, to the requests to every --mcp-url server). Tool names a model API
would refuse (files.read, 天气) are offered under valid names; `tinyagent tools` shows them.

Telemetry: with OTEL_EXPORTER_OTLP_ENDPOINT set (and the other standard OTEL_* variables),
every command sends its spans (a run, each model call, each tool call) and metrics to that
OpenTelemetry collector; nothing is sent otherwise. See docs/observability.md.

Exit codes:
  0  success
  1  runtime failure: the model, a tool server or the agent failed
  2  usage error: bad arguments
  130  interrupted (Ctrl-C)

Long runs: --fallback names another model, on its own server if need be; --price, --prices
and --max-cost price the calls and cap a run's cost; --answer-at-step-limit makes the last
allowed step answer; --context-budget keeps a long conversation's requests within a size;
--tool-search offers many tools through a search. See docs/cli.md.

Examples:
  tinyagent run \"北京天气怎么样？\"
  tinyagent run --base-url http://localhost:11434/v1 --model qwen2.5:7b \"7 乘以 8 等于多少？\"
  tinyagent run --base-url http://127.0.0.1:8000/v1 --model qwen2.5-7b \\
      --fallback openai:gpt-4o-mini,base-url=https://gw.example.com/v1,api-key-env=GW_KEY \"…\"
  tinyagent run --provider openai --model gpt-4.1 --max-cost 0.50 --answer-at-step-limit \"…\"
  tinyagent run --base-url http://127.0.0.1:8000/v1 --model my-model --price my-model=0.2/0.6 \"…\"
  tinyagent chat --context-budget 8000 --summarizer openai:gpt-4o-mini
  tinyagent run --mcp \"python3 big_server.py\" --tool-search 50 \"…\"
  tinyagent chat --mcp \"python3 server.py\"
  tinyagent tools --json
  tinyagent serve-mcp --http 127.0.0.1:8000
  tinyagent serve --listen 127.0.0.1:8080 --store sqlite:sessions.db";

const EVAL_HELP: &str = "\
The file: one question per line,
  {\"question\": \"北京天气怎么样？\", \"tool\": \"get_weather\", \"arguments\": {\"city\": [\"北京\", \"Beijing\"]}}
  {\"question\": \"你好！\", \"tool\": null, \"part\": \"reporting\"}
  {\"history\": [{\"user\": \"7 乘以 8？\"}, {\"call\": {\"name\": \"calculator\", \"arguments\": {\"a\": 7, \"b\": 8}}, \"result\": \"56\"},
               {\"assistant\": \"等于 56。\"}], \"question\": \"再乘以 2 呢？\", \"tool\": \"calculator\", \"arguments\": {\"a\": 56, \"b\": 2}}
\"tool\" is the tool the question needs, or null for none; \"arguments\" lists the ones that
matter: a string (equal, case ignored), a number, true/false, null (absent), {\"contains\": TEXT},
or an array of alternatives. \"part\" groups questions in the report (such as tuning and
reporting); \"id\" names one.

The answers are cut at --max-tokens (default 64): what is measured is the choice and the
arguments. The project's own set is eval/tools.jsonl. With more tools than --tool-search
allows, each question is offered what the search finds for it, and a call of call_tool counts
as a call of the tool it names.

Examples:
  tinyagent eval eval/tools.jsonl --local --tools all
  tinyagent eval eval/tools.jsonl --tools all --part reporting --report report.json
  tinyagent eval my_questions.jsonl --base-url http://localhost:11434/v1 --model qwen2.5:7b --mcp \"python3 server.py\"
  tinyagent eval my_questions.jsonl --mcp \"python3 big_server.py\" --tool-search on --fallback anthropic";

/// An agent in the terminal: the demo tools, MCP tools and any model.
#[derive(Debug, Parser)]
#[command(name = "tinyagent", version, about, after_help = AFTER_HELP)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
// Parsed once per process: the size of the server's options does not matter.
#[allow(clippy::large_enum_variant)]
pub enum Command {
    /// Ask one question and print the answer (the question is read from standard input when
    /// none is given).
    #[command(after_help = AFTER_HELP)]
    Run {
        /// The question; several words are joined with spaces.
        question: Vec<String>,
        #[command(flatten)]
        agent: AgentArgs,
    },
    /// A conversation in the terminal, with line editing and history; the session is kept
    /// between turns. Type /help for the chat commands.
    #[command(after_help = AFTER_HELP)]
    Chat {
        #[command(flatten)]
        agent: AgentArgs,
    },
    /// Measure how well a model picks tools: ask each question of a JSONL file once (one
    /// model step, the tools the options give) and report the right tool, fully right
    /// arguments, no-tool precision and recall, a confusion table per tool, and the median
    /// time and tokens per question, per part of the file.
    #[command(after_help = EVAL_HELP)]
    Eval {
        /// The questions: one JSON object per line (see below).
        #[arg(value_name = "FILE")]
        file: std::path::PathBuf,
        /// Only the questions of this part (such as `reporting`).
        #[arg(long, value_name = "NAME")]
        part: Option<String>,
        /// Also write the whole report (every question, the figures, the confusion table) as
        /// JSON to this file.
        #[arg(long, value_name = "FILE")]
        report: Option<std::path::PathBuf>,
        /// Print the JSON report on standard output instead of the tables.
        #[arg(long)]
        json: bool,
        /// The agent's instruction (system prompt), replacing the default ("你是一个全能助手。").
        #[arg(long, value_name = "TEXT")]
        instruction: Option<String>,
        #[command(flatten)]
        model: ModelArgs,
        #[command(flatten)]
        tools: ToolArgs,
        #[command(flatten)]
        search: SearchArgs,
    },
    /// List every tool the options give, with its arguments.
    Tools {
        #[command(flatten)]
        tools: ToolArgs,
        /// Print a JSON array of {name, description, input_schema, source} instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Serve tools over MCP, on standard input and output or over streamable HTTP with
    /// --http: the demo tools (weather, calculator, current time, translator) by default, or
    /// the tools the tool options give — MCP servers' too, which makes it a gateway to them.
    ServeMcp {
        /// Serve streamable HTTP at this address (such as 127.0.0.1:8000) instead of stdio;
        /// the endpoint is http://ADDRESS/mcp.
        #[arg(long, value_name = "ADDRESS")]
        http: Option<String>,
        /// Require `Authorization: Bearer TOKEN` on HTTP requests [env: TINYAGENT_MCP_TOKEN].
        #[arg(long, value_name = "TOKEN", requires = "http")]
        bearer_token: Option<String>,
        /// How long one call of a served tool may take, in seconds (default 60).
        #[arg(long, value_name = "SECONDS", default_value_t = 60, value_parser = clap::value_parser!(u64).range(1..=86_400))]
        call_timeout: u64,
        /// Serve HTTP without a bearer token on an address other than loopback: anyone who
        /// reaches it may call the tools.
        #[arg(long, requires = "http")]
        allow_unauthenticated: bool,
        /// A host name clients use to reach the server (repeatable; `name` or `name:port`,
        /// `*` for any): requests naming another `Host` get 403. By default only the address
        /// connected to, and `localhost` on a loopback address.
        #[arg(long = "allowed-host", value_name = "HOST", requires = "http")]
        allowed_hosts: Vec<String>,
        /// How many HTTP connections are kept open at once; one more is answered 503.
        #[arg(long, value_name = "N", default_value_t = 1024, value_parser = clap::value_parser!(u32).range(1..=1_000_000), requires = "http")]
        max_connections: u32,
        #[command(flatten)]
        tools: ToolArgs,
    },
    /// Serve the agent over HTTP: OpenAI's Chat Completions API (any OpenAI client can talk
    /// to it), a session API streaming each run's events, and a page to chat at /.
    #[command(after_help = SERVE_AFTER_HELP)]
    Serve {
        #[command(flatten)]
        serve: Box<ServeArgs>,
        #[command(flatten)]
        agent: AgentArgs,
    },
}

const SERVE_AFTER_HELP: &str = "\
Routes: POST /v1/chat/completions (model = the agent's name), GET /v1/models, POST
/v1/sessions/ID/messages (server-sent events), GET|DELETE /v1/sessions/ID, GET /v1/sessions,
GET /v1/agents, GET /metrics, GET /healthz, GET /readyz, and the page at /.

Clients send `Authorization: Bearer KEY` with one of the --server-key keys (or of
TINYAGENT_API_KEYS, comma-separated). Without keys the server only listens on loopback
addresses, unless --allow-unauthenticated. (--api-key is the model provider's key.)
A key's name (--server-key alice=KEY; alone, key- and a hash of the key) owns its sessions,
under ids of its own; --admin-key lists all and opens any with ?owner=NAME. Names must differ;
logs show names, never keys. --max-cost-per-key caps each key's spending (429).

Other sites' pages cannot drive it through a browser: API bodies must be application/json
(415), a foreign Origin gets 403, and a Host other than the address connected to (or
localhost, on loopback) gets 421 unless listed with --allowed-host (add the name clients or
your reverse proxy use). Client system/developer messages rank below the agent's
instruction (--client-instructions), and client tool results are refused (400).

Stores: memory (lost on exit), sqlite:PATH (a file), postgres://USER@HOST/DB, redis://HOST/.
Several servers sharing one PostgreSQL or Redis serve the same conversations.

Logs: one line per request on standard error (TINYAGENT_LOG=debug|info|warn; default info).
Metrics: GET /metrics in the Prometheus text format, for --admin-key (without keys: anyone).
Traces: a request's traceparent header continues the caller's trace when OTEL_* is set.
Ctrl-C or SIGTERM stops it: no new connections, answers in flight finish (up to
--drain-timeout seconds).

Examples:
  tinyagent serve --listen 127.0.0.1:8080
  tinyagent serve --store sqlite:sessions.db --server-key sk-local-1 --base-url http://localhost:11434/v1 --model qwen2.5:7b
  tinyagent serve --server-key alice=sk-alice --server-key bob=sk-bob --admin-key ops=sk-ops --max-cost-per-key 5/day
  curl -N http://127.0.0.1:8080/v1/chat/completions -H 'Content-Type: application/json' \\
       -d '{\"model\":\"tinyagent\",\"stream\":true,\"messages\":[{\"role\":\"user\",\"content\":\"北京天气怎么样？\"}]}'";

/// Options of `tinyagent serve`.
#[derive(Debug, Args)]
#[command(next_help_heading = "Server")]
pub struct ServeArgs {
    /// The address to listen on; port 0 picks a free one (the address is printed).
    #[arg(long, value_name = "ADDRESS", default_value = "127.0.0.1:8080")]
    pub listen: String,
    /// Where sessions are kept: memory, sqlite:PATH, postgres://… or redis://….
    #[arg(long, value_name = "STORE", default_value = "memory")]
    pub store: String,
    /// An API key clients must send as `Authorization: Bearer KEY` (repeatable), as NAME=KEY
    /// to name it (logs and the page show the name; the name owns the key's sessions) or as
    /// KEY alone (named key- and 8 hex digits of a hash of the key, the same at every start);
    /// names must differ [env: TINYAGENT_API_KEYS, comma-separated].
    #[arg(long = "server-key", value_name = "[NAME=]KEY")]
    pub server_keys: Vec<String>,
    /// An admin key: lists every key's sessions, uses any (?owner=NAME), reads /metrics;
    /// named admin unless NAME=KEY, a name no other key may have [env: TINYAGENT_ADMIN_KEY].
    #[arg(long = "admin-key", value_name = "[NAME=]KEY")]
    pub admin_key: Option<String>,
    /// How long a session is kept after its last message, such as 3600, 90m, 12h or 30d
    /// [default: kept until deleted].
    #[arg(long, value_name = "DURATION", value_parser = parse_ttl)]
    pub session_ttl: Option<std::time::Duration>,
    /// How many sessions one API key may keep; a message that would start one more gets 409
    /// [default: no limit].
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub max_sessions_per_key: Option<u32>,
    /// How many messages one session may hold; a message to a fuller session gets 413
    /// [default: no limit].
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub max_history: Option<u32>,
    /// How many requests one API key may send, as N/s, N/min or N/h (a burst of N, then
    /// one every 1/N of the period); beyond it 429 with Retry-After [default: no limit].
    #[arg(long, value_name = "RATE", value_parser = parse_rate)]
    pub rate_limit: Option<tinyagent_server::RateLimit>,
    /// What one API key's runs may cost, in US dollars per h, day or week (5/day, 0.50/h;
    /// counted in this process); beyond it 429 cost_limit_exceeded [default: no limit].
    #[arg(long, value_name = "USD/PERIOD")]
    pub max_cost_per_key: Option<tinyagent_server::CostLimit>,
    /// Serve without API keys on an address other than loopback: anyone who reaches it may
    /// use the agent.
    #[arg(long)]
    pub allow_unauthenticated: bool,
    /// The name the agent is offered under: the `model` of a chat completion.
    #[arg(long, value_name = "NAME", default_value = "tinyagent")]
    pub agent_name: String,
    /// The largest request body, in bytes.
    #[arg(long, value_name = "BYTES", default_value_t = 1024 * 1024, value_parser = clap::value_parser!(u64).range(1..=1_073_741_824))]
    pub max_body_bytes: u64,
    /// How long one answer may take, in seconds.
    #[arg(long, value_name = "SECS", default_value = "300", value_parser = parse_secs)]
    pub request_timeout: std::time::Duration,
    /// How long a request body may take to arrive, in seconds (slower clients get 408).
    #[arg(long, value_name = "SECS", default_value = "30", value_parser = parse_secs)]
    pub body_timeout: std::time::Duration,
    /// How many requests one API key may have in flight at once.
    #[arg(long, value_name = "N", default_value_t = 64, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub max_concurrent_per_key: u32,
    /// How long a run holds its session in a shared store (PostgreSQL, Redis, SQLite) without
    /// renewing it, in seconds: a replica that dies mid-answer frees its sessions after this
    /// long.
    #[arg(long, value_name = "SECS", default_value = "30", value_parser = parse_secs)]
    pub session_lease: std::time::Duration,
    /// How long a message waits for its session while another run on it is in flight, in
    /// seconds; 0 refuses it at once (409).
    #[arg(long, value_name = "SECS", default_value_t = 60.0)]
    pub session_wait: f64,
    /// How long a shutdown waits for the answers in flight, in seconds.
    #[arg(long, value_name = "SECS", default_value = "30", value_parser = parse_secs)]
    pub drain_timeout: std::time::Duration,
    /// A host name clients use to reach the server (repeatable): `name` (any port),
    /// `name:port`, or `*` (any host). Requests naming another `Host` get 421; by default
    /// only the address connected to is answered, and `localhost` on a loopback address.
    #[arg(long = "allowed-host", value_name = "HOST")]
    pub allowed_hosts: Vec<String>,
    /// A web origin whose pages may call the API from a browser (repeatable), such as
    /// https://app.example.com; `*` for any. The server's own page always may.
    #[arg(long = "allowed-origin", value_name = "ORIGIN")]
    pub allowed_origins: Vec<String>,
    /// How long a client may take to send a request's headers, in seconds; also how long a
    /// kept-alive connection may stay idle.
    #[arg(long, value_name = "SECS", default_value = "10", value_parser = parse_secs)]
    pub header_timeout: std::time::Duration,
    /// How long a client may take nothing of an answer waiting for it (once the connection's
    /// buffers are full), in seconds: past it the connection is dropped and the run it was
    /// reading cancelled, freeing its session and concurrency slot.
    #[arg(long, value_name = "SECS", default_value = "30", value_parser = parse_secs)]
    pub write_timeout: std::time::Duration,
    /// How many connections are kept open at once; one more is answered 503. Keep it under
    /// the file descriptor limit (ulimit -n).
    #[arg(long, value_name = "N", default_value_t = 4096, value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    pub max_connections: u32,
    /// What becomes of client `system`/`developer` messages on /v1/chat/completions: below
    /// (user-level context, marked as the client's, below the agent's instruction), deny
    /// (400), or allow (system messages, joined to the instruction by some providers; trusted
    /// clients only).
    #[arg(long, value_name = "POLICY", default_value = "below", value_parser = parse_client_instructions)]
    pub client_instructions: tinyagent_server::ClientInstructions,
    /// Accept assistant `tool_calls` and `tool` results sent by clients in a chat history
    /// (refused with 400 by default: the model would take them for its own tools' output).
    #[arg(long)]
    pub allow_client_tool_results: bool,
    /// Accept this Chat Completions field without using it, where by default it is refused
    /// with 400 unsupported_parameter (`logprobs`, `logit_bias`...; repeatable), for clients
    /// that always send it.
    #[arg(long = "ignore-parameter", value_name = "NAME")]
    pub ignore_parameters: Vec<String>,
    /// Give every request this value of a sampling field, as JSON (`temperature=0`,
    /// `seed=42`, `stop=["END"]`; repeatable): a client may leave it out or send the same.
    #[arg(long = "pin-parameter", value_name = "NAME=VALUE", value_parser = parse_pin)]
    pub pin_parameters: Vec<(String, serde_json::Value)>,
    /// Cap a field (`temperature=1`, `max_tokens=1024`; repeatable): a request above it is
    /// refused with 400, except max_tokens, which is lowered to it.
    #[arg(long = "cap-parameter", value_name = "NAME=MAX", value_parser = parse_cap)]
    pub cap_parameters: Vec<(String, f64)>,
}

fn parse_pin(text: &str) -> Result<(String, serde_json::Value), String> {
    let (name, value) = text
        .split_once('=')
        .ok_or_else(|| format!("expected NAME=VALUE, got {text:?}"))?;
    let value = serde_json::from_str(value).map_err(|e| {
        format!("the value of {name} is not JSON ({e}); quote strings: {name}='\"text\"'")
    })?;
    Ok((name.trim().to_owned(), value))
}

fn parse_cap(text: &str) -> Result<(String, f64), String> {
    let (name, value) = text
        .split_once('=')
        .ok_or_else(|| format!("expected NAME=MAX, got {text:?}"))?;
    let max = value
        .trim()
        .parse::<f64>()
        .ok()
        .filter(|m| m.is_finite())
        .ok_or_else(|| format!("the cap of {name} must be a number, got {value:?}"))?;
    Ok((name.trim().to_owned(), max))
}

fn parse_client_instructions(text: &str) -> Result<tinyagent_server::ClientInstructions, String> {
    text.parse()
}

/// A duration: seconds, or a number with `s`, `m`, `h` or `d`.
pub fn parse_ttl(text: &str) -> Result<std::time::Duration, String> {
    let trimmed = text.trim();
    let (number, unit) = match trimmed.char_indices().last() {
        Some((at, c)) if c.is_ascii_alphabetic() => (&trimmed[..at], c),
        _ => (trimmed, 's'),
    };
    let scale = match unit {
        's' => 1.0,
        'm' => 60.0,
        'h' => 3600.0,
        'd' => 86_400.0,
        _ => {
            return Err(format!(
                "{text:?}: give seconds, or a number with s, m, h or d"
            ));
        }
    };
    let n: f64 = number
        .trim()
        .parse()
        .map_err(|_| format!("{text:?} is not a duration, such as 3600, 90m, 12h or 30d"))?;
    let secs = n * scale;
    if !(1.0..=366.0 * 86_400.0 * 10.0).contains(&secs) {
        return Err(format!(
            "{text:?} is out of range: give between 1 second and 10 years"
        ));
    }
    Ok(std::time::Duration::from_secs_f64(secs))
}

/// A request rate: `N/s`, `N/min` or `N/h`.
pub fn parse_rate(text: &str) -> Result<tinyagent_server::RateLimit, String> {
    text.parse()
}

#[cfg(test)]
mod tests;
