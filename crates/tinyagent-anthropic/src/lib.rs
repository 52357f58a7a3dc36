//! # tinyagent-anthropic
//!
//! A [`tinyagent::Model`] for the Anthropic Messages API (Claude).
//!
//! Configure it in code ([`AnthropicConfig`]) or from the environment:
//!
//! | variable | meaning | default |
//! |---|---|---|
//! | `ANTHROPIC_API_KEY` | the key, sent as `x-api-key` | none (required by Anthropic's API) |
//! | `ANTHROPIC_BASE_URL` | the API's root (or a gateway's) | `https://api.anthropic.com` |
//! | `ANTHROPIC_MODEL` | the model name | `claude-sonnet-4-5` |
//!
//! ```
//! use tinyagent::{LlmAgent};
//! use tinyagent_anthropic::{AnthropicConfig, AnthropicModel};
//!
//! let model = AnthropicModel::new(
//!     AnthropicConfig::new("claude-sonnet-4-5").api_key("sk-ant-...").prompt_caching(true),
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
//! What it does on the wire (`anthropic-version: 2023-06-01`):
//!
//! - requests carry the instruction as `system` (system messages of the history are
//!   appended to it), the history as alternating `user` / `assistant` turns (text blocks;
//!   `tool_use` blocks for calls; `tool_result` blocks, with `is_error` for failures, at the
//!   start of a user turn), the tool definitions (`input_schema`), `tool_choice` (`auto`,
//!   `any`, `tool`, `none`), `temperature` (0 to 1), `top_p`, `stop_sequences` (the API takes
//!   no seed and no penalties: [`Model::supports`](tinyagent::Model::supports) says so) and
//!   `max_tokens`, which the API requires ([`DEFAULT_MAX_TOKENS`] when the request sets none). Tool names and call ids the API would reject are mapped
//!   to what it accepts (`fs.read` → `fs_read`) and back; arguments that are not a JSON
//!   object are sent back inside `{"invalid_arguments": "…"}`;
//! - extended thinking ([`AnthropicConfig::thinking_tokens`]): thinking blocks come back as
//!   [`Part::Reasoning`](tinyagent::Part::Reasoning) with their signature, and are sent back
//!   unchanged before the tool calls of their turn, as the API requires (redacted blocks
//!   too); other providers leave them out;
//! - prompt caching, opt-in ([`AnthropicConfig::prompt_caching`]): a `cache_control`
//!   breakpoint on the instruction and on the last tool definition; the usage reports
//!   cache reads ([`Usage::cached_input_tokens`](tinyagent::Usage::cached_input_tokens))
//!   and writes, counted in the input tokens;
//! - [`Model::stream`](tinyagent::Model::stream) reads the API's events (`message_start`,
//!   `content_block_start` / `_delta` / `_stop` with `text_delta`, `input_json_delta`,
//!   `thinking_delta`, `signature_delta`, `message_delta` with the stop reason and usage,
//!   `message_stop`, `ping`, `error`);
//! - 429, 529 `overloaded_error`, 5xx, connection failures and timeouts are retried with
//!   exponential backoff and jitter, honouring `retry-after`; so are a stream cut in the
//!   middle and an `overloaded_error` event in it: silently when nothing was streamed yet,
//!   otherwise after a [`ModelEvent::Restart`](tinyagent::model::ModelEvent::Restart); 401, 403,
//!   404 and 400 become errors quoting the API's message and saying what to check;
//! - timeouts bound every wait (connecting, the first byte, the silence between two events,
//!   the whole call with its retries) and a reply larger than
//!   [`max_reply_bytes`](HttpConfig::max_reply_bytes) is cut off, as in the other HTTP providers (the
//!   plumbing is `tinyagent-http`'s);
//! - a reply cut by the token limit (`stop_reason: "max_tokens"`) is
//!   [`FinishReason::Length`](tinyagent::model::FinishReason::Length) even with tool calls in it,
//!   so the agent never runs a call whose input may be incomplete.

mod config;
mod error;
mod info;
mod model;
mod stream;
mod wire;

pub use config::{AnthropicConfig, ConfigError};
pub use info::{
    API_VERSION, DEFAULT_BASE_URL, DEFAULT_MAX_TOKENS, DEFAULT_MODEL, ENV_API_KEY, ENV_BASE_URL,
    ENV_MODEL,
};
pub use model::AnthropicModel;
pub use tinyagent_http::{HttpConfig, HttpSettings, ProviderSettings};
