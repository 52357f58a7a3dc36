//! The tutorial's smart assistant on the embedded local model, with the tutorial's four tools (weather,
//! calculator, current time, translator): no API key, no network.
//!
//! ```sh
//! bash scripts/fetch-model.sh        # once: the default model into models/
//! cargo run -p tinyagent-llama --example local_agent
//! cargo run -p tinyagent-llama --example local_agent -- "What is the weather in Shanghai?"
//! ```
//!
//! `TINYAGENT_GGUF=/path/to/model.gguf` runs another GGUF model.

use futures::StreamExt;
use tinyagent::{Agent, Event, Invocation, LlmAgent, Session};
use tinyagent_llama::LlamaModel;

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let question = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "北京天气怎么样？".to_owned());
    let model = LlamaModel::default_model()?;
    println!(
        "model: {} (loaded in {} ms)",
        model.path().display(),
        model.load_time().as_millis()
    );
    let agent = LlmAgent::builder("smart-assistant")
        .model(model)
        .instruction("你是一个全能助手。")
        .tools(tinyagent_demo::all_tools())
        .build()?;

    println!("user: {question}");
    let mut events = agent.run(Invocation::new(Session::new(), question.as_str()));
    while let Some(event) = events.next().await {
        match event? {
            Event::ToolCallStarted { call } => {
                println!("tool call: {}({})", call.name, call.arguments);
            }
            Event::ToolCallFinished { result, .. } => {
                let tag = if result.is_error {
                    "tool error"
                } else {
                    "tool result"
                };
                println!("{tag}: {}", result.content);
            }
            Event::Finished { answer, usage, .. } => {
                println!("assistant: {answer}");
                println!(
                    "({} prompt tokens, {} generated)",
                    usage.input_tokens.unwrap_or(0),
                    usage.output_tokens.unwrap_or(0)
                );
            }
            _ => {}
        }
    }
    Ok(())
}
