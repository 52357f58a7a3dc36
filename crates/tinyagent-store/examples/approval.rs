//! A payment that waits for a person, across processes: one run of this program asks, the run
//! pauses with the payment waiting in the SQLite file; a later run (another process) approves
//! or denies it, and the agent goes on from there. The payment runs at most once, however
//! often the approval is sent.
//!
//!     cargo run -p tinyagent-store --example approval -- FILE ask "Pay Alice 5 dollars"
//!     cargo run -p tinyagent-store --example approval -- FILE show
//!     cargo run -p tinyagent-store --example approval -- FILE approve CALL_ID
//!     cargo run -p tinyagent-store --example approval -- FILE deny CALL_ID "REASON"
//!
//! The model is a stand-in (no network): it asks for `pay` with the first number of the
//! message as dollars, and reports what the tool said.

use std::process::ExitCode;

use tinyagent::agent::{Decisions, SessionRunner};
use tinyagent::tools::middleware::{Approval, ApprovalLayer, approval_fn};
use tinyagent::{
    AgentError, BoxFuture, LlmAgent, Message, Model, ModelError, ModelRequest, ModelResponse, Part,
    Role, ToolCall, ToolError, Usage, model::FinishReason, store::new_id, tools,
};
use tinyagent_store::SqliteStore;

const SESSION: &str = "ses_payments";

/// Asks to pay the first number in the user's message, in dollars; then reports the result.
struct Cashier;

impl Model for Cashier {
    fn generate<'a>(
        &'a self,
        req: &'a ModelRequest,
    ) -> BoxFuture<'a, Result<ModelResponse, ModelError>> {
        Box::pin(async move {
            let last = req.messages.last().expect("a message");
            let reply = match last.tool_results().next() {
                Some(result) => Message::assistant(format!("Payment: {}", result.content)),
                None => {
                    let text = last.text();
                    let dollars: u64 = text
                        .split(|c: char| !c.is_ascii_digit())
                        .find_map(|n| n.parse().ok())
                        .unwrap_or(1);
                    let args = format!(r#"{{"to": "Alice", "cents": {}}}"#, dollars * 100);
                    Message::new(
                        Role::Assistant,
                        vec![Part::ToolCall(ToolCall::new(new_id("call"), "pay", args))],
                    )
                }
            };
            let finish = if reply.has_tool_calls() {
                FinishReason::ToolCalls
            } else {
                FinishReason::Stop
            };
            Ok(ModelResponse::new(reply, Usage::new(20, 10), finish))
        })
    }
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Payment {
    /// Who is paid.
    to: String,
    /// How much, in cents.
    cents: u64,
}

fn agent() -> LlmAgent {
    let pay = tools::new_func("pay", "Pays someone", |p: Payment| async move {
        println!("  (the pay tool runs: {} cents to {})", p.cents, p.to);
        Ok::<_, ToolError>(format!("{} cents sent to {}", p.cents, p.to))
    });
    LlmAgent::builder("cashier")
        .model(Cashier)
        .tool(pay)
        .middleware([ApprovalLayer::new(approval_fn(|req| async move {
            Approval::defer(format!("{} moves money: a person approves it", req.tool))
        }))
        .into()])
        .build()
        .expect("an agent")
}

async fn show(runner: &SessionRunner) -> Result<(), AgentError> {
    match runner.paused(SESSION).await? {
        Some(paused) => {
            for waiting in paused.pending() {
                println!("waiting: {waiting}");
            }
        }
        None => println!("nothing waits"),
    }
    Ok(())
}

fn answered(result: Result<String, AgentError>) -> Result<(), AgentError> {
    match result {
        Ok(answer) => println!("answer: {answer}"),
        Err(AgentError::Paused { pending, .. }) => {
            for waiting in pending {
                println!("paused; waiting: {waiting}");
            }
        }
        Err(err) => return Err(err),
    }
    Ok(())
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let usage = "usage: approval FILE (ask MESSAGE | show | approve CALL_ID | deny CALL_ID REASON)";
    let (Some(file), Some(command)) = (args.first(), args.get(1)) else {
        eprintln!("{usage}");
        return ExitCode::from(2);
    };
    let store = match SqliteStore::open(file).await {
        Ok(store) => store,
        Err(err) => {
            eprintln!("cannot open {file}: {err}");
            return ExitCode::FAILURE;
        }
    };
    let runner = SessionRunner::new(agent(), store);
    let arg = |k: usize| args.get(k).cloned().unwrap_or_default();
    let result = match command.as_str() {
        "ask" => answered(runner.ask(SESSION, arg(2)).await),
        "show" => show(&runner).await,
        "approve" => answered(
            runner
                .resume_answer(SESSION, Decisions::new().approve(arg(2)))
                .await,
        ),
        "deny" => answered(
            runner
                .resume_answer(SESSION, Decisions::new().deny(arg(2), arg(3)))
                .await,
        ),
        _ => {
            eprintln!("{usage}");
            return ExitCode::from(2);
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("error: {err}");
            ExitCode::FAILURE
        }
    }
}
