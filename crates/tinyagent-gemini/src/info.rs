//! Gemini's names and defaults: its environment variables, its base URL, the default model
//! and token limit, and what the shared HTTP plumbing knows of its API ([`ProviderInfo`]).

use tinyagent::model::SamplingOption;
use tinyagent_http::ProviderInfo;

/// The environment variable holding the API key, sent as `x-goog-api-key`.
pub const ENV_API_KEY: &str = "GEMINI_API_KEY";
/// The environment variable holding the base URL, such as
/// `https://generativelanguage.googleapis.com/v1beta`.
pub const ENV_BASE_URL: &str = "GEMINI_BASE_URL";
/// The environment variable holding the model name, such as `gemini-2.5-flash`.
pub const ENV_MODEL: &str = "GEMINI_MODEL";

/// Google's base URL for the Gemini API, the default.
pub const DEFAULT_BASE_URL: &str = "https://generativelanguage.googleapis.com/v1beta";
/// The model used when none is configured.
pub const DEFAULT_MODEL: &str = "gemini-2.5-flash";
/// The token limit (`maxOutputTokens`) sent when a request sets none.
pub const DEFAULT_MAX_TOKENS: u32 = 4096;

/// The Gemini API.
pub(crate) const INFO: ProviderInfo = ProviderInfo::new(
    [ENV_API_KEY, ENV_BASE_URL, ENV_MODEL],
    "set GEMINI_API_KEY (and optionally GEMINI_MODEL, default gemini-2.5-flash, and \
     GEMINI_BASE_URL for a gateway)",
    DEFAULT_BASE_URL,
    concat!("tinyagent-gemini/", env!("CARGO_PKG_VERSION")),
)
.provider("gcp.gemini")
.key_header("x-goog-api-key")
.rejected_hint("a bad parameter or tool schema")
.sampling(&SamplingOption::ALL);
