//! The smart-assistant demo on Gemini: `GEMINI_API_KEY=... cargo run -p
//! tinyagent-gemini --example gemini_assistant` (`GEMINI_BASE_URL` and `GEMINI_MODEL`
//! optional). Prints what the agent does, step by step.

use futures::StreamExt;
use tinyagent::{Agent, Event, Invocation, LlmAgent, Session};
use tinyagent_gemini::GeminiModel;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let model = match GeminiModel::from_env() {
        Ok(model) => model,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(2);
        }
    };
    let agent = LlmAgent::builder("smart-assistant")
        .model(model)
        .instruction("你是一个全能助手。")
        .tools([
            tinyagent_demo::weather_tool(),
            tinyagent_demo::calculator_tool(),
        ])
        .build()?;
    let session = Session::new();
    for question in ["北京天气怎么样？", "帮我算一下 7 乘以 8 等于多少。"] {
        println!("用户: {question}");
        let mut events = agent.run(Invocation::new(session.clone(), question));
        while let Some(event) = events.next().await {
            let event = match event {
                Ok(event) => event,
                Err(e) => {
                    eprintln!("error: {e}");
                    std::process::exit(1);
                }
            };
            match event {
                Event::ToolCallStarted { call } => {
                    println!("  → {}({})", call.name, call.arguments);
                }
                Event::ToolCallFinished { result, .. } => println!("  ← {}", result.content),
                Event::ReplyRestarted { reason } => println!("  (restarted: {reason})"),
                Event::Finished { answer, usage, .. } => {
                    println!("助手: {answer}");
                    println!(
                        "  (tokens: {} in, {} out)",
                        usage.input_tokens.unwrap_or(0),
                        usage.output_tokens.unwrap_or(0)
                    );
                }
                _ => {}
            }
        }
    }
    Ok(())
}
