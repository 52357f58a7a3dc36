//! The ways of making tools: results, errors and bad input.

use std::sync::Arc;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;
use tinyagent::Tool;
use tinyagent::tools::{self, json_adapter};
use tinyagent::{Handler, ToolContext, ToolError, ToolErrorKind, handler_fn};

fn ctx() -> ToolContext {
    ToolContext::default()
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
