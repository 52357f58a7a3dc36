//! The demo's tools: what they return, what they refuse, and that their descriptions say which
//! of them give demo data.

use serde_json::{Value, json};
use tinyagent::{ToolContext, ToolError, ToolErrorKind};
use tinyagent_demo::{
    CalcOutput, TIME_DESCRIPTION, TRANSLATOR_DESCRIPTION, WEATHER_DESCRIPTION, WeatherOutput,
    all_tools, calculator_tool, time_tool, translator_tool, weather_tool,
};

#[test]
fn the_canned_tools_say_they_give_demo_data_and_the_real_ones_do_not() {
    let names: Vec<String> = all_tools().iter().map(|t| t.name().to_owned()).collect();
    assert_eq!(
        names,
        [
            "get_weather",
            "calculator",
            "get_current_time",
            "translator"
        ]
    );
    assert_eq!(weather_tool().description(), WEATHER_DESCRIPTION);
    assert_eq!(translator_tool().description(), TRANSLATOR_DESCRIPTION);
    assert_eq!(time_tool().description(), TIME_DESCRIPTION);
    for tool in [weather_tool(), translator_tool()] {
        let text = tool.description();
        assert!(
            text.contains("demo data") && text.contains("演示数据"),
            "{text}"
        );
    }
    for tool in [calculator_tool(), time_tool()] {
        assert!(!tool.description().contains("demo data"), "{}", tool.name());
    }
}

fn ctx() -> ToolContext {
    ToolContext::default()
}

async fn weather(input: &str) -> Result<WeatherOutput, ToolError> {
    let out = tinyagent_demo::weather_tool().handle(&ctx(), input).await?;
    Ok(serde_json::from_str(&out).expect("the weather tool returns its output as JSON"))
}

#[tokio::test]
async fn weather_cities() {
    let beijing = weather(r#"{"city": "北京"}"#).await.unwrap();
    assert_eq!(
        beijing,
        WeatherOutput {
            city: "北京".into(),
            temperature: 22.5,
            condition: "晴".into(),
            humidity: 45
        }
    );
    // The tutorial's exact output, compared as JSON values.
    let raw = tinyagent_demo::weather_tool()
        .handle(&ctx(), r#"{"city": "北京"}"#)
        .await
        .unwrap();
    assert_eq!(
        serde_json::from_str::<Value>(&raw).unwrap(),
        json!({"city":"北京","temperature":22.5,"condition":"晴","humidity":45})
    );
    let shanghai = weather(r#"{"city": "上海"}"#).await.unwrap();
    assert_eq!(
        (
            shanghai.temperature,
            shanghai.condition.as_str(),
            shanghai.humidity
        ),
        (25.0, "多云", 72)
    );
    let guangzhou = weather(r#"{"city": "广州"}"#).await.unwrap();
    assert_eq!(
        (
            guangzhou.temperature,
            guangzhou.condition.as_str(),
            guangzhou.humidity
        ),
        (30.2, "阵雨", 85)
    );
}

#[tokio::test]
async fn weather_fahrenheit_and_celsius() {
    for (city, celsius) in [("北京", 22.5), ("上海", 25.0), ("广州", 30.2)] {
        let input = json!({"city": city, "unit": "fahrenheit"}).to_string();
        let f = weather(&input).await.unwrap();
        assert!(
            (f.temperature - (celsius * 9.0 / 5.0 + 32.0)).abs() < 1e-9,
            "{city}: {}",
            f.temperature
        );
        let input = json!({"city": city, "unit": "celsius"}).to_string();
        assert_eq!(weather(&input).await.unwrap().temperature, celsius);
    }
    let err = weather(r#"{"city": "北京", "unit": "kelvin"}"#)
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ToolErrorKind::InvalidInput);
    assert!(
        err.message().contains("kelvin") && err.message().contains("`unit`"),
        "{err}"
    );
}

#[tokio::test]
async fn weather_unknown_city_is_named() {
    let err = weather(r#"{"city": "火星"}"#).await.unwrap_err();
    assert_eq!(err.kind(), ToolErrorKind::NotFound);
    assert!(err.message().contains("\"火星\""), "{err}");
}

async fn calc(input: &str) -> Result<CalcOutput, ToolError> {
    let out = tinyagent_demo::calculator_tool()
        .handle(&ctx(), input)
        .await?;
    Ok(serde_json::from_str(&out).unwrap())
}

#[tokio::test]
async fn calculator_results() {
    let cases = [
        (
            r#"{"operation": "add", "a": 10, "b": 3}"#,
            13.0,
            "10.00 + 3.00 = 13.00",
        ),
        (
            r#"{"operation": "multiply", "a": 7, "b": 8}"#,
            56.0,
            "7.00 * 8.00 = 56.00",
        ),
        (
            r#"{"operation": "sqrt", "a": 144}"#,
            12.0,
            "sqrt(144.00) = 12.00",
        ),
        (
            r#"{"operation": "power", "a": 2, "b": 10}"#,
            1024.0,
            "2.00 ^ 10.00 = 1024.00",
        ),
        (
            r#"{"operation": "subtract", "a": 1.5, "b": 4}"#,
            -2.5,
            "1.50 - 4.00 = -2.50",
        ),
        (
            r#"{"operation": "divide", "a": 1, "b": 4}"#,
            0.25,
            "1.00 / 4.00 = 0.25",
        ),
    ];
    for (input, result, expression) in cases {
        let out = calc(input).await.unwrap();
        assert_eq!(out.result, result, "{input}");
        assert_eq!(out.expression, expression, "{input}");
    }
}

#[tokio::test]
async fn calculator_errors() {
    let zero = calc(r#"{"operation": "divide", "a": 1, "b": 0}"#)
        .await
        .unwrap_err();
    assert_eq!(zero.message(), "除数不能为零");
    let negative = calc(r#"{"operation": "sqrt", "a": -4}"#).await.unwrap_err();
    assert_eq!(negative.message(), "不能对负数求平方根");
    let unknown = calc(r#"{"operation": "modulo", "a": 1, "b": 2}"#)
        .await
        .unwrap_err();
    assert_eq!(unknown.kind(), ToolErrorKind::InvalidInput);
    assert!(
        unknown.message().contains("unknown variant `modulo`"),
        "{unknown}"
    );
    assert!(unknown.message().contains("`operation`"), "{unknown}");
    let missing_b = calc(r#"{"operation": "add", "a": 1}"#).await.unwrap_err();
    assert!(missing_b.message().contains("b"), "{missing_b}");
    let overflow = calc(r#"{"operation": "power", "a": 10, "b": 400}"#)
        .await
        .unwrap_err();
    assert_eq!(overflow.kind(), ToolErrorKind::InvalidInput);
}

#[tokio::test]
async fn time_tool_format_and_unknown_zone() {
    let at: jiff::Timestamp = "2025-01-15T06:30:00Z".parse().unwrap();
    assert_eq!(
        tinyagent_demo::format_time("Asia/Shanghai", at).unwrap(),
        "当前时间（Asia/Shanghai）：2025-01-15 14:30:00"
    );
    assert_eq!(
        tinyagent_demo::format_time("America/New_York", at).unwrap(),
        "当前时间（America/New_York）：2025-01-15 01:30:00"
    );

    // The tool reads the clock: its answer is a second between the clock before and after the
    // call, however many second boundaries the call crosses on a busy machine.
    let tool = tinyagent_demo::time_tool();
    let before = jiff::Timestamp::now();
    let out = tool
        .handle(&ctx(), r#"{"timezone": "Asia/Shanghai"}"#)
        .await
        .unwrap();
    let after = jiff::Timestamp::now();
    let shown = out
        .strip_prefix("当前时间（Asia/Shanghai）：")
        .unwrap_or_else(|| panic!("unexpected answer: {out}"));
    let shown: jiff::civil::DateTime = shown
        .parse()
        .unwrap_or_else(|e| panic!("not a date and time ({e}): {out}"));
    let shown = jiff::tz::TimeZone::get("Asia/Shanghai")
        .unwrap()
        .to_timestamp(shown)
        .unwrap()
        .as_second();
    assert!(
        (before.as_second()..=after.as_second()).contains(&shown),
        "{out} is not between {before} and {after}"
    );

    let err = tool
        .handle(&ctx(), r#"{"timezone": "Mars/Olympus"}"#)
        .await
        .unwrap_err();
    assert_eq!(err.message(), "无效的时区: Mars/Olympus");
    let err = tool
        .handle(&ctx(), r#"{"tz": "Asia/Shanghai"}"#)
        .await
        .unwrap_err();
    assert!(err.message().contains("missing field `timezone`"), "{err}");
}

#[tokio::test]
async fn translator_takes_json_or_plain_text() {
    let tool = tinyagent_demo::translator_tool();
    assert_eq!(tool.name(), "translator");
    assert_eq!(tool.description(), tinyagent_demo::TRANSLATOR_DESCRIPTION);
    let expected = "[翻译结果] 你好世界 → Hello, World!";
    assert_eq!(
        tool.handle(&ctx(), r#"{"message": "你好世界"}"#)
            .await
            .unwrap(),
        expected
    );
    assert_eq!(tool.handle(&ctx(), "你好世界").await.unwrap(), expected);
    assert_eq!(
        tool.handle(&ctx(), r#""你好世界""#).await.unwrap(),
        expected
    );
    let err = tool.handle(&ctx(), r#"{"msg": "x"}"#).await.unwrap_err();
    assert!(err.message().contains("missing field `message`"), "{err}");
}
