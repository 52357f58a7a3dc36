//! The easy path: typed functions with or without a context, text and JSON outputs, user
//! errors that say their kind, hints on `new_func` tools, and tools given to an agent as made.

use std::io;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tinyagent::Tool;
use tinyagent::testing::{ScriptedModel, reply};
use tinyagent::tools::{self, Json, ToolErrorKindHint, ToolOutput};
use tinyagent::{AgentExt, LlmAgent, Session, ToolContext, ToolError, ToolErrorKind};

#[derive(Deserialize, JsonSchema)]
struct Greet {
    name: String,
}

#[derive(Serialize)]
struct Greeting {
    text: String,
    length: usize,
}

fn ctx() -> ToolContext {
    ToolContext::default()
}

#[tokio::test]
async fn functions_take_the_context_or_not() {
    async fn plain(g: Greet) -> Result<String, ToolError> {
        Ok(format!("hello, {}", g.name))
    }
    async fn with_ctx(ctx: ToolContext, g: Greet) -> Result<String, ToolError> {
        Ok(format!("hello, {} ({:?})", g.name, ctx.call_id()))
    }
    let a = tools::new_func("plain", "greets", plain);
    let b = tools::new_func("with_ctx", "greets", with_ctx);
    let c = tools::new_func("closure", "greets", |g: Greet| async move {
        Ok::<_, String>(format!("hi {}", g.name))
    });
    let call = ctx().with_call_id("c7");
    assert_eq!(
        a.handle(&call, r#"{"name":"Ada"}"#).await.unwrap(),
        "hello, Ada"
    );
    assert_eq!(
        b.handle(&call, r#"{"name":"Ada"}"#).await.unwrap(),
        r#"hello, Ada (Some("c7"))"#
    );
    assert_eq!(c.handle(&call, r#"{"name":"Bo"}"#).await.unwrap(), "hi Bo");
    assert_eq!(a.input_schema(), b.input_schema());
}

#[tokio::test]
async fn text_passes_through_and_values_are_json() {
    let text = tools::new_func("t", "", |g: Greet| async move {
        Ok::<_, ToolError>(format!("\"{}\" said hi", g.name))
    });
    assert_eq!(
        text.handle(&ctx(), r#"{"name":"Ada"}"#).await.unwrap(),
        r#""Ada" said hi"#,
        "a String reaches the model as text, not JSON-quoted"
    );
    let quoted = tools::new_func("q", "", |g: Greet| async move {
        Ok::<_, ToolError>(Json(g.name))
    });
    assert_eq!(
        quoted.handle(&ctx(), r#"{"name":"Ada"}"#).await.unwrap(),
        r#""Ada""#
    );
    let value = tools::new_func("v", "", |g: Greet| async move {
        Ok::<_, ToolError>(Greeting {
            length: g.name.len(),
            text: g.name,
        })
    });
    assert_eq!(
        value.handle(&ctx(), r#"{"name":"Ada"}"#).await.unwrap(),
        r#"{"text":"Ada","length":3}"#
    );
    let rich = tools::new_func("r", "", |g: Greet| async move {
        Ok::<_, ToolError>(if g.name.is_empty() {
            ToolOutput::error("a name is needed")
        } else {
            ToolOutput::text(g.name)
        })
    });
    assert_eq!(
        rich.handle(&ctx(), r#"{"name":"Ada"}"#).await.unwrap(),
        "Ada"
    );
    let err = rich.handle(&ctx(), r#"{"name":""}"#).await.unwrap_err();
    assert_eq!(err.kind(), ToolErrorKind::Failed);
    assert_eq!(err.to_string(), "a name is needed");
}

/// A user's error type that says its kind, without a derive.
#[derive(Debug)]
enum ShopError {
    Busy,
    NoSuchOrder(u64),
}

impl std::fmt::Display for ShopError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Busy => f.write_str("the shop backend is busy"),
            Self::NoSuchOrder(id) => write!(f, "there is no order {id}"),
        }
    }
}

impl std::error::Error for ShopError {}

impl ToolErrorKindHint for ShopError {
    fn kind(&self) -> ToolErrorKind {
        match self {
            Self::Busy => ToolErrorKind::Unavailable,
            Self::NoSuchOrder(_) => ToolErrorKind::NotFound,
        }
    }
}

#[derive(Deserialize, JsonSchema)]
struct Lookup {
    id: u64,
}

/// A lookup that fails with `Busy` the first `busy` times it is called.
fn flaky_lookup(
    calls: Arc<AtomicUsize>,
    busy: usize,
) -> impl Fn(Lookup) -> std::pin::Pin<Box<dyn Future<Output = Result<String, ShopError>> + Send>>
+ Send
+ Sync
+ 'static {
    move |q: Lookup| {
        let n = calls.fetch_add(1, Ordering::SeqCst);
        Box::pin(async move {
            if n < busy {
                Err(ShopError::Busy)
            } else if q.id == 404 {
                Err(ShopError::NoSuchOrder(q.id))
            } else {
                Ok(format!("order {} shipped", q.id))
            }
        })
    }
}

#[tokio::test(start_paused = true)]
async fn user_errors_say_their_kind_and_retry_acts_on_it() {
    let calls = Arc::new(AtomicUsize::new(0));
    let tool =
        tools::new_func("lookup", "finds an order", flaky_lookup(calls.clone(), 1)).read_only();
    let retried = tools::wrap_tool(tool, [tools::with_retry(2)]);
    assert_eq!(
        retried.handle(&ctx(), r#"{"id": 7}"#).await.unwrap(),
        "order 7 shipped"
    );
    assert_eq!(calls.load(Ordering::SeqCst), 2, "one failure, one retry");

    // Not found is not retryable: one call, the kind and text kept.
    let calls = Arc::new(AtomicUsize::new(0));
    let tool = tools::new_func("lookup", "finds an order", flaky_lookup(calls.clone(), 0));
    let retried = tools::wrap_tool(tool.read_only(), [tools::with_retry(2)]);
    let err = retried.handle(&ctx(), r#"{"id": 404}"#).await.unwrap_err();
    assert_eq!(err.kind(), ToolErrorKind::NotFound);
    assert_eq!(err.to_string(), "there is no order 404");
    assert_eq!(calls.load(Ordering::SeqCst), 1);
}

#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl io::Write for Captured {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[tokio::test(start_paused = true)]
async fn retry_on_a_tool_it_will_not_repeat_warns_once_when_built() {
    let captured = Captured::default();
    let writer = captured.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_writer(move || writer.clone())
        .with_ansi(false)
        .with_max_level(tracing::Level::WARN)
        .finish();
    let _guard = tracing::subscriber::set_default(subscriber);

    let calls = Arc::new(AtomicUsize::new(0));
    let unmarked = tools::new_func("lookup", "finds an order", flaky_lookup(calls.clone(), 1));
    let wrapped = tools::wrap_tool(unmarked, [tools::with_retry(2)]);
    let log = String::from_utf8(captured.0.lock().unwrap().clone()).unwrap();
    assert_eq!(log.matches("WARN").count(), 1, "{log}");
    assert!(
        log.contains("with_retry on tool \"lookup\", which is neither read-only nor idempotent"),
        "{log}"
    );

    let err = wrapped.handle(&ctx(), r#"{"id": 7}"#).await.unwrap_err();
    assert_eq!(err.kind(), ToolErrorKind::Unavailable);
    assert_eq!(calls.load(Ordering::SeqCst), 1, "never repeated");
    let log = String::from_utf8(captured.0.lock().unwrap().clone()).unwrap();
    assert_eq!(log.matches("WARN").count(), 1, "no warning per call: {log}");

    // Marked idempotent, the same tool is retried and nothing is logged at build.
    captured.0.lock().unwrap().clear();
    calls.store(0, Ordering::SeqCst);
    let marked =
        tools::new_func("lookup", "finds an order", flaky_lookup(calls.clone(), 1)).idempotent();
    assert!(marked.hints().idempotent && !marked.hints().read_only);
    let wrapped = tools::wrap_tool(marked, [tools::with_retry(2)]);
    assert!(captured.0.lock().unwrap().is_empty());
    assert_eq!(
        wrapped.handle(&ctx(), r#"{"id": 7}"#).await.unwrap(),
        "order 7 shipped"
    );
    assert_eq!(calls.load(Ordering::SeqCst), 2);
}

#[test]
fn hinted_errors_convert_with_the_question_mark() {
    fn check(id: u64) -> Result<u64, ShopError> {
        if id == 0 {
            Err(ShopError::NoSuchOrder(0))
        } else {
            Ok(id)
        }
    }
    fn tool_body(id: u64) -> Result<u64, ToolError> {
        Ok(check(id)?)
    }
    let err = tool_body(0).unwrap_err();
    assert_eq!(err.kind(), ToolErrorKind::NotFound);
    assert!(!err.is_retryable());
    assert_eq!(err.to_string(), "there is no order 0");
    assert!(std::error::Error::source(&err).is_some());
}

#[tokio::test]
async fn an_agent_takes_tools_as_they_were_made() {
    let model = Arc::new(ScriptedModel::new([
        reply::tool_call("c1", "greet", r#"{"name": "Ada"}"#),
        reply::text("done"),
    ]));
    let agent = LlmAgent::builder("greeter")
        .model(model.clone())
        .tool(
            tools::new_func("greet", "Greets someone", |g: Greet| async move {
                Ok::<_, ToolError>(format!("hello, {}", g.name))
            })
            .read_only(),
        )
        .build()
        .unwrap();
    assert_eq!(
        agent.ask(&Session::new(), "greet Ada").await.unwrap(),
        "done"
    );
    let requests = model.requests();
    let result = requests[1]
        .messages
        .last()
        .unwrap()
        .tool_results()
        .next()
        .unwrap()
        .clone();
    assert_eq!(result.content, "hello, Ada");
    assert!(!result.is_error);
}
