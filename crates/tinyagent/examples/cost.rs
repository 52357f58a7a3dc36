//! What a tree of agents costs, in money: each model call priced from a price table, the run's
//! total, the whole tree's (a sub-agent called as a tool included), and a money budget that
//! stops the tree before it spends more. Runs offline, on scripted models whose usage stands
//! in for a provider's.
//!
//! Run with `cargo run -p tinyagent --example cost`.

use futures::StreamExt;
use tinyagent::budget::SharedBudget;
use tinyagent::model::{Cost, Price, PriceTable};
use tinyagent::testing::{ScriptedModel, reply};
use tinyagent::tools::new_agent_tool;
use tinyagent::{Agent, AgentError, Budget, Event, Invocation, LlmAgent, Session, Usage};

/// The price of the scripted model, US dollars per million tokens: input, output.
fn prices() -> PriceTable {
    PriceTable::empty().price("scripted", Price::new(2.50, 10.00))
}

/// A researcher (a sub-agent) and a coordinator that calls it as a tool, each on a scripted
/// model reporting the tokens a real one would.
fn coordinator(calls: usize) -> LlmAgent {
    let researcher_model =
        ScriptedModel::new([
            reply::text("Three sources agree: 22.5 °C and sunny.").usage(Usage::new(12_000, 800))
        ]);
    let researcher = LlmAgent::builder("researcher")
        .description("Researches a question in depth")
        .model(researcher_model)
        .prices(prices())
        .build()
        .expect("an agent");
    let model = ScriptedModel::default();
    for _ in 0..calls {
        model.push(
            reply::tool_call("", "researcher", r#"{"message": "Beijing weather today"}"#)
                .usage(Usage::new(3_000, 120)),
        );
    }
    model.push(reply::text("It is 22.5 °C and sunny in Beijing.").usage(Usage::new(4_000, 60)));
    LlmAgent::builder("coordinator")
        .model(model)
        .tool(new_agent_tool(researcher))
        .prices(prices())
        .build()
        .expect("an agent")
}

/// Runs `agent` on `question` within `budget` (shared by every agent of the tree), showing
/// each step's cost.
async fn run(agent: &LlmAgent, question: &str, budget: &SharedBudget) -> Result<(), AgentError> {
    let inv = Invocation::new(Session::new(), question).with_budget(budget.clone());
    let mut events = agent.run(inv);
    while let Some(event) = events.next().await {
        match event? {
            Event::Usage { step, usage, .. } => println!(
                "  step {step}: {} in, {} out: {}",
                usage.input_tokens.unwrap_or(0),
                usage.output_tokens.unwrap_or(0),
                usage.cost.unwrap_or_default()
            ),
            Event::ToolCallFinished { result, .. } => {
                println!("  {} answered: {}", result.name, result.content)
            }
            Event::Finished { answer, usage, .. } => {
                println!("  answer: {answer}");
                println!(
                    "  the coordinator's own calls cost {}",
                    usage.cost.unwrap_or_default()
                );
                return Ok(());
            }
            _ => {}
        }
    }
    Err(AgentError::NoAnswer {
        agent: agent.name().to_owned(),
    })
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    println!("A coordinator that asks a researcher once:");
    let budget = SharedBudget::new(Budget::default());
    run(&coordinator(1), "What is the weather in Beijing?", &budget).await?;
    // The researcher's call: 12,000 tokens in at $2.50/M and 800 out at $10/M, $0.038.
    println!(
        "  the whole tree, the researcher included: {} in {} model calls",
        budget.usage().cost,
        budget.usage().model_calls
    );

    println!("\nThe same, asking three times, under a $0.05 budget for the whole tree:");
    let budget = SharedBudget::new(Budget::default().max_cost(Cost::from_usd(0.05)));
    match run(&coordinator(3), "What is the weather in Beijing?", &budget).await {
        Err(err @ AgentError::BudgetExhausted { .. }) => println!("  stopped: {err}"),
        other => println!("  unexpected: {other:?}"),
    }
    println!("  spent: {}", budget.usage().cost);
    Ok(())
}
