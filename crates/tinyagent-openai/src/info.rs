//! OpenAI's names and defaults: its environment variables, its base URL, the default model
//! and token limit, and what the shared HTTP plumbing knows of its two APIs
//! ([`ProviderInfo`]).

use tinyagent::model::SamplingOption;
use tinyagent_http::ProviderInfo;

/// The environment variable holding the API key (optional for servers that need none).
pub const ENV_API_KEY: &str = "OPENAI_API_KEY";
/// The environment variable holding the base URL, such as `http://localhost:11434/v1`.
pub const ENV_BASE_URL: &str = "OPENAI_BASE_URL";
/// The environment variable holding the model name, such as `gpt-4o-mini` or `qwen2.5:7b`.
pub const ENV_MODEL: &str = "OPENAI_MODEL";

/// OpenAI's own base URL, the default.
pub const DEFAULT_BASE_URL: &str = "https://api.openai.com/v1";
/// The model used when none is configured.
pub const DEFAULT_MODEL: &str = "gpt-4o-mini";

/// The token limit sent when a request sets none, by default.
pub const DEFAULT_MAX_TOKENS: u32 = 4096;

/// The user agent of every request.
const USER_AGENT: &str = concat!("tinyagent-openai/", env!("CARGO_PKG_VERSION"));

/// The Chat Completions API.
pub(crate) const CHAT: ProviderInfo = ProviderInfo::new(
    [ENV_API_KEY, ENV_BASE_URL, ENV_MODEL],
    "set OPENAI_API_KEY (for OpenAI), or OPENAI_BASE_URL (for any compatible server, such as \
     http://localhost:11434/v1 for Ollama), and optionally OPENAI_MODEL (default gpt-4o-mini)",
    DEFAULT_BASE_URL,
    USER_AGENT,
)
.provider("openai")
.sampling(&SamplingOption::ALL);

/// The Responses API.
pub(crate) const RESPONSES: ProviderInfo = ProviderInfo::new(
    [ENV_API_KEY, ENV_BASE_URL, ENV_MODEL],
    "set OPENAI_API_KEY (for OpenAI), or OPENAI_BASE_URL (for a server with the Responses \
     API), and optionally OPENAI_MODEL (default gpt-4o-mini)",
    DEFAULT_BASE_URL,
    USER_AGENT,
)
.provider("openai")
.sampling(&[SamplingOption::Temperature, SamplingOption::TopP]);
