//! Cost in money: every model call priced by the agent's price table, the run's total, the
//! tree's total across nested agents in the shared budget, and a money limit that stops a run.

use std::sync::Arc;

use futures::StreamExt;
use tinyagent::model::{Cost, Price, PriceTable};
use tinyagent::testing::{ScriptedModel, reply};
use tinyagent::{
    Agent, AgentError, AgentExt, Budget, Event, Invocation, LlmAgent, Session, Usage,
    budget::BudgetResource, tools,
};

/// Prices per million tokens, chosen so that costs are round: the scripted model costs
/// $2 per million input tokens and $10 per million output tokens.
fn prices() -> PriceTable {
    PriceTable::empty().price("scripted", Price::new(2.0, 10.0))
}

fn cost(input: u64, output: u64) -> Cost {
    Price::new(2.0, 10.0).cost(&Usage::new(input, output))
}

#[tokio::test]
async fn every_call_is_priced_and_the_tree_total_includes_the_nested_agents() {
    // The child answers in one call of 1,000 in / 200 out.
    let child_model = Arc::new(ScriptedModel::new([
        reply::text("Paris").usage(Usage::new(1_000, 200))
    ]));
    let child = LlmAgent::builder("geographer")
        .description("Answers geography questions")
        .model(child_model)
        .prices(prices())
        .build()
        .unwrap();
    // The parent calls the child (3,000 in / 50 out), then answers (4,000 in / 100 out).
    let parent_model = Arc::new(ScriptedModel::new([
        reply::tool_call("c1", "geographer", r#"{"message": "Capital of France?"}"#)
            .usage(Usage::new(3_000, 50)),
        reply::text("It is Paris.").usage(Usage::new(4_000, 100)),
    ]));
    let parent = LlmAgent::builder("assistant")
        .model(parent_model)
        .tool(tools::new_agent_tool(child))
        .prices(prices())
        .build()
        .unwrap();
    let inv = Invocation::new(Session::new(), "What is the capital of France?");
    let budget = tinyagent::budget::SharedBudget::new(Budget::default());
    let inv = inv.with_budget(budget.clone());
    let events: Vec<Event> = parent.run(inv).map(|e| e.unwrap()).collect().await;
    let step_costs: Vec<Option<Cost>> = events
        .iter()
        .filter_map(|e| match e {
            Event::Usage { usage, .. } => Some(usage.cost),
            _ => None,
        })
        .collect();
    assert_eq!(step_costs, [Some(cost(3_000, 50)), Some(cost(4_000, 100))]);
    let Some(Event::Finished { usage, .. }) = events.last() else {
        panic!("{events:?}")
    };
    assert_eq!(usage.cost, Some(cost(3_000, 50) + cost(4_000, 100)));
    // The shared budget adds the child's call: the whole tree's cost.
    assert_eq!(
        budget.usage().cost,
        cost(3_000, 50) + cost(4_000, 100) + cost(1_000, 200)
    );
    assert_eq!(
        budget.usage().cost,
        Cost::from_usd(0.006 + 0.0005 + 0.008 + 0.001 + 0.002 + 0.002)
    );
}

#[tokio::test]
async fn a_money_limit_stops_the_run_before_it_spends_more() {
    // Each call costs 100,000 in * $2/M = $0.20; the limit is $0.50.
    let model = Arc::new(ScriptedModel::new((0..5).map(|i| {
        reply::tool_call(format!("c{i}"), "noop", "{}").usage(Usage::new(100_000, 0))
    })));
    let noop = tools::new_tool(
        "noop",
        "does nothing",
        serde_json::json!({"type": "object"}),
        |_ctx, _input: String| async move { Ok::<_, tinyagent::ToolError>("ok".to_owned()) },
    );
    let agent = LlmAgent::builder("spender")
        .model(model.clone())
        .tool(noop)
        .prices(prices())
        .budget(Budget::default().max_cost(Cost::from_usd(0.50)))
        .build()
        .unwrap();
    let err = agent.ask(&Session::new(), "go").await.unwrap_err();
    let AgentError::BudgetExhausted {
        resource,
        limit,
        used,
        ..
    } = &err
    else {
        panic!("{err:?}")
    };
    assert_eq!(*resource, BudgetResource::Cost);
    assert_eq!(*limit, Cost::from_usd(0.50).nano_usd());
    assert_eq!(*used, Cost::from_usd(0.60).nano_usd());
    // Three calls ($0.60) were made; the fourth was refused before it was sent.
    assert_eq!(model.request_count(), 3);
    assert!(
        err.to_string()
            .contains("budget of $0.500000 is used up ($0.600000 needed"),
        "{err}"
    );
}

#[tokio::test]
async fn a_model_without_a_price_costs_nothing_and_says_so() {
    let model = Arc::new(ScriptedModel::new([
        reply::text("hi").usage(Usage::new(10, 2))
    ]));
    let agent = LlmAgent::builder("free")
        .model(model)
        .budget(Budget::default().max_cost(Cost::from_usd(0.01)))
        .build()
        .unwrap();
    let events: Vec<Event> = agent
        .run(Invocation::new(Session::new(), "hello"))
        .map(|e| e.unwrap())
        .collect()
        .await;
    let Some(Event::Finished { usage, .. }) = events.last() else {
        panic!("{events:?}")
    };
    assert_eq!(
        usage.cost, None,
        "the default table has no price for a scripted model"
    );
    assert_eq!(usage.input_tokens, Some(10));
}
