//! An embedded local model for [tinyagent]: GGUF models run in-process through
//! llama.cpp, so an agent works offline, with no API key and no network.
//!
//! * [`LlamaModel`] implements [`tinyagent::Model`]. It renders the chat with the model's own
//!   template, decodes greedily by default, streams text, and — when tools are offered —
//!   constrains the output with a grammar built from the tools' input schemas, so even a very
//!   small model can only call an offered tool with schema-valid arguments.
//! * [`LlamaModel::default_model`] loads the default model, Qwen2.5-Coder-1.5B-Instruct
//!   (Q4_K_M, about 1.1 GB, Apache-2.0): from `TINYAGENT_GGUF`, or from `models/` in the
//!   repository, where `bash scripts/fetch-model.sh` puts it.
//! * [`LlamaConfig`] sets threads, seed, temperature and limits.
//!
//! ```no_run
//! use tinyagent::{AgentExt, LlmAgent, Session};
//! use tinyagent_llama::{LlamaConfig, LlamaModel};
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let model = LlamaModel::default_model_with(LlamaConfig::default().threads(1))?;
//! let agent = LlmAgent::builder("smart-assistant")
//!     .model(model)
//!     .tools([tinyagent_demo::weather_tool()])
//!     .build()?;
//! println!("{}", agent.ask(&Session::new(), "What is the weather in Beijing?").await?);
//! # Ok(())
//! # }
//! ```

mod blank_scores;
mod config;
mod engine;
mod locate;
mod model;
mod prefix;
mod prompt;
mod saved_prompts;
mod speed;

use std::sync::OnceLock;

use llama_cpp_2::llama_backend::LlamaBackend;
use tinyagent::ModelError;

pub use config::{
    CALL_LEAD_WEIGHT, DEFAULT_CALL_THRESHOLD, ENV_PROMPT_CACHE, LlamaConfig, ToolFormat,
    ToolPrompt, ToolSelection,
};
#[allow(deprecated)]
pub use locate::{DEFAULT_MODEL_FILE, ENV_MODEL, find_default_model};
pub use model::LlamaModel;
pub use speed::{Completion, Speed};

/// llama.cpp's process-wide backend, started once; its logs go to `tracing`.
fn backend() -> Result<&'static LlamaBackend, ModelError> {
    static BACKEND: OnceLock<Result<LlamaBackend, String>> = OnceLock::new();
    BACKEND
        .get_or_init(|| {
            llama_cpp_2::send_logs_to_tracing(llama_cpp_2::LogOptions::default());
            LlamaBackend::init().map_err(|e| e.to_string())
        })
        .as_ref()
        .map_err(|e| ModelError::other(format!("cannot start llama.cpp: {e}")).retryable(false))
}
