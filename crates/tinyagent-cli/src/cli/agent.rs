//! The options of the commands that run an agent: the model, the tools, the agent's limits
//! and how the run is shown.

use std::path::PathBuf;

use clap::Args;

use super::seconds::parse_secs;

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
    /// Make the last model call that --max-steps allows without tools, so that the model
    /// answers from what the tools gave so far instead of the run failing with "no answer
    /// after N model calls".
    #[arg(long, help_heading = "Agent")]
    pub answer_at_step_limit: bool,
    /// Stop the run with an error, before its next model call, once its model calls have cost
    /// this many US dollars (such as 0.50), priced by --price, --prices or the built-in list
    /// prices. Every model the run may call (fallbacks and summarizer included) needs a price,
    /// except the embedded one, which is free.
    #[arg(long, value_name = "USD", help_heading = "Cost", value_parser = parse_usd)]
    pub max_cost: Option<tinyagent::model::Cost>,
    #[command(flatten)]
    pub context: ContextArgs,
    #[command(flatten)]
    pub search: SearchArgs,
}

/// How the history sent to the model is kept within a budget (compaction).
#[derive(Debug, Args, Clone, Default)]
#[command(next_help_heading = "Context")]
pub struct ContextArgs {
    /// Keep the history each model call is sent within this many tokens: older tool outputs
    /// are cut to a short head first, then the oldest turns are replaced by a summary. The
    /// session keeps every message either way [default: the whole history is sent].
    #[arg(long, value_name = "TOKENS", value_parser = clap::value_parser!(u64).range(256..))]
    pub context_budget: Option<u64>,
    /// How many of the latest tool results are never cut [default: 4].
    #[arg(long, value_name = "N", requires = "context_budget")]
    pub keep_tool_outputs: Option<usize>,
    /// The model that writes the summaries, as the --fallback form
    /// (PROVIDER[:MODEL][,base-url=URL][,api-key-env=VAR]), or `off` to only cut tool outputs
    /// and never summarise [default: the agent's own model].
    #[arg(long, value_name = "MODEL|off", requires = "context_budget")]
    pub summarizer: Option<String>,
}

/// When the tools are offered through a search rather than all at once.
#[derive(Debug, Args, Clone, Copy)]
#[command(next_help_heading = "Tools")]
pub struct SearchArgs {
    /// Offer the tools through a search when there are many: each model call gets the tools
    /// most relevant to the conversation, plus `search_tools` and `call_tool` to reach the
    /// rest. auto: when more than 20 tools are offered; on; off; or a number N: when more than
    /// N are offered.
    #[arg(long, value_name = "auto|on|off|N", default_value = "auto", value_parser = parse_tool_search)]
    pub tool_search: ToolSearchMode,
    /// How many found tools each model call is offered when tools are searched.
    #[arg(long, value_name = "N", default_value_t = 8, value_parser = clap::value_parser!(u16).range(1..=128))]
    pub tool_search_results: u16,
}

/// When tools are searched: above how many tools, or never.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolSearchMode {
    /// When more than this many tools are offered (0: always).
    Above(usize),
    /// Never: every tool is offered in every model call.
    Off,
}

/// Above how many tools `--tool-search auto` searches them.
pub const TOOL_SEARCH_ABOVE: usize = 20;

fn parse_tool_search(text: &str) -> Result<ToolSearchMode, String> {
    match text.trim() {
        "auto" => Ok(ToolSearchMode::Above(TOOL_SEARCH_ABOVE)),
        "on" | "always" => Ok(ToolSearchMode::Above(0)),
        "off" | "never" => Ok(ToolSearchMode::Off),
        n => n.parse().map(ToolSearchMode::Above).map_err(|_| {
            format!("{text:?}: give auto, on, off, or a number of tools (search above it)")
        }),
    }
}

/// An amount of US dollars: `0.50`, `$2`, `1e-3`.
pub fn parse_usd(text: &str) -> Result<tinyagent::model::Cost, String> {
    let number = text.trim().trim_start_matches('$').trim();
    match number.parse::<f64>() {
        Ok(usd) if usd.is_finite() && usd > 0.0 => Ok(tinyagent::model::Cost::from_usd(usd)),
        Ok(_) => Err(format!("{text:?}: give an amount above zero, such as 0.50")),
        Err(_) => Err(format!(
            "{text:?} is not an amount of US dollars, such as 0.50"
        )),
    }
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
    #[arg(long, conflicts_with_all = ["base_url", "api_key", "api_key_env", "model", "provider"])]
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
    /// CPU threads for the embedded model [default: every core, up to 4: one question at a
    /// time is answered fastest on all of them].
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=256))]
    pub threads: Option<u32>,
    /// The embedded model's context window in tokens (prompt plus reply): raise it for many
    /// tools or a long conversation [env: TINYAGENT_CONTEXT_SIZE; default: the model's own
    /// trained context; each call allocates only what its prompt needs].
    #[arg(long, value_name = "TOKENS", value_parser = clap::value_parser!(u32).range(64..))]
    pub context_size: Option<u32>,
    /// Where the embedded model saves the prompts it reads (instruction and tools), so that
    /// the next run loads them instead of reading them again; `off` saves none [env:
    /// TINYAGENT_PROMPT_CACHE; default: $XDG_CACHE_HOME/tinyagent/prompts or
    /// ~/.cache/tinyagent/prompts].
    #[arg(long, value_name = "DIR|off")]
    pub prompt_cache: Option<PathBuf>,
    /// How long a model server may stay silent, in seconds: before it starts answering and
    /// between two pieces of a reply [env: TINYAGENT_TIMEOUT; default: 60].
    #[arg(long, value_name = "SECS", value_parser = parse_secs)]
    pub timeout: Option<std::time::Duration>,
    /// The most tokens of one model reply [default: 4096 on a server].
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub max_tokens: Option<u32>,
    /// The GGUF file of the embedded model [env: TINYAGENT_GGUF].
    #[arg(long, value_name = "PATH", conflicts_with_all = ["base_url", "api_key", "api_key_env", "model"])]
    pub model_file: Option<PathBuf>,
    /// A model to answer when the ones before it fail (rate limits, server errors, timeouts,
    /// refused connections): PROVIDER[:MODEL], such as anthropic:claude-haiku-4-5 or local,
    /// optionally followed by its own server, `,base-url=URL`, and the variable its key is
    /// read from, `,api-key-env=VAR` (such as
    /// openai:gpt-4o-mini,base-url=https://gw.example.com/v1,api-key-env=GW_KEY). Without
    /// base-url, the URL and key come from the provider's variables; with it, the key only
    /// from api-key-env. Repeat for more [env: TINYAGENT_FALLBACK, the same form, fallbacks
    /// separated by commas].
    #[arg(
        long = "fallback",
        value_name = "PROVIDER[:MODEL][,base-url=URL][,api-key-env=VAR]"
    )]
    pub fallback: Vec<String>,
    /// The environment variable holding the API key, instead of --api-key (which other users
    /// of the machine may see in the process list).
    #[arg(long, value_name = "VAR", conflicts_with = "api_key")]
    pub api_key_env: Option<String>,
    /// A model's price in US dollars per million tokens (repeatable), overriding the built-in
    /// list prices: MODEL=INPUT/OUTPUT, or MODEL=INPUT/OUTPUT/CACHED_INPUT[/CACHE_WRITE], such
    /// as qwen2.5:7b=0.2/0.6.
    #[arg(long = "price", value_name = "MODEL=IN/OUT", help_heading = "Cost", value_parser = parse_price)]
    pub prices: Vec<(String, tinyagent::model::Price)>,
    /// A JSON file of prices in US dollars per million tokens, such as
    /// {"my-model": {"input": 0.5, "output": 1.5, "cached_input": 0.05}}; --price wins over
    /// it, and it over the built-in list prices [env: TINYAGENT_PRICES].
    #[arg(long = "prices", value_name = "FILE", help_heading = "Cost")]
    pub price_file: Option<PathBuf>,
}

/// `MODEL=INPUT/OUTPUT[/CACHED_INPUT[/CACHE_WRITE]]`, dollars per million tokens. The model's
/// name is what precedes the last `=`.
fn parse_price(text: &str) -> Result<(String, tinyagent::model::Price), String> {
    let bad = || {
        format!(
            "{text:?}: give MODEL=INPUT/OUTPUT in US dollars per million tokens, such as \
             my-model=0.5/1.5 (or MODEL=INPUT/OUTPUT/CACHED_INPUT[/CACHE_WRITE])"
        )
    };
    let (model, amounts) = text.rsplit_once('=').ok_or_else(bad)?;
    let model = model.trim();
    let amounts: Vec<f64> = amounts
        .split('/')
        .map(|a| a.trim().trim_start_matches('$').parse::<f64>())
        .collect::<Result<_, _>>()
        .map_err(|_| bad())?;
    if model.is_empty() || !(2..=4).contains(&amounts.len()) {
        return Err(bad());
    }
    if amounts.iter().any(|a| !a.is_finite() || *a < 0.0) {
        return Err(format!("{text:?}: prices are amounts of zero or more"));
    }
    let mut price = tinyagent::model::Price::new(amounts[0], amounts[1]);
    if let Some(cached) = amounts.get(2) {
        price = price.cached_input(*cached);
    }
    if let Some(written) = amounts.get(3) {
        price = price.cache_write_input(*written);
    }
    Ok((model.to_owned(), price))
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
