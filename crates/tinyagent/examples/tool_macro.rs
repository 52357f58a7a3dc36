//! The tutorial's four demo tools written with `#[tool]`: each is one annotated async fn, its
//! doc comment the description, its parameters the input schema (the same schemas as
//! `tinyagent::demo`'s, which `tests/tool_macro.rs` checks).
//!
//! Run with `cargo run -p tinyagent --features demo --example tool_macro`.

use tinyagent::demo::{self, CalcInput, CalcOutput, Operation, TemperatureUnit, WeatherOutput};
use tinyagent::{Tool, ToolContext, ToolError, tool};

/// 获取指定城市的实时天气信息
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
    demo::calculate_sync(&CalcInput { operation, a, b })
}

/// 获取当前时间
#[tool(read_only, idempotent = false, open_world = false)]
pub async fn get_current_time(
    /// 时区，如 Asia/Shanghai、America/New_York
    #[schemars(pattern(demo::TIMEZONE_PATTERN))]
    timezone: String,
) -> Result<String, ToolError> {
    demo::format_time(&timezone, jiff::Timestamp::now())
}

/// 一个翻译专家，能进行中英文互译
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
