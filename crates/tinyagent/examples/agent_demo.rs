//! The seed's `smart-assistant`: an agent with the weather, calculator, time and translator
//! tools, answering "北京天气怎么样？" and a calculation, printing every event of its runs.
//!
//! Run with `cargo run --example agent_demo`. It needs a model: plug one into
//! [`configured_model`] (an OpenAI-compatible provider or a local model). Without one it says
//! what to configure and exits.

use std::sync::Arc;

use futures::StreamExt;
use tinyagent::{Agent, Event, Invocation, LlmAgent, Model, Session, demo};

/// The model the demo talks to, or `None` when none is configured.
///
/// This is the seam where a provider plugs in, for example:
///
/// ```ignore
/// let key = std::env::var("OPENAI_API_KEY").ok()?;
/// Some(Arc::new(tinyagent_openai::OpenAiModel::new(key, "gpt-4o-mini")))
/// ```
fn configured_model() -> Option<Arc<dyn Model>> {
    None
}

fn print_event(event: &Event) {
    match event {
        Event::TextDelta(text) => println!("  [文本] {text}"),
        Event::Usage {
            step,
            usage,
            finish_reason,
        } => println!(
            "  [第 {step} 步] 输入 {} 个 token，输出 {} 个 token，结束原因 {finish_reason:?}",
            usage.input_tokens, usage.output_tokens
        ),
        Event::Message(message) => {
            for call in message.tool_calls() {
                println!("  [模型请求工具] {}({})", call.name, call.arguments);
            }
        }
        Event::ToolCallStarted { call } => println!("  [开始调用] {} ({})", call.name, call.id),
        Event::ToolCallFinished {
            result, duration, ..
        } => {
            let status = if result.is_error { "失败" } else { "成功" };
            println!(
                "  [调用{status}] {}，耗时 {duration:?}：{}",
                result.name, result.content
            );
        }
        Event::Finished {
            answer,
            usage,
            steps,
        } => println!(
            "  [最终回答] {answer}\n  （共 {steps} 步，{} 个 token）",
            usage.total_tokens()
        ),
        other => println!("  {other:?}"),
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    println!("========================================");
    println!("TinyAgent Agent 演示：smart-assistant");
    println!("========================================");

    let Some(model) = configured_model() else {
        println!();
        println!("没有配置模型，演示无法运行。");
        println!("No model is configured, so the demo cannot run.");
        println!();
        println!("To run it, make `configured_model()` in crates/tinyagent/examples/agent_demo.rs");
        println!("return a model: an OpenAI-compatible provider (the `tinyagent-openai` crate,");
        println!("configured with an API key such as OPENAI_API_KEY, and a base URL and model");
        println!("name for other compatible servers) or a local model. Any type implementing");
        println!("`tinyagent::Model` works.");
        return;
    };

    let agent = match LlmAgent::builder("smart-assistant")
        .description("一个全能助手")
        .model(model)
        .instruction("你是一个全能助手。需要时调用工具，然后用中文简洁地回答。")
        .tools(demo::seed_tools())
        .build()
    {
        Ok(agent) => agent,
        Err(err) => {
            eprintln!("无法创建 Agent：{err}");
            std::process::exit(1);
        }
    };

    let session = Session::new();
    for question in [
        "北京天气怎么样？",
        "帮我算一下 2 的 10 次方，再加上 7 乘以 8。",
    ] {
        println!("\n用户：{question}");
        let mut events = agent.run(Invocation::new(session.clone(), question));
        while let Some(event) = events.next().await {
            match event {
                Ok(event) => print_event(&event),
                Err(err) => {
                    println!("  [错误] {err}");
                    break;
                }
            }
        }
    }

    println!("\n========================================");
    println!("演示完毕！");
    println!("========================================");
}
