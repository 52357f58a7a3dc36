//! Bad input never panics and always gives a `ToolError` naming the problem.

use schemars::JsonSchema;
use serde::Deserialize;
use tinyagent::Tool;
use tinyagent::tools;
use tinyagent::{ToolContext, ToolError, ToolErrorKind};

async fn call_calc(input: &str) -> ToolError {
    tinyagent_demo::calculator_tool()
        .handle(&ToolContext::default(), input)
        .await
        .expect_err("bad input must fail")
}

#[tokio::test]
async fn invalid_json() {
    let err = call_calc(r#"{"operation": "add", "a": 1,"#).await;
    assert_eq!(err.kind(), ToolErrorKind::InvalidInput);
    assert!(err.message().contains("not valid JSON"), "{err}");
    assert!(err.message().contains("line 1 column"), "{err}");
    assert!(
        err.message()
            .contains(r#"input was "{\"operation\": \"add\""#),
        "{err}"
    );

    let err = call_calc("not json at all").await;
    assert!(err.message().contains("not valid JSON"), "{err}");
    let err = call_calc(r#"{"operation":"add","a":1,"b":2} trailing"#).await;
    assert!(err.message().contains("trailing characters"), "{err}");
}

#[tokio::test]
async fn arrays_and_strings_where_an_object_is_expected() {
    let err = call_calc(r#"[1, 2, 3]"#).await;
    assert_eq!(err.kind(), ToolErrorKind::InvalidInput);
    assert!(
        err.message()
            .contains("expected a JSON object with the tool's arguments, got an array"),
        "{err}"
    );
    let err = call_calc(r#""add 1 and 2""#).await;
    assert!(err.message().contains("got a string"), "{err}");
    let err = call_calc("42").await;
    assert!(err.message().contains("got a number"), "{err}");
    let err = call_calc("null").await;
    assert!(err.message().contains("got null"), "{err}");
}

#[tokio::test]
async fn wrong_field_types_name_the_field() {
    let err = call_calc(r#"{"operation": "add", "a": "ten", "b": 3}"#).await;
    assert!(err.message().contains("at `a`"), "{err}");
    assert!(err.message().contains("expected f64"), "{err}");
    assert!(err.message().contains("line 1 column"), "{err}");
    let err = call_calc(r#"{"operation": 7, "a": 1}"#).await;
    assert!(err.message().contains("at `operation`"), "{err}");
}

#[tokio::test]
async fn missing_required_fields() {
    let err = call_calc(r#"{"a": 1}"#).await;
    assert!(err.message().contains("missing field `operation`"), "{err}");
    let err = call_calc("").await;
    assert!(
        err.message().contains("missing field `operation`"),
        "empty input counts as {{}}: {err}"
    );
}

#[tokio::test]
async fn ten_megabyte_input_is_refused_and_quoted_briefly() {
    let big = format!(
        r#"{{"operation": "add", "a": 1, "b": 2, "pad": "{}"#,
        "x".repeat(10 << 20)
    );
    let err = call_calc(&big).await;
    assert_eq!(err.kind(), ToolErrorKind::InvalidInput);
    assert!(
        err.message().len() < 1_000,
        "message is {} bytes",
        err.message().len()
    );
    assert!(
        err.message().contains("more bytes)"),
        "{}",
        &err.message()[..300]
    );

    // A big valid input works: unknown fields are ignored.
    let big_ok = format!(
        r#"{{"operation": "add", "a": 1, "b": 2, "pad": "{}"}}"#,
        "x".repeat(10 << 20)
    );
    let out = tinyagent_demo::calculator_tool()
        .handle(&ToolContext::default(), &big_ok)
        .await
        .unwrap();
    assert!(out.contains("1.00 + 2.00 = 3.00"));
}

#[tokio::test]
async fn deeply_nested_json() {
    let deep = format!("{}{}", "[".repeat(10_000), "]".repeat(10_000));
    let err = call_calc(&deep).await;
    assert_eq!(err.kind(), ToolErrorKind::InvalidInput);
    let nested = format!("{}1{}", r#"{"k":"#.repeat(10_000), "}".repeat(10_000));

    // Deep JSON in a field the tool ignores is skipped without recursion: the call works.
    let ignored = format!(r#"{{"operation": "add", "a": 1, "b": 2, "x": {nested}}}"#);
    let out = tinyagent_demo::calculator_tool()
        .handle(&ToolContext::default(), &ignored)
        .await
        .unwrap();
    assert!(out.contains("3.00"));

    // Deep JSON in a field that is read hits serde_json's recursion limit, not the stack.
    #[derive(Deserialize, JsonSchema)]
    struct Doc {
        #[allow(dead_code)]
        body: serde_json::Value,
    }
    let tool = tools::new_func("doc", "", |_d: Doc| async { Ok::<_, ToolError>("read") });
    let err = tool
        .handle(&ToolContext::default(), &format!(r#"{{"body": {nested}}}"#))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ToolErrorKind::InvalidInput);
    assert!(
        err.message().contains("recursion limit exceeded"),
        "{}",
        &err.message()[..200]
    );
    let validator = tools::schema::SchemaValidator::new(tool.input_schema()).unwrap();
    let err = validator.validate_str(&nested).unwrap_err();
    assert!(
        err.message().contains("recursion limit exceeded"),
        "{}",
        &err.message()[..200]
    );
    // The agent-tool form parses input as a JSON value first: deep input must not break it.
    let translator = tinyagent_demo::translator_tool();
    let out = translator
        .handle(&ToolContext::default(), &deep)
        .await
        .unwrap();
    assert_eq!(out.len(), deep.len() + "[翻译结果]  → Hello, World!".len());
}

#[tokio::test]
async fn invalid_unicode_escapes() {
    let err = call_calc(r#"{"operation": "add\ud800", "a": 1, "b": 2}"#).await;
    assert_eq!(err.kind(), ToolErrorKind::InvalidInput);
    assert!(err.message().contains("escape"), "{err}");
    let err = call_calc(r#"{"operation": "add\ud800\u0041", "a": 1, "b": 2}"#).await;
    assert!(err.message().contains("surrogate"), "{err}");
    let err = call_calc(r#"{"operation": "\uZZZZ", "a": 1}"#).await;
    assert!(err.message().contains("escape"), "{err}");
}

#[tokio::test]
async fn every_demo_tool_survives_garbage() {
    let inputs = [
        "",
        "null",
        "{}",
        "[]",
        "\"\"",
        "{\"\":{}}",
        "\u{0}",
        "{\"city\":null}",
        "🙂",
    ];
    for tool in tinyagent_demo::all_tools() {
        for input in inputs {
            // Must not panic; either an answer or a ToolError with a message.
            if let Err(err) = tool.handle(&ToolContext::default(), input).await {
                assert!(!err.message().is_empty(), "{} on {input:?}", tool.name());
            }
        }
    }
}
