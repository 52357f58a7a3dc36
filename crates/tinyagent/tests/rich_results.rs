//! Rich tool results: content parts and structured content from typed tools, `#[tool]` fns and
//! hand-written tools reach the agent's tool results whole, through middleware (the cache
//! included), bounded by the tool output limit, and stored sessions written before rich results
//! still load.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;
use tinyagent::testing::{ScriptedModel, reply};
use tinyagent::tools::middleware::CacheLayer;
use tinyagent::tools::{self, Structured, ToolInput, ToolOutput};
use tinyagent::{
    AgentExt, BoxFuture, ContentPart, LlmAgent, Message, Session, Tool, ToolContext, ToolError,
    ToolResult, tool,
};

#[derive(Deserialize, JsonSchema)]
struct Chart {
    /// How many bytes the chart has
    size: usize,
}

#[derive(Serialize, JsonSchema)]
struct Weather {
    celsius: f64,
    condition: String,
}

fn chart_tool() -> Arc<dyn Tool> {
    Arc::new(tools::new_func(
        "chart",
        "Draws a chart",
        |c: Chart| async move {
            Ok::<_, ToolError>(
                ToolOutput::text("sales by month:")
                    .with_part(ContentPart::image_bytes(&vec![0x42; c.size], "image/png")),
            )
        },
    ))
}

async fn tool_result_of(tool: Arc<dyn Tool>, args: &str, max: Option<usize>) -> ToolResult {
    let model = Arc::new(ScriptedModel::new([
        reply::tool_call("c1", tool.name(), args),
        reply::text("done"),
    ]));
    let agent = LlmAgent::builder("a")
        .model(model.clone())
        .tool(tool)
        .max_tool_output(max)
        .build()
        .unwrap();
    assert_eq!(agent.ask(&Session::new(), "go").await.unwrap(), "done");
    let requests = model.requests();
    let last = requests[1].messages.last().unwrap();
    last.tool_results().next().unwrap().clone()
}

#[tokio::test]
async fn a_typed_tool_returns_an_image_that_reaches_the_tool_result() {
    let result = tool_result_of(chart_tool(), r#"{"size": 5200}"#, None).await;
    assert!(!result.is_error);
    assert_eq!(result.content, "sales by month:\n[image image/png, 5.2 kB]");
    assert_eq!(result.parts.len(), 2);
    assert_eq!(result.parts[0], ContentPart::text("sales by month:"));
    match &result.parts[1] {
        ContentPart::Image { data, mime_type } => {
            assert_eq!(mime_type, "image/png");
            assert_eq!(data.len(), 5200 / 3 * 4 + 4);
        }
        other => panic!("expected an image, got {other:?}"),
    }
    assert!(result.has_media());
}

#[tokio::test]
async fn an_image_over_the_output_limit_is_described_not_sent() {
    let result = tool_result_of(chart_tool(), r#"{"size": 50000000}"#, Some(20_000)).await;
    assert!(!result.has_media(), "{:?}", result.parts.len());
    assert!(
        result.content.starts_with(
            "sales by month:\n[image image/png, 50.0 MB] (left out: larger than the \
             20000-character tool output limit)"
        ),
        "{}",
        result.content
    );
    assert!(result.content.len() < 200);
}

#[tokio::test]
async fn structured_output_carries_its_schema_and_value() {
    let weather = tools::new_func("weather", "Current weather", |_: Chart| async move {
        Ok::<_, ToolError>(Structured(Weather {
            celsius: 22.5,
            condition: "晴".into(),
        }))
    })
    .with_title("Weather now")
    .with_output_schema_of::<Weather>();
    let def = weather.definition();
    assert_eq!(def.title.as_deref(), Some("Weather now"));
    assert_eq!(
        def.output_schema.as_ref().unwrap()["properties"]["celsius"]["type"],
        "number"
    );
    let result = tool_result_of(Arc::new(weather), r#"{"size": 1}"#, None).await;
    assert_eq!(result.content, r#"{"celsius":22.5,"condition":"晴"}"#);
    assert_eq!(
        result.structured,
        Some(json!({"celsius": 22.5, "condition": "晴"}))
    );
    assert!(result.parts.is_empty());
}

#[tool(read_only)]
/// Returns a notes file as an embedded resource.
async fn notes(
    /// The note's name
    name: String,
) -> Result<ToolOutput, ToolError> {
    Ok(ToolOutput::parts([ContentPart::resource_text(
        format!("file:///notes/{name}.txt"),
        Some("text/plain".into()),
        "buy milk",
    )]))
}

#[tokio::test]
async fn a_tool_macro_fn_returns_parts() {
    let result = tool_result_of(Arc::new(notes_tool()), r#"{"name": "todo"}"#, None).await;
    assert_eq!(
        result.content,
        "[resource file:///notes/todo.txt (text/plain)]\nbuy milk"
    );
    assert_eq!(
        result.parts,
        vec![ContentPart::resource_text(
            "file:///notes/todo.txt",
            Some("text/plain".into()),
            "buy milk"
        )]
    );
}

/// A hand-written tool whose output is an audio clip.
struct Snap(serde_json::Value);

impl Tool for Snap {
    fn name(&self) -> &str {
        "snap"
    }
    fn description(&self) -> &str {
        "Records a sound"
    }
    fn input_schema(&self) -> &serde_json::Value {
        &self.0
    }
    fn call<'a>(
        &'a self,
        _ctx: &'a ToolContext,
        _input: ToolInput,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async {
            Ok(ToolOutput::parts([ContentPart::audio(
                "UklGRg==",
                "audio/wav",
            )]))
        })
    }
}

#[tokio::test]
async fn a_hand_written_tool_gives_its_parts_whole() {
    let tool = Arc::new(Snap(json!({"type": "object"})));
    let output = tool
        .call(&ToolContext::new(), ToolInput::from_text("{}"))
        .await
        .unwrap();
    assert_eq!(output.as_text(), "[audio audio/wav, 4 B]");
    assert_eq!(output.content_parts().len(), 1);
    // The seed's text-in, text-out shortcut reads the text.
    let text = tool.handle(&ToolContext::new(), "{}").await.unwrap();
    assert_eq!(text, "[audio audio/wav, 4 B]");
    let result = tool_result_of(tool, "{}", None).await;
    assert_eq!(
        result.parts,
        vec![ContentPart::audio("UklGRg==", "audio/wav")]
    );
}

#[tokio::test]
async fn a_cached_result_keeps_its_image_and_structured_content() {
    let runs = Arc::new(AtomicUsize::new(0));
    let counter = runs.clone();
    let chart = tools::new_func("chart", "Draws a chart", move |c: Chart| {
        let counter = counter.clone();
        async move {
            counter.fetch_add(1, Ordering::SeqCst);
            Ok::<_, ToolError>(
                ToolOutput::text("sales by month:")
                    .with_part(ContentPart::image_bytes(&vec![0x42; c.size], "image/png"))
                    .with_structured(json!({"months": 12, "size": c.size})),
            )
        }
    })
    .read_only();
    let cached = tools::wrap_tool(
        chart,
        [CacheLayer::new().ttl(Duration::from_secs(60)).into()],
    );
    let ctx = ToolContext::new();
    let first = cached
        .call(&ctx, ToolInput::from_text(r#"{"size": 30}"#))
        .await
        .unwrap();
    // The same arguments, written differently: served from the cache.
    let second = cached
        .call(&ctx, ToolInput::from_text(r#"{ "size" : 30 }"#))
        .await
        .unwrap();
    assert_eq!(runs.load(Ordering::SeqCst), 1, "the second call was cached");
    assert_eq!(second, first);
    assert_eq!(second.content_parts().len(), 2);
    assert!(matches!(
        &second.content_parts()[1],
        ContentPart::Image { mime_type, .. } if mime_type == "image/png"
    ));
    assert_eq!(
        second.structured_content(),
        Some(&json!({"months": 12, "size": 30}))
    );
    // Through an agent, the cached output reaches the tool result whole.
    let result = tool_result_of(cached, r#"{"size": 30}"#, None).await;
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    assert!(result.has_media());
    assert_eq!(result.structured, Some(json!({"months": 12, "size": 30})));
}

#[tokio::test]
async fn an_error_output_has_no_parts() {
    let failing = tools::new_func("chart", "Draws a chart", |_: Chart| async move {
        Ok::<_, ToolError>(ToolOutput::error("no data for that month"))
    });
    let result = tool_result_of(Arc::new(failing), r#"{"size": 1}"#, None).await;
    assert!(result.is_error);
    assert_eq!(result.content, "no data for that month");
    assert!(result.parts.is_empty() && result.structured.is_none());
}

#[test]
fn stored_messages_without_parts_still_load_and_rich_ones_round_trip() {
    let old = json!({"id": "m1", "role": "tool", "parts": [
        {"type": "tool_result", "call_id": "c1", "name": "calc", "content": "3", "is_error": false}
    ]});
    let message: Message = serde_json::from_value(old.clone()).unwrap();
    let result = message.tool_results().next().unwrap();
    assert!(result.parts.is_empty() && result.structured.is_none());
    assert_eq!(
        serde_json::to_value(&message).unwrap(),
        old,
        "plain results keep their shape"
    );

    let rich =
        Message::from_tool_results([ToolResult::ok("c2", "chart", "[image image/png, 3 B]")
            .parts(vec![ContentPart::image("AAAA", "image/png")])
            .structured(json!({"points": 3}))])
        .id("m2");
    let v = serde_json::to_value(&rich).unwrap();
    assert_eq!(
        v["parts"][0]["parts"],
        json!([{"type": "image", "data": "AAAA", "mime_type": "image/png"}])
    );
    assert_eq!(v["parts"][0]["structured"], json!({"points": 3}));
    assert_eq!(serde_json::from_value::<Message>(v).unwrap(), rich);
}
