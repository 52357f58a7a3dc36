//! The tutorial's tool-system demo (`main.go` of the tutorial), in Rust.
//!
//! Run with `cargo run --example tools_demo`.

use std::io::IsTerminal as _;
use std::sync::Arc;
use std::time::Duration;

use tinyagent::{Tool, ToolContext, tools};
use tinyagent_demo::{self, CalcOutput};

fn print_tool(label: &str, tool: &Arc<dyn Tool>) {
    println!("{label}名称: {}", tool.name());
    println!("{label}描述: {}", tool.description());
    let schema = serde_json::to_string_pretty(tool.input_schema()).unwrap_or_default();
    println!("{label} Schema:\n{schema}");
}

async fn call(tool: &Arc<dyn Tool>, ctx: &ToolContext, input: &str) {
    match tool.handle(ctx, input).await {
        Ok(out) => println!("调用结果: {out}"),
        Err(err) => println!("输入: {input} → 错误（{}）: {err}", err.kind()),
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    // Section 4's log lines go to stdout, in order with the rest of the demo.
    tracing_subscriber::fmt()
        .with_writer(std::io::stdout)
        .with_ansi(std::io::stdout().is_terminal())
        .with_target(false)
        .init();

    let ctx = ToolContext::default();

    println!("========================================");
    println!("TinyAgent 工具系统演示");
    println!("========================================");

    println!("\n--- 1. new_func 创建天气工具 ---");
    let weather = tinyagent_demo::weather_tool();
    print_tool("工具", &weather);
    call(&weather, &ctx, r#"{"city": "北京"}"#).await;
    call(&weather, &ctx, r#"{"city": "北京", "unit": "fahrenheit"}"#).await;
    call(&weather, &ctx, r#"{"city": "火星"}"#).await;

    println!("\n--- 2. new_func 创建计算器工具 ---");
    let calc = tinyagent_demo::calculator_tool();
    print_tool("计算器", &calc);
    for input in [
        r#"{"operation": "add", "a": 10, "b": 3}"#,
        r#"{"operation": "multiply", "a": 7, "b": 8}"#,
        r#"{"operation": "sqrt", "a": 144}"#,
        r#"{"operation": "power", "a": 2, "b": 10}"#,
        r#"{"operation": "divide", "a": 1, "b": 0}"#,
    ] {
        match calc.handle(&ctx, input).await {
            Ok(out) => match serde_json::from_str::<CalcOutput>(&out) {
                Ok(out) => println!("  {}", out.expression),
                Err(err) => println!("  输入: {input} → 无法解析结果: {err}"),
            },
            Err(err) => println!("  输入: {input} → 错误（{}）: {err}", err.kind()),
        }
    }

    println!("\n--- 3. new_tool 手动创建时间工具 ---");
    let time = tinyagent_demo::time_tool();
    print_tool("工具", &time);
    call(&time, &ctx, r#"{"timezone": "Asia/Shanghai"}"#).await;
    call(&time, &ctx, r#"{"timezone": "Mars/Olympus_Mons"}"#).await;

    println!("\n--- 4. 中间件演示（日志 + 3 秒超时）---");
    let wrapped = tools::wrap_tool(
        tinyagent_demo::weather_tool(),
        [
            tools::with_logging(),
            tools::with_timeout(Duration::from_secs(3)),
        ],
    );
    let ctx_with_id = ctx.clone().with_call_id("call_shanghai");
    call(&wrapped, &ctx_with_id, r#"{"city": "上海"}"#).await;

    println!("\n--- 5. Agent-as-Tool 演示 ---");
    let translator = tinyagent_demo::translator_tool();
    print_tool("Agent-as-Tool ", &translator);
    call(&translator, &ctx, r#"{"message": "你好世界"}"#).await;
    call(&translator, &ctx, r#"{"text": "你好世界"}"#).await;

    println!("\n========================================");
    println!("演示完毕！");
    println!("========================================");
}
