//! The demo's four tools: weather, calculator, current time and translator.
//!
//! Two of them give canned data: the weather tool knows three cities' fixed sample values, and
//! the translator always gives the same sample translation; their descriptions say so, since a
//! model or an MCP client reads them to choose among tools. The calculator really calculates
//! and the clock reads the real clock.

use std::sync::Arc;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

use tinyagent::tools::{self, IntoTool};
use tinyagent::{Tool, ToolContext, ToolError, ToolHints};

/// A temperature unit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum TemperatureUnit {
    /// Degrees Celsius (the default).
    Celsius,
    /// Degrees Fahrenheit.
    Fahrenheit,
}

/// The input of `get_weather`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct WeatherInput {
    /// 城市名称，如北京、上海、广州
    pub city: String,
    /// 温度单位
    pub unit: Option<TemperatureUnit>,
}

/// The output of `get_weather`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WeatherOutput {
    /// The city asked for.
    pub city: String,
    /// The temperature, in the unit asked for.
    pub temperature: f64,
    /// The weather, in words.
    pub condition: String,
    /// Relative humidity, in percent.
    pub humidity: i64,
}

/// Looks up the (simulated) weather of 北京, 上海 or 广州.
pub async fn get_weather(input: WeatherInput) -> Result<WeatherOutput, ToolError> {
    let (temperature, condition, humidity) = match input.city.as_str() {
        "北京" => (22.5, "晴", 45),
        "上海" => (25.0, "多云", 72),
        "广州" => (30.2, "阵雨", 85),
        other => {
            return Err(ToolError::not_found(format!(
                "未找到城市 {other:?} 的天气数据（可查询：北京、上海、广州）"
            )));
        }
    };
    let temperature = match input.unit {
        Some(TemperatureUnit::Fahrenheit) => temperature * 9.0 / 5.0 + 32.0,
        _ => temperature,
    };
    Ok(WeatherOutput {
        city: input.city,
        temperature,
        condition: condition.to_owned(),
        humidity,
    })
}

/// What `get_weather` says it does: what it gives, and that the data is demo data.
pub const WEATHER_DESCRIPTION: &str =
    "获取指定城市的当前天气：温度、天气状况（晴、雨、雪等）和湿度（演示数据 demo data）";

/// The `get_weather` tool: [`get_weather`] with [`WEATHER_DESCRIPTION`].
pub fn weather_tool() -> Arc<dyn Tool> {
    tools::new_func("get_weather", WEATHER_DESCRIPTION, get_weather)
        .read_only()
        .into_tool()
}

/// A calculator operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Operation {
    /// a + b
    Add,
    /// a - b
    Subtract,
    /// a * b
    Multiply,
    /// a / b
    Divide,
    /// The square root of a
    Sqrt,
    /// a to the power of b
    Power,
}

/// The input of `calculator`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct CalcInput {
    /// 运算类型
    pub operation: Operation,
    /// 第一个操作数
    pub a: f64,
    /// 第二个操作数（sqrt 操作不需要）
    pub b: Option<f64>,
}

/// The output of `calculator`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CalcOutput {
    /// The numeric result.
    pub result: f64,
    /// The calculation written out, as `10.00 + 3.00 = 13.00`.
    pub expression: String,
}

/// Computes one operation (the `calculator` tool's function).
pub async fn calculate(input: CalcInput) -> Result<CalcOutput, ToolError> {
    calculate_sync(&input)
}

/// The calculator's work without the async wrapper (what the benchmarks time).
pub fn calculate_sync(input: &CalcInput) -> Result<CalcOutput, ToolError> {
    let a = input.a;
    let b = || {
        input.b.ok_or_else(|| {
            ToolError::invalid_input(format!(
                "运算 {} 需要第二个操作数 b",
                serde_json::to_value(input.operation).unwrap_or_default()
            ))
        })
    };
    let (result, expression) = match input.operation {
        Operation::Add => {
            let b = b()?;
            (a + b, format!("{a:.2} + {b:.2} = {:.2}", a + b))
        }
        Operation::Subtract => {
            let b = b()?;
            (a - b, format!("{a:.2} - {b:.2} = {:.2}", a - b))
        }
        Operation::Multiply => {
            let b = b()?;
            (a * b, format!("{a:.2} * {b:.2} = {:.2}", a * b))
        }
        Operation::Divide => {
            let b = b()?;
            if b == 0.0 {
                return Err(ToolError::invalid_input("除数不能为零"));
            }
            (a / b, format!("{a:.2} / {b:.2} = {:.2}", a / b))
        }
        Operation::Sqrt => {
            if a < 0.0 {
                return Err(ToolError::invalid_input("不能对负数求平方根"));
            }
            (a.sqrt(), format!("sqrt({a:.2}) = {:.2}", a.sqrt()))
        }
        Operation::Power => {
            let b = b()?;
            (a.powf(b), format!("{a:.2} ^ {b:.2} = {:.2}", a.powf(b)))
        }
    };
    if !result.is_finite() {
        return Err(ToolError::invalid_input(format!(
            "结果超出数值范围: {expression}"
        )));
    }
    Ok(CalcOutput { result, expression })
}

/// The `calculator` tool: [`calculate`], described as "执行数学运算" (performs arithmetic).
pub fn calculator_tool() -> Arc<dyn Tool> {
    tools::new_func("calculator", "执行数学运算", calculate)
        .with_hints(ToolHints::READ_ONLY.open_world(false))
        .into_tool()
}

/// Formats the time tool's answer for an instant in a zone:
/// `当前时间（Asia/Shanghai）：2025-01-15 14:30:00`.
pub fn format_time(timezone: &str, at: jiff::Timestamp) -> Result<String, ToolError> {
    let tz = jiff::tz::TimeZone::get(timezone)
        .map_err(|e| ToolError::invalid_input(format!("无效的时区: {timezone}")).with_source(e))?;
    let local = at.to_zoned_datetime(tz);
    Ok(format!(
        "当前时间（{timezone}）：{}",
        local.strftime("%Y-%m-%d %H:%M:%S")
    ))
}

/// What the time tool takes as a time zone: `UTC` or an IANA name (`Asia/Shanghai`,
/// `America/Argentina/Buenos_Aires`), not a city's name. Said in the schema, so that a model
/// constrained by it (the embedded one) writes a zone the tool knows.
pub const TIMEZONE_PATTERN: &str = "^(UTC|[A-Z][A-Za-z_]+(/[A-Za-z0-9_+-]+)+)$";

/// What `get_current_time` says it does.
pub const TIME_DESCRIPTION: &str = "获取某个时区（如 Asia/Shanghai）当前的日期和时间";

/// The `get_current_time` tool, made with a hand-written schema through
/// [`tools::try_new_tool`]: the time now in an IANA time zone.
pub fn time_tool() -> Arc<dyn Tool> {
    #[derive(Deserialize)]
    struct TimeInput {
        timezone: String,
    }
    let tool = tools::try_new_tool(
        "get_current_time",
        TIME_DESCRIPTION,
        json!({
            "type": "object",
            "properties": {
                "timezone": {
                    "type": "string",
                    "description": "时区，如 Asia/Shanghai、America/New_York",
                    "pattern": TIMEZONE_PATTERN
                }
            },
            "required": ["timezone"]
        }),
        |_ctx: ToolContext, input: String| async move {
            let req: TimeInput = tools::decode_input(&input)?;
            format_time(&req.timezone, jiff::Timestamp::now())
        },
    )
    .expect("a valid tool name and schema")
    .with_hints(ToolHints::READ_ONLY.idempotent(false).open_world(false));
    Arc::new(tool)
}

/// What `translator` says it does: translation, with demo data.
pub const TRANSLATOR_DESCRIPTION: &str =
    "把文本翻译成另一种语言（演示数据 demo data：返回固定的示例译文）";

/// The `translator` tool: an agent-style tool (schema `{"message": string}`) that answers with a
/// canned translation rather than running a model.
pub fn translator_tool() -> Arc<dyn Tool> {
    tools::new_agent_tool_fn(
        "translator",
        TRANSLATOR_DESCRIPTION,
        |_ctx: ToolContext, message: String| async move {
            Ok::<_, ToolError>(format!("[翻译结果] {message} → Hello, World!"))
        },
    )
    .message_description(TRANSLATOR_MESSAGE_DESCRIPTION)
    .into_tool()
}

/// The description of the translator's `message` parameter ("the message to send to this agent").
pub const TRANSLATOR_MESSAGE_DESCRIPTION: &str = "要发送给此 Agent 的消息";

/// All four tools, in this order: weather, calculator, current time, translator.
pub fn all_tools() -> Vec<Arc<dyn Tool>> {
    vec![
        weather_tool(),
        calculator_tool(),
        time_tool(),
        translator_tool(),
    ]
}
