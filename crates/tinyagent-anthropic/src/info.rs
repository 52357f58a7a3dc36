//! Anthropic's names and defaults: its environment variables, its base URL and API version,
//! the default model and token limit, and what the shared HTTP plumbing knows of its API
//! ([`ProviderInfo`]).

use tinyagent::model::SamplingOption;
use tinyagent_http::ProviderInfo;

/// The environment variable holding the API key, sent as `x-api-key`.
pub const ENV_API_KEY: &str = "ANTHROPIC_API_KEY";
/// The environment variable holding the base URL, such as `https://api.anthropic.com`.
pub const ENV_BASE_URL: &str = "ANTHROPIC_BASE_URL";
/// The environment variable holding the model name, such as `claude-sonnet-4-5`.
pub const ENV_MODEL: &str = "ANTHROPIC_MODEL";

/// Anthropic's own base URL, the default.
pub const DEFAULT_BASE_URL: &str = "https://api.anthropic.com";
/// The model used when none is configured.
pub const DEFAULT_MODEL: &str = "claude-sonnet-4-5";
/// The API version sent in the `anthropic-version` header.
pub const API_VERSION: &str = "2023-06-01";

/// The token limit sent when a request sets none (the API requires one).
pub const DEFAULT_MAX_TOKENS: u32 = 4096;

/// The Messages API.
pub(crate) const INFO: ProviderInfo = ProviderInfo::new(
    [ENV_API_KEY, ENV_BASE_URL, ENV_MODEL],
    "set ANTHROPIC_API_KEY (and optionally ANTHROPIC_MODEL, default claude-sonnet-4-5, and \
     ANTHROPIC_BASE_URL for a gateway)",
    DEFAULT_BASE_URL,
    concat!("tinyagent-anthropic/", env!("CARGO_PKG_VERSION")),
)
.provider("anthropic")
.key_header("x-api-key")
.headers(&[("anthropic-version", API_VERSION)])
.implied_max_tokens(DEFAULT_MAX_TOKENS)
.rejected_hint("a bad parameter, message order or tool schema")
.sampling(&[
    SamplingOption::Temperature,
    SamplingOption::TopP,
    SamplingOption::Stop,
]);
