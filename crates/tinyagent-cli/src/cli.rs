//! The command line, as clap parses it.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

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

Examples:
  tinyagent run \"北京天气怎么样？\"
  tinyagent run --base-url http://localhost:11434/v1 --model qwen2.5:7b \"7 乘以 8 等于多少？\"
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
arguments. The project's own set is eval/tools.jsonl.

Examples:
  tinyagent eval eval/tools.jsonl --local --tools all
  tinyagent eval eval/tools.jsonl --tools all --part reporting --report report.json
  tinyagent eval my_questions.jsonl --base-url http://localhost:11434/v1 --model qwen2.5:7b --mcp \"python3 server.py\"";

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

/// Options of the commands that run the agent.
#[derive(Debug, Args)]
pub struct AgentArgs {
    #[command(flatten)]
    pub model: ModelArgs,
    #[command(flatten)]
    pub tools: ToolArgs,
    #[command(flatten)]
    pub output: OutputArgs,
    /// The agent's instruction (system prompt), replacing the default ("你是一个全能助手。").
    #[arg(long, value_name = "TEXT", help_heading = "Agent")]
    pub instruction: Option<String>,
    /// The most model calls in one answer.
    #[arg(long, value_name = "N", default_value_t = 8, help_heading = "Agent", value_parser = clap::value_parser!(u16).range(1..))]
    pub max_steps: u16,
    /// Ask before running this tool (repeatable; `all`: every tool not marked read-only): the
    /// run pauses at each call, which you approve or deny.
    #[arg(long = "confirm", value_name = "TOOL", help_heading = "Agent")]
    pub confirm: Vec<String>,
}

/// Which model answers.
#[derive(Debug, Args)]
#[command(next_help_heading = "Model")]
pub struct ModelArgs {
    /// Who answers: openai (any OpenAI-compatible server), openai-responses (OpenAI's
    /// Responses API), anthropic, gemini or local (the embedded model) [env:
    /// TINYAGENT_PROVIDER; default: from the options and which key is set, else local].
    #[arg(long, value_name = "NAME", value_enum)]
    pub provider: Option<Provider>,
    /// Use the embedded local model even when a provider's key is set (--provider local).
    #[arg(long, conflicts_with_all = ["base_url", "api_key", "model", "provider"])]
    pub local: bool,
    /// The provider's base URL; for OpenAI-compatible servers up to /v1 [env:
    /// OPENAI_BASE_URL, ANTHROPIC_BASE_URL or GEMINI_BASE_URL].
    #[arg(long, value_name = "URL")]
    pub base_url: Option<String>,
    /// The model name [env: OPENAI_MODEL, ANTHROPIC_MODEL or GEMINI_MODEL; default:
    /// gpt-4o-mini, claude-sonnet-4-5 or gemini-2.5-flash].
    #[arg(long, value_name = "NAME")]
    pub model: Option<String>,
    /// The API key [env: OPENAI_API_KEY, ANTHROPIC_API_KEY or GEMINI_API_KEY].
    #[arg(long, value_name = "KEY")]
    pub api_key: Option<String>,
    /// CPU threads for the embedded model [default: half the cores, 1 to 4].
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=256))]
    pub threads: Option<u32>,
    /// The embedded model's context window in tokens (prompt plus reply): raise it for many
    /// tools or a long conversation [env: TINYAGENT_CONTEXT_SIZE; default: the model's own
    /// trained context; each call allocates only what its prompt needs].
    #[arg(long, value_name = "TOKENS", value_parser = clap::value_parser!(u32).range(64..))]
    pub context_size: Option<u32>,
    /// How long a model server may stay silent, in seconds: before it starts answering and
    /// between two pieces of a reply [env: TINYAGENT_TIMEOUT; default: 60].
    #[arg(long, value_name = "SECS", value_parser = parse_secs)]
    pub timeout: Option<std::time::Duration>,
    /// The most tokens of one model reply [default: 4096 on a server].
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub max_tokens: Option<u32>,
    /// The GGUF file of the embedded model [env: TINYAGENT_GGUF].
    #[arg(long, value_name = "PATH", conflicts_with_all = ["base_url", "api_key", "model"])]
    pub model_file: Option<PathBuf>,
    /// A model to answer when the ones before it fail (rate limits, server errors, timeouts,
    /// refused connections), as PROVIDER or PROVIDER:MODEL, such as anthropic:claude-haiku-4-5
    /// or local; its key and URL come from the provider's variables. Repeat for more
    /// [env: TINYAGENT_FALLBACK, comma-separated].
    #[arg(long = "fallback", value_name = "PROVIDER[:MODEL]")]
    pub fallback: Vec<String>,
}

/// A model provider the CLI can talk to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Provider {
    /// The OpenAI Chat Completions API, or any server compatible with it (Ollama, vLLM,
    /// llama.cpp's server, DeepSeek, a gateway).
    Openai,
    /// The OpenAI Responses API (OpenAI's main API; reasoning models keep their reasoning
    /// between steps).
    OpenaiResponses,
    /// The Anthropic Messages API (Claude).
    Anthropic,
    /// The Gemini API.
    Gemini,
    /// The embedded model, offline.
    Local,
}

impl Provider {
    /// The name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Self::Openai => "openai",
            Self::OpenaiResponses => "openai-responses",
            Self::Anthropic => "anthropic",
            Self::Gemini => "gemini",
            Self::Local => "local",
        }
    }
}

/// Seconds, such as `30` or `2.5`, as a duration (at least a millisecond, at most a day).
pub fn parse_secs(text: &str) -> Result<std::time::Duration, String> {
    let secs: f64 = text
        .trim()
        .parse()
        .map_err(|_| format!("{text:?} is not a number of seconds, such as 30 or 2.5"))?;
    if !(0.001..=86_400.0).contains(&secs) {
        return Err(format!(
            "{text:?} is out of range: give between 0.001 and 86400 seconds"
        ));
    }
    Ok(std::time::Duration::from_secs_f64(secs))
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

/// Which tools the agent gets.
#[derive(Debug, Args, Clone, Default)]
#[command(next_help_heading = "Tools")]
pub struct ToolArgs {
    /// Built-in tools, comma-separated or repeated: demo (get_weather, calculator,
    /// get_current_time), all (demo and translator), none, or tool names. Default: demo, when
    /// no tool option is given.
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
    pub tools: Vec<String>,
    /// The tools of an MCP server started from this command line (repeatable), such as
    /// "python3 server.py".
    #[arg(long, value_name = "COMMAND")]
    pub mcp: Vec<String>,
    /// The tools of an MCP server at this streamable HTTP URL (repeatable), such as
    /// http://127.0.0.1:8000/mcp.
    #[arg(long, value_name = "URL")]
    pub mcp_url: Vec<String>,
    /// An HTTP header sent to every --mcp-url server (repeatable), such as
    /// 'Authorization: Bearer TOKEN'; values are never printed or logged.
    #[arg(long, value_name = "'NAME: VALUE'", value_parser = parse_header)]
    pub mcp_header: Vec<HeaderArg>,
    /// Authorize with OAuth 2.1 at every --mcp-url server that requires it: the authorization
    /// URL is printed, a browser's redirect is received on 127.0.0.1, and the tokens are kept
    /// (owner-only) under the user's configuration folder for the next runs.
    #[arg(long)]
    pub mcp_oauth: bool,
    /// A remote A2A agent as a tool (repeatable): its base URL, where
    /// /.well-known/agent-card.json is, such as http://127.0.0.1:8080/a2a/assistant. The key
    /// it needs, if any, is read from TINYAGENT_A2A_KEY.
    #[arg(long, value_name = "URL")]
    pub a2a: Vec<String>,
}

/// A `Name: value` header from the command line; its value is kept out of `Debug` output.
/// Parsing never fails in clap (whose message would repeat the value): a malformed header
/// carries its problem, reported as a usage error that names the header only.
#[derive(Clone, PartialEq, Eq)]
pub struct HeaderArg {
    /// The header's name.
    pub name: String,
    /// The header's value (a secret, perhaps).
    pub value: String,
    /// What is wrong with it, if anything.
    pub problem: Option<String>,
}

impl std::fmt::Debug for HeaderArg {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: <redacted>", self.name)
    }
}

/// Parses `Name: value`.
fn parse_header(text: &str) -> Result<HeaderArg, std::convert::Infallible> {
    let bad = |problem: String| HeaderArg {
        name: String::new(),
        value: String::new(),
        problem: Some(problem),
    };
    let Some((name, value)) = text.split_once(':') else {
        return Ok(bad(
            "a --mcp-header is not 'NAME: VALUE', such as 'Authorization: Bearer TOKEN'".to_owned(),
        ));
    };
    let name = name.trim();
    let valid_name = !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b));
    if !valid_name {
        return Ok(bad(format!("{name:?} is not a valid HTTP header name")));
    }
    let value = value.trim();
    if value.bytes().any(|b| b.is_ascii_control() && b != b'\t') {
        return Ok(bad(format!(
            "the value of header {name} has control characters"
        )));
    }
    Ok(HeaderArg {
        name: name.to_owned(),
        value: value.to_owned(),
        problem: None,
    })
}

/// How the run is shown.
#[derive(Debug, Args, Clone, Copy)]
#[command(next_help_heading = "Output")]
pub struct OutputArgs {
    /// Print every event as one JSON line on standard output (for scripts).
    #[arg(long, conflicts_with = "quiet")]
    pub json: bool,
    /// Print the answer only.
    #[arg(long, short)]
    pub quiet: bool,
    /// Log what happens inside (model requests, tool calls) on standard error.
    #[arg(long, short)]
    pub verbose: bool,
}

#[cfg(test)]
mod tests;
