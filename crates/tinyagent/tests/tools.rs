//! The tutorial's demo tools and the ways of making tools: results, errors and bad input.

use std::sync::Arc;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tinyagent::Tool;
use tinyagent::demo::{self, CalcOutput, WeatherOutput};
use tinyagent::tools::{self, json_adapter};
use tinyagent::{Handler, ToolContext, ToolError, ToolErrorKind, handler_fn};

fn ctx() -> ToolContext {
    ToolContext::default()
}

async fn weather(input: &str) -> Result<WeatherOutput, ToolError> {
    let out = demo::weather_tool().handle(&ctx(), input).await?;
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
    let raw = demo::weather_tool()
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
    let out = demo::calculator_tool().handle(&ctx(), input).await?;
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
        demo::format_time("Asia/Shanghai", at).unwrap(),
        "当前时间（Asia/Shanghai）：2025-01-15 14:30:00"
    );
    assert_eq!(
        demo::format_time("America/New_York", at).unwrap(),
        "当前时间（America/New_York）：2025-01-15 01:30:00"
    );

    // The tool reads the clock: its answer is a second between the clock before and after the
    // call, however many second boundaries the call crosses on a busy machine.
    let tool = demo::time_tool();
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
    let tool = demo::translator_tool();
    assert_eq!(tool.name(), "translator");
    assert_eq!(tool.description(), "一个翻译专家，能进行中英文互译");
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

#[derive(Debug, Deserialize, JsonSchema)]
struct Point {
    x: f64,
    y: f64,
    label: Option<String>,
}

#[derive(Debug, Serialize)]
struct Norm {
    norm: f64,
}

async fn norm(_ctx: ToolContext, p: Point) -> Result<Norm, ToolError> {
    if p.label.as_deref() == Some("fail") {
        return Err(ToolError::denied("labels named fail are refused"));
    }
    Ok(Norm {
        norm: (p.x * p.x + p.y * p.y).sqrt(),
    })
}

#[tokio::test]
async fn new_func_round_trip_and_error_kinds() {
    let tool = tools::new_func("norm", "Euclidean norm", norm);
    assert_eq!(tool.name(), "norm");
    assert_eq!(tool.description(), "Euclidean norm");
    assert_eq!(tool.input_schema()["required"], json!(["x", "y"]));
    assert_eq!(
        tool.handle(&ctx(), r#"{"x":3,"y":4}"#).await.unwrap(),
        r#"{"norm":5.0}"#
    );
    let err = tool
        .handle(&ctx(), r#"{"x":3,"y":4,"label":"fail"}"#)
        .await
        .unwrap_err();
    assert_eq!(
        err.kind(),
        ToolErrorKind::Denied,
        "a ToolError keeps its kind"
    );
    assert_eq!(err.message(), "labels named fail are refused");
}

#[derive(Debug, thiserror::Error)]
#[error("the backend said no: {0}")]
struct BackendError(u16);

impl tools::ToolErrorKindHint for BackendError {}

#[tokio::test]
async fn user_error_text_reaches_the_caller_unchanged() {
    let with_std_error = tools::new_func("a", "", |_p: Point| async {
        Err::<Norm, _>(BackendError(503))
    });
    let err = with_std_error
        .handle(&ctx(), r#"{"x":0,"y":0}"#)
        .await
        .unwrap_err();
    assert_eq!(err.to_string(), "the backend said no: 503");
    assert_eq!(err.kind(), ToolErrorKind::Failed);
    let source = std::error::Error::source(&err).expect("the source is kept");
    assert!(source.downcast_ref::<BackendError>().is_some());

    let with_str = tools::new_func("b", "", |_p: Point| async {
        Err::<Norm, _>("plain text error")
    });
    let err = with_str
        .handle(&ctx(), r#"{"x":0,"y":0}"#)
        .await
        .unwrap_err();
    assert_eq!(err.to_string(), "plain text error");
}

#[tokio::test]
async fn json_adapter_and_handle_func_are_handlers() {
    let handler: Arc<dyn Handler> = Arc::new(json_adapter(norm));
    assert_eq!(
        handler.handle(&ctx(), r#"{"x":0,"y":2}"#).await.unwrap(),
        r#"{"norm":2.0}"#
    );
    let echo: Arc<dyn Handler> = Arc::new(handler_fn(|c: ToolContext, input: String| async move {
        Ok::<_, ToolError>(format!("{}:{input}", c.call_id().unwrap_or("-")))
    }));
    let with_id = ctx().with_call_id("call_9");
    assert_eq!(echo.handle(&with_id, "hi").await.unwrap(), "call_9:hi");
}

#[tokio::test]
async fn invalid_tool_names_are_refused_when_built() {
    for bad in ["", "get weather", "天气", "a.b", &"x".repeat(65)] {
        let err =
            tools::try_new_func("placeholder", "", norm).and(tools::try_new_func(bad, "", norm));
        let err = err.unwrap_err();
        assert_eq!(err.kind(), ToolErrorKind::InvalidInput);
        assert!(err.message().contains("invalid tool name"), "{bad}: {err}");
    }
    assert!(tools::try_new_func("x".repeat(64), "", norm).is_ok());
    let result = std::panic::catch_unwind(|| tools::new_func("bad name", "", norm));
    let panic = result.unwrap_err();
    let text = panic.downcast_ref::<String>().unwrap();
    assert!(text.contains("invalid tool name \"bad name\""), "{text}");
}

#[tokio::test]
async fn manual_tools_need_object_schemas() {
    let handler = |_c: ToolContext, i: String| async move { Ok::<_, ToolError>(i) };
    let err = tools::try_new_tool("t", "", json!({"type": "string"}), handler).unwrap_err();
    assert!(err.message().contains("\"type\": \"object\""), "{err}");
    let err = tools::try_new_tool("t", "", json!([1]), handler).unwrap_err();
    assert!(err.message().contains("must be a JSON object"), "{err}");
    let tool = tools::try_new_tool("t", "d", json!({"type": "object"}), handler).unwrap();
    assert_eq!(
        tool.handle(&ctx(), "raw input, unparsed").await.unwrap(),
        "raw input, unparsed"
    );
}

#[test]
fn non_object_input_types_are_refused() {
    let err = tools::try_new_func(
        "strings",
        "",
        |s: String| async move { Ok::<_, ToolError>(s) },
    )
    .unwrap_err();
    assert!(
        err.message()
            .contains("must be a struct with named fields (or a map)"),
        "{err}"
    );
    assert!(
        err.message()
            .contains("`struct Input { value: alloc::string::String }`"),
        "the fix is spelled out: {err}"
    );
}

#[test]
#[should_panic(expected = "tools::new_func: the input type of tool \"numbers\" is `f64`")]
fn new_func_names_a_non_object_input_when_it_panics() {
    let _ = tools::new_func("numbers", "", |x: f64| async move { Ok::<_, ToolError>(x) });
}
