//! # tinyagent-gemini
//!
//! A [`tinyagent::Model`] for the Google Gemini API (`generateContent` and
//! `streamGenerateContent`).
//!
//! | variable | meaning | default |
//! |---|---|---|
//! | `GEMINI_API_KEY` | the key, sent as `x-goog-api-key` | none |
//! | `GEMINI_BASE_URL` | the API up to its version | `https://generativelanguage.googleapis.com/v1beta` |
//! | `GEMINI_MODEL` | the model name | `gemini-2.5-flash` |
//!
//! ```
//! use tinyagent::{LlmAgent};
//! use tinyagent_gemini::{GeminiConfig, GeminiModel};
//!
//! let model = GeminiModel::new(GeminiConfig::new("gemini-2.5-flash").api_key("AIza..."))?;
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
//! - requests carry the instruction as `systemInstruction` (system messages of the history
//!   appended), the history as `user` / `model` contents (text parts, `functionCall` parts,
//!   `functionResponse` parts whose `response` is the tool's JSON object output, or
//!   `{"result": …}` / `{"error": …}`), the tools as `functionDeclarations` whose
//!   `parameters` are in Gemini's OpenAPI dialect
//!   ([`gemini_schema`](tinyagent::tools::schema::gemini_schema); what it drops is logged at WARN),
//!   `toolConfig.functionCallingConfig` (`AUTO`, `ANY`, `NONE`, `allowedFunctionNames`) and
//!   `generationConfig` (`temperature`, `topP`, `stopSequences`, `seed`, `presencePenalty`,
//!   `frequencyPenalty`, `maxOutputTokens`: [`DEFAULT_MAX_TOKENS`] unless set);
//! - answers may hold several function calls (run in parallel by the agent); thought parts
//!   and thought signatures come back as [`Part::Reasoning`](tinyagent::Part::Reasoning),
//!   and signatures are sent back on the part they came with;
//! - usage: `promptTokenCount` (cached tokens included), `candidatesTokenCount` plus
//!   `thoughtsTokenCount`, `cachedContentTokenCount`;
//! - retries, timeouts, reply caps and errors as in the other HTTP providers
//!   (`tinyagent-http`); a blocked prompt and a `MAX_TOKENS` finish are named.

mod config;
mod error;
mod info;
mod model;
mod stream;
mod wire;

pub use config::{ConfigError, GeminiConfig};
pub use info::{
    DEFAULT_BASE_URL, DEFAULT_MAX_TOKENS, DEFAULT_MODEL, ENV_API_KEY, ENV_BASE_URL, ENV_MODEL,
};
pub use model::GeminiModel;
pub use tinyagent_http::{HttpConfig, HttpSettings, ProviderSettings};
