//! # tinyagent-openai
//!
//! A [`tinyagent::Model`] for the OpenAI Chat Completions wire format over HTTP, which
//! OpenAI, Ollama, vLLM, llama.cpp's server, DeepSeek and Qwen's compatible mode all speak
//! ([`OpenAiModel`]), and one for OpenAI's Responses API ([`ResponsesModel`]), where
//! reasoning models keep their reasoning between steps.
//!
//! Configure it in code ([`OpenAiConfig`]) or from the environment:
//!
//! | variable | meaning | default |
//! |---|---|---|
//! | `OPENAI_API_KEY` | the key, sent as `Authorization: Bearer …` | none (servers such as Ollama need none) |
//! | `OPENAI_BASE_URL` | the server, up to `/v1` | `https://api.openai.com/v1` |
//! | `OPENAI_MODEL` | the model name | `gpt-4o-mini` |
//!
//! ```
//! use tinyagent::{LlmAgent};
//! use tinyagent_openai::{OpenAiConfig, OpenAiModel};
//!
//! // Ollama on this machine; for OpenAI, `OpenAiConfig::new("gpt-4o-mini").api_key(key)`.
//! let model = OpenAiModel::new(
//!     OpenAiConfig::new("qwen2.5:7b").base_url("http://localhost:11434/v1"),
//! )?;
//! let agent = LlmAgent::builder("smart-assistant")
//!     .model(model)
//!     .instruction("You are a helpful assistant.")
//!     .tools([tinyagent_demo::weather_tool(), tinyagent_demo::calculator_tool()])
//!     .build()?;
//! # let _ = agent;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! What it does on the wire:
//!
//! - requests carry the instruction (as a `system` message), the history (text, assistant
//!   tool calls with `"content": ""`, one `tool` message per result), tool definitions
//!   (optionally strict, through [`tinyagent::tools::schema::strict_schema`]), `tool_choice`,
//!   `parallel_tool_calls`, `response_format` (a request's
//!   [`ResponseFormat`](tinyagent::model::ResponseFormat) as structured outputs, `json_schema` with
//!   the schema in the strict dialect when it can be), the sampling options (`temperature`,
//!   `top_p`, `stop`, `seed`, `presence_penalty`, `frequency_penalty`) and the token limit
//!   (4096 when the request sets none); tool-call arguments that are not JSON are sent back wrapped in a JSON object,
//!   so servers that parse them accept the history;
//! - [`Model::stream`](tinyagent::Model::stream) asks for `stream: true` with
//!   `stream_options.include_usage`, reads server-sent events (comment lines such as
//!   `: ping` skipped), and assembles tool-call arguments that arrive in pieces;
//! - 429, 5xx, connection failures and timeouts are retried with exponential backoff and
//!   jitter, honouring `Retry-After` (seconds or an HTTP date) and `retry-after-ms`; error
//!   bodies become clear [`tinyagent::ModelError`]s (a 401 says the key is missing or wrong);
//! - a stream cut in the middle, or an error event in it that may pass, is retried too: when
//!   nothing was streamed yet, silently; otherwise after a
//!   [`ModelEvent::Restart`](tinyagent::model::ModelEvent::Restart) telling the consumer to discard
//!   what it received;
//! - timeouts bound every wait: connecting, the first byte of the answer, the silence between
//!   two events, and the whole call with its retries; a reply larger than
//!   [`max_reply_bytes`](HttpConfig::max_reply_bytes) is cut off with an error;
//! - a 200 that is not what was asked for (an HTML page from a wrong base URL, an empty body)
//!   is an error naming the status, the content type and the start of the body;
//! - whatever the server sends, bad JSON, a cut stream or an odd shape is an error, never a
//!   panic; `null`-filled deltas, the legacy `function_call` field and tool names with stray
//!   punctuation (`get_weather.`) are accepted.

mod config;
mod error;
mod info;
mod model;
mod responses;
mod stream;
pub mod types;
mod wire;

#[doc(hidden)]
#[path = "fuzz.rs"]
pub mod __fuzz;

pub use config::{ConfigError, MaxTokensField, OpenAiConfig};
pub use info::{
    DEFAULT_BASE_URL, DEFAULT_MAX_TOKENS, DEFAULT_MODEL, ENV_API_KEY, ENV_BASE_URL, ENV_MODEL,
};
pub use model::OpenAiModel;
pub use responses::{ResponsesConfig, ResponsesModel};
pub use tinyagent_http::{HttpConfig, HttpSettings, ProviderSettings};
