//! A support bot: typed tools, a role resolver, retry, an agent tool, MCP tools and a (scripted)
//! model. `cargo run -p tinyagent-mcp --example support_bot`; `OpenAiModel::from_env()?` is real.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use tinyagent::testing::{ScriptedModel, reply};
use tinyagent::tools::{self, IntoTool, ToolErrorKindHint};
use tinyagent::{AgentExt, Invocation, LlmAgent, Session, ToolError, ToolErrorKind, tool};
use tinyagent_mcp::{McpServer, McpToolset};

#[derive(Debug, thiserror::Error)]
enum ShopError {
    #[error("the order system is busy, try again")]
    Busy,
    #[error("there is no order {0}")]
    NoSuchOrder(u64),
}

impl ToolErrorKindHint for ShopError {
    fn kind(&self) -> ToolErrorKind {
        match self {
            Self::Busy => ToolErrorKind::Unavailable, // retryable
            Self::NoSuchOrder(_) => ToolErrorKind::NotFound,
        }
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
enum RefundReason {
    Damaged,
    Late,
    Other,
}

/// Calls of the order system, which is busy on the first one.
pub(crate) static LOOKUPS: AtomicUsize = AtomicUsize::new(0);

/// Looks up an order by its number.
#[tool(read_only)]
async fn lookup_order(
    /// The order number, as on the receipt
    order_id: u64,
) -> Result<Value, ShopError> {
    match (LOOKUPS.fetch_add(1, Ordering::SeqCst), order_id) {
        (0, _) => Err(ShopError::Busy),
        (_, 1..=999) => Ok(json!({"id": order_id, "status": "shipped"})),
        _ => Err(ShopError::NoSuchOrder(order_id)),
    }
}

/// Refunds an order.
#[tool]
async fn refund(order_id: u64, reason: RefundReason) -> Result<String, ShopError> {
    Ok(format!("order {order_id} refunded ({reason:?})"))
}

/// The help-center search, which runs elsewhere as an MCP server.
#[tool(read_only)]
async fn search(query: String) -> Result<String, ToolError> {
    Ok(format!("article 12: how refunds work ({query})"))
}

/// Runs the bot once for a user of `role`; returns the answer and the model (to inspect).
pub(crate) async fn run(
    role: &str,
) -> Result<(String, Arc<ScriptedModel>), Box<dyn std::error::Error>> {
    let help_center = McpServer::new([search_tool().into_tool()])
        .serve_http("127.0.0.1:0")
        .await?;
    let model = Arc::new(ScriptedModel::new([
        reply::tool_call("c1", "lookup_order", r#"{"order_id": 42}"#),
        reply::tool_call("c2", "kb_search", r#"{"query": "refund damaged"}"#),
        reply::tool_call("c3", "refund", r#"{"order_id": 42, "reason": "damaged"}"#),
        reply::tool_call("c4", "tone_checker", r#"{"message": "Refunded, sorry!"}"#),
        reply::text("Friendly."), // the tone checker's own answer
        reply::text("Order 42 was shipped damaged; it is refunded. Sorry!"),
    ]));
    let tone_checker = LlmAgent::builder("tone_checker")
        .description("Checks that a reply is friendly")
        .model(model.clone())
        .build()?;
    let by_role = tools::resolver_fn(|inv: &Invocation| {
        let supervisor = inv.session().get_str("role").as_deref() == Some("supervisor");
        let offered: Vec<_> = supervisor
            .then(|| refund_tool().into_tool())
            .into_iter()
            .collect();
        async move { Ok::<_, ToolError>(offered) }
    });
    let bot = LlmAgent::builder("support")
        .instruction("You help customers with their orders.")
        .model(model.clone())
        .tool(tools::wrap_tool(
            lookup_order_tool(),
            [tools::with_retry(2)],
        ))
        .tool(tools::new_agent_tool(tone_checker))
        .tool_resolver(by_role)
        .tool_resolver(McpToolset::http(help_center.url()).prefix("kb_"))
        .build()?;
    let session = Session::new();
    session.set("role", role);
    let answer = bot.ask(&session, "My order 42 arrived broken.").await?;
    drop(bot);
    help_center.shutdown().await;
    Ok((answer, model))
}

#[allow(dead_code)]
#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    tracing_subscriber::fmt()
        .with_max_level(tracing::Level::WARN)
        .init(); // shows the retry
    let (answer, _) = run("supervisor").await?;
    println!("{answer}");
    Ok(())
}
