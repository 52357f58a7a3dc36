//! The demo's default path under test: the embedded local model (the default GGUF, fetched by
//! `bash scripts/setup.sh`), 1 thread, greedy, the tools the demo offers, both tutorial questions,
//! each in its own session, through the same functions `agent_demo` calls. The answers must be
//! right: the right tool among the four offered, the right arguments, a result that is not an
//! error, and the result's number in the answer.

use std::sync::Arc;

use serde_json::Value;
use tinyagent_demo::{DEMO_QUESTIONS, DemoTurn, local_demo_model, run_demo_turns};

fn arguments(turn: &DemoTurn) -> Value {
    serde_json::from_str(&turn.calls[0].arguments)
        .unwrap_or_else(|e| panic!("arguments are not JSON ({e}): {turn:#?}"))
}

#[tokio::test]
async fn the_local_demo_answers_both_seed_questions_correctly() {
    let (model, tools) = local_demo_model()
        .unwrap_or_else(|e| panic!("the default model is needed for this test: {e}"));
    let offered: Vec<String> = tools.iter().map(|t| t.name().to_owned()).collect();
    assert_eq!(
        offered,
        [
            "get_weather",
            "calculator",
            "get_current_time",
            "translator"
        ]
    );
    let mut out = Vec::new();
    let turns = run_demo_turns(Arc::new(model), tools, &mut out)
        .await
        .unwrap_or_else(|e| panic!("the demo failed: {e}\n{}", String::from_utf8_lossy(&out)));
    let printed = String::from_utf8_lossy(&out);
    println!("{printed}");
    assert_eq!(turns.len(), 2, "{printed}");
    assert_eq!(turns[0].question, DEMO_QUESTIONS[0]);
    assert_eq!(turns[1].question, DEMO_QUESTIONS[1]);

    // 北京天气怎么样？ → get_weather {"city": "北京"} → 22.5 in the answer.
    let weather = &turns[0];
    assert!(!weather.calls.is_empty(), "no tool call: {printed}");
    assert_eq!(weather.calls[0].name, "get_weather", "{printed}");
    let args = arguments(weather);
    assert_eq!(args["city"], "北京", "{printed}");
    assert!(args.get("unit").is_none_or(|u| u == "celsius"), "{printed}");
    assert!(!weather.results[0].is_error, "{printed}");
    assert!(weather.results[0].content.contains("22.5"), "{printed}");
    assert!(weather.answer.contains("22.5"), "{printed}");

    // 帮我算一下 7 乘以 8 等于多少。 → calculator multiply 7, 8 → 56 in the answer.
    let calc = &turns[1];
    assert!(!calc.calls.is_empty(), "no tool call: {printed}");
    assert_eq!(calc.calls[0].name, "calculator", "{printed}");
    let args = arguments(calc);
    assert_eq!(args["operation"], "multiply", "{printed}");
    assert_eq!(args["a"].as_f64(), Some(7.0), "{printed}");
    assert_eq!(args["b"].as_f64(), Some(8.0), "{printed}");
    assert!(!calc.results[0].is_error, "{printed}");
    assert!(calc.results[0].content.contains("56"), "{printed}");
    assert!(calc.answer.contains("56"), "{printed}");
}
