//! The seed's smart assistant on a real model: an agent with the weather, calculator, time
//! and translator tools, asked about Beijing's weather and a calculation.
//!
//! Configure the model through the environment, then run:
//!
//! ```text
//! # OpenAI
//! OPENAI_API_KEY=sk-... cargo run -p tinyagent-examples --example agent_demo
//! # Ollama (or any OpenAI-compatible server)
//! OPENAI_BASE_URL=http://localhost:11434/v1 OPENAI_MODEL=qwen2.5:7b \
//!     cargo run -p tinyagent-examples --example agent_demo
//! ```
//!
//! With nothing configured it says what to set and exits successfully.

use std::process::ExitCode;
use std::sync::Arc;

use tinyagent_openai::{ConfigError, OpenAiModel};

#[tokio::main]
async fn main() -> ExitCode {
    let model = match OpenAiModel::from_env() {
        Ok(model) => model,
        Err(ConfigError::NotConfigured) => {
            println!("agent_demo needs a model. Set one of:");
            println!(
                "  OPENAI_API_KEY=sk-...                        # OpenAI (model gpt-4o-mini unless OPENAI_MODEL says otherwise)"
            );
            println!(
                "  OPENAI_BASE_URL=http://localhost:11434/v1    # Ollama, with OPENAI_MODEL=qwen2.5:7b (a model you pulled)"
            );
            println!(
                "  OPENAI_BASE_URL=http://localhost:8080/v1     # llama.cpp's llama-server (started with --jinja), or any compatible server"
            );
            println!(
                "and optionally OPENAI_MODEL=<model name>. See the README, \"Use a real model\"."
            );
            return ExitCode::SUCCESS;
        }
        Err(err) => {
            eprintln!("agent_demo: {err}");
            return ExitCode::FAILURE;
        }
    };
    let mut out = std::io::stdout();
    match tinyagent_examples::run_agent_demo(Arc::new(model), &mut out).await {
        Ok(_) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("\nagent_demo: {err}");
            ExitCode::FAILURE
        }
    }
}
