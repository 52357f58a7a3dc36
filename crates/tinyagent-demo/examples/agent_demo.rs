//! The tutorial's smart assistant on a real model: an agent with the weather, calculator, time
//! and translator tools, asked about Beijing's weather and a calculation.
//!
//! By default it runs offline on the embedded local model (through llama.cpp, 1 thread,
//! greedy decoding; `bash scripts/fetch-model.sh` fetches it once, `TINYAGENT_GGUF` points at
//! another GGUF file). Each question is asked in a session of its own. A provider is used
//! instead when the environment configures one (the first of OpenAI-compatible, Anthropic,
//! Gemini):
//!
//! ```text
//! # the local model
//! cargo run -p tinyagent-demo --example agent_demo
//! # OpenAI
//! OPENAI_API_KEY=sk-... cargo run -p tinyagent-demo --example agent_demo
//! # Ollama (or any OpenAI-compatible server)
//! OPENAI_BASE_URL=http://localhost:11434/v1 OPENAI_MODEL=qwen2.5:7b \
//!     cargo run -p tinyagent-demo --example agent_demo
//! # Claude, Gemini
//! ANTHROPIC_API_KEY=sk-ant-... cargo run -p tinyagent-demo --example agent_demo
//! GEMINI_API_KEY=... cargo run -p tinyagent-demo --example agent_demo
//! # its trace and metrics in an OpenTelemetry backend (Jaeger, Phoenix, a collector)
//! OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:4318 cargo run -p tinyagent-demo --example agent_demo
//! ```

use std::process::ExitCode;
use std::sync::Arc;

use tinyagent::{Model, Tool};
use tinyagent_openai::{ConfigError, OpenAiModel};
use tinyagent_otel::Telemetry;
use tracing_subscriber::prelude::*;

/// A model and the tools to offer it.
type ModelAndTools = (Arc<dyn Model>, Vec<Arc<dyn Tool>>);

/// The model the environment asks for, with the tutorial's four tools: an OpenAI-compatible
/// server when `OPENAI_API_KEY` or `OPENAI_BASE_URL` is set, else Claude when
/// `ANTHROPIC_API_KEY` or `ANTHROPIC_BASE_URL` is, else Gemini when `GEMINI_API_KEY` or
/// `GEMINI_BASE_URL` is, else the embedded local model.
fn configured_model() -> Result<ModelAndTools, String> {
    match OpenAiModel::from_env() {
        Ok(model) => {
            println!(
                "model: {} at {} (OpenAI-compatible server)",
                model.config().model,
                model.config().base_url
            );
            return Ok((Arc::new(model), tinyagent_demo::all_tools()));
        }
        Err(ConfigError::NotConfigured { .. }) => {}
        Err(err) => return Err(err.to_string()),
    }
    match tinyagent_anthropic::AnthropicModel::from_env() {
        Ok(model) => {
            println!("model: {} (Anthropic)", model.name());
            return Ok((Arc::new(model), tinyagent_demo::all_tools()));
        }
        Err(tinyagent_anthropic::ConfigError::NotConfigured { .. }) => {}
        Err(err) => return Err(err.to_string()),
    }
    match tinyagent_gemini::GeminiModel::from_env() {
        Ok(model) => {
            println!("model: {} (Gemini)", model.name());
            return Ok((Arc::new(model), tinyagent_demo::all_tools()));
        }
        Err(tinyagent_gemini::ConfigError::NotConfigured { .. }) => {}
        Err(err) => return Err(err.to_string()),
    }
    let (model, tools) = tinyagent_demo::local_demo_model().map_err(|err| err.to_string())?;
    println!(
        "model: {} (local, {}; set OPENAI_API_KEY, ANTHROPIC_API_KEY or GEMINI_API_KEY to use a provider)",
        model.name(),
        model.path().display()
    );
    Ok((Arc::new(model), tools))
}

/// OpenTelemetry as the `OTEL_*` variables ask; nothing when none is set.
fn telemetry() -> Telemetry {
    let telemetry = Telemetry::builder()
        .service_name("tinyagent-demo")
        .build()
        .unwrap_or_else(|err| {
            eprintln!("agent_demo: {err}; going on without it");
            Telemetry::disabled()
        });
    if telemetry.exports_traces() || telemetry.keeps_metrics() {
        println!("telemetry: spans and metrics go to the OTLP endpoint the environment names");
        tracing_subscriber::registry()
            .with(telemetry.layer())
            .init();
    }
    telemetry
}

#[tokio::main]
async fn main() -> ExitCode {
    let telemetry = telemetry();
    let code = demo().await;
    // Shutting down waits for the last export, which a gRPC exporter makes on this runtime:
    // off its worker threads.
    let _ = tokio::task::spawn_blocking(move || telemetry.shutdown()).await;
    code
}

async fn demo() -> ExitCode {
    let (model, tools) = match configured_model() {
        Ok(chosen) => chosen,
        Err(err) => {
            eprintln!("agent_demo: {err}");
            return ExitCode::FAILURE;
        }
    };
    let mut out = std::io::stdout();
    match tinyagent_demo::run_agent_demo_with_tools(model, tools, &mut out).await {
        Ok(_) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("\nagent_demo: {err}");
            ExitCode::FAILURE
        }
    }
}
