//! The demo's four tools written with `#[tool]`: each is one annotated async fn, its
//! doc comment the description, its parameters the input schema (the same schemas as
//! `tinyagent_demo`'s, which `tests/tool_macro.rs` checks).
//!
//! Run with `cargo run -p tinyagent --example tool_macro`.

use tinyagent::{Tool, ToolContext, ToolError, tool};
use tinyagent_demo::{self, CalcInput, CalcOutput, Operation, TemperatureUnit, WeatherOutput};

/// 获取指定城市的当前天气：温度、天气状况（晴、雨、雪等）和湿度（演示数据 demo data）
#[tool(read_only)]
pub async fn get_weather(
    /// 城市名称，如北京、上海、广州
    city: String,
    /// 温度单位
    unit: Option<TemperatureUnit>,
) -> Result<WeatherOutput, ToolError> {
    let (temperature, condition, humidity) = match city.as_str() {
        "北京" => (22.5, "晴", 45),
        "上海" => (25.0, "多云", 72),
        "广州" => (30.2, "阵雨", 85),
        other => Err(ToolError::not_found(format!(
            "未找到城市 {other:?} 的天气数据（可查询：北京、上海、广州）"
        )))?,
    };
    let temperature = match unit {
        Some(TemperatureUnit::Fahrenheit) => temperature * 9.0 / 5.0 + 32.0,
        _ => temperature,
    };
    let condition = condition.to_owned();
    Ok(WeatherOutput {
        city,
        temperature,
        condition,
        humidity,
    })
}

/// 执行数学运算
#[tool(read_only, open_world = false, name = "calculator")]
pub async fn calculate(
    /// 运算类型
    operation: Operation,
    /// 第一个操作数
    a: f64,
    /// 第二个操作数（sqrt 操作不需要）
    b: Option<f64>,
) -> Result<CalcOutput, ToolError> {
    tinyagent_demo::calculate_sync(&CalcInput { operation, a, b })
}

/// 获取某个时区（如 Asia/Shanghai）当前的日期和时间
#[tool(read_only, idempotent = false, open_world = false)]
pub async fn get_current_time(
    /// 时区，如 Asia/Shanghai、America/New_York
    #[schemars(pattern(tinyagent_demo::TIMEZONE_PATTERN))]
    timezone: String,
) -> Result<String, ToolError> {
    tinyagent_demo::format_time(&timezone, jiff::Timestamp::now())
}

/// 把文本翻译成另一种语言（演示数据 demo data：返回固定的示例译文）
#[tool]
pub async fn translator(
    /// 要发送给此 Agent 的消息
    message: String,
) -> Result<String, ToolError> {
    Ok(format!("[翻译结果] {message} → Hello, World!"))
}

#[allow(dead_code)]
#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), ToolError> {
    let ctx = ToolContext::default();
    let tools: [std::sync::Arc<dyn Tool>; 4] = [
        std::sync::Arc::new(get_weather_tool()),
        std::sync::Arc::new(calculate_tool()),
        std::sync::Arc::new(get_current_time_tool()),
        std::sync::Arc::new(translator_tool()),
    ];
    for tool in &tools {
        println!("{}: {}", tool.name(), tool.description());
        println!("  schema: {}", tool.input_schema());
    }
    for (tool, input) in tools.iter().zip([
        r#"{"city": "上海", "unit": "fahrenheit"}"#,
        r#"{"operation": "power", "a": 2, "b": 10}"#,
        r#"{"timezone": "Asia/Shanghai"}"#,
        r#"{"message": "你好世界"}"#,
    ]) {
        println!(
            "{}({input}) → {}",
            tool.name(),
            tool.handle(&ctx, input).await?
        );
    }
    // The fns are still plain fns.
    println!("{:?}", calculate(Operation::Sqrt, 144.0, None).await?);
    Ok(())
}
