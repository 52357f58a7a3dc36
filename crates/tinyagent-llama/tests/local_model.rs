//! The embedded model end to end, with the real default model, one thread and greedy
//! decoding: with several tools offered, the model must choose the right one and fill in the
//! arguments the question gives; the tool must succeed. The model is fetched by `bash scripts/setup.sh` (or
//! `bash scripts/fetch-model.sh`); without it these tests fail and say so.

use std::sync::OnceLock;
use std::time::Instant;

use futures::StreamExt;
use serde_json::Value;
use tinyagent::tools::IntoTool;
use tinyagent::{
    AgentExt, LlmAgent, Message, Model, ModelRequest, Role, Session, ToolCall, ToolError,
    ToolResult,
    model::{ModelErrorKind, ModelEvent, ToolChoice},
    tools,
};
use tinyagent_llama::{LlamaConfig, LlamaModel};

fn model() -> LlamaModel {
    static MODEL: OnceLock<LlamaModel> = OnceLock::new();
    MODEL
        .get_or_init(|| {
            LlamaModel::default_model_with(LlamaConfig::default().threads(1))
                .unwrap_or_else(|e| panic!("the default model is needed for these tests: {e}"))
        })
        .clone()
}

/// The calls and results of a finished agent run, from its session history.
struct Run {
    answer: String,
    calls: Vec<ToolCall>,
    results: Vec<ToolResult>,
    history: Vec<Message>,
}

async fn ask(agent: &LlmAgent, question: &str) -> Run {
    let session = Session::new();
    let started = Instant::now();
    let answer = agent
        .ask(&session, question)
        .await
        .unwrap_or_else(|e| panic!("the run failed: {e}; history: {:#?}", session.messages()));

    eprintln!(
        "{question:?} answered in {:?}: {answer:?}",
        started.elapsed()
    );
    let history = session.messages();
    let calls = history
        .iter()
        .flat_map(|m| m.tool_calls().cloned().collect::<Vec<_>>())
        .collect();
    let results = history
        .iter()
        .flat_map(|m| m.tool_results().cloned().collect::<Vec<_>>())
        .collect();
    Run {
        answer,
        calls,
        results,
        history,
    }
}

/// The tutorial's smart assistant with the tutorial's four tools: every test below must pick the
/// right one among them.
fn smart_assistant() -> LlmAgent {
    LlmAgent::builder("smart-assistant")
        .model(model())
        .instruction("你是一个全能助手。")
        .tools(tinyagent_demo::all_tools())
        .build()
        .unwrap()
}

fn args_of(call: &ToolCall) -> Value {
    serde_json::from_str(&call.arguments)
        .unwrap_or_else(|e| panic!("arguments are not JSON ({e}): {}", call.arguments))
}

fn assert_ends_in_text_after_the_tool(run: &Run) {
    let last = run.history.last().unwrap();
    assert_eq!(last.role, Role::Assistant, "{:#?}", run.history);
    assert!(!last.has_tool_calls(), "{:#?}", run.history);
    assert!(!run.answer.trim().is_empty(), "{:#?}", run.history);
    let tool_at = run.history.iter().position(|m| m.role == Role::Tool);
    assert!(
        tool_at.is_some_and(|i| i < run.history.len() - 1),
        "{:#?}",
        run.history
    );
}

#[tokio::test]
async fn weather_in_chinese_picks_get_weather_for_the_city_asked() {
    let run = ask(&smart_assistant(), "北京天气怎么样？").await;
    assert_eq!(run.calls[0].name, "get_weather", "{:#?}", run.history);
    assert_eq!(args_of(&run.calls[0])["city"], "北京", "{:#?}", run.history);
    assert!(!run.results[0].is_error, "{:#?}", run.results);
    assert!(
        run.results[0].content.contains("22.5"),
        "{:#?}",
        run.results
    );
    assert!(run.answer.contains("22.5"), "{:#?}", run.history);
    assert_ends_in_text_after_the_tool(&run);
}

#[tokio::test]
async fn weather_in_english_picks_get_weather_and_the_tool_finds_the_city() {
    // A weather tool that knows English city names, beside the tutorial's other three tools.
    #[derive(serde::Deserialize, schemars::JsonSchema)]
    struct Input {
        /// The city, e.g. London
        city: String,
    }
    let weather = tools::new_func(
        "get_weather",
        "Gets the current weather of a city",
        |input: Input| async move {
            match input.city.trim().to_lowercase().as_str() {
                "beijing" | "北京" => {
                    Ok(r#"{"city":"Beijing","temperature":22.5,"condition":"sunny"}"#)
                }
                other => Err(ToolError::not_found(format!(
                    "no weather data for {other:?}"
                ))),
            }
        },
    );
    let agent = LlmAgent::builder("assistant")
        .model(model())
        .instruction("You are a helpful assistant.")
        .tools([
            weather.into_tool(),
            tinyagent_demo::calculator_tool(),
            tinyagent_demo::time_tool(),
            tinyagent_demo::translator_tool(),
        ])
        .build()
        .unwrap();
    let run = ask(&agent, "What is the weather in Beijing?").await;
    assert_eq!(run.calls[0].name, "get_weather", "{:#?}", run.history);
    let city = args_of(&run.calls[0])["city"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(
        ["beijing", "北京"].contains(&city.trim().to_lowercase().as_str()),
        "{:#?}",
        run.history
    );
    assert!(!run.results[0].is_error, "{:#?}", run.results);
    assert_ends_in_text_after_the_tool(&run);
}

#[tokio::test]
async fn arithmetic_picks_the_calculator_with_the_numbers_asked() {
    let run = ask(&smart_assistant(), "帮我算一下 7 乘以 8 等于多少。").await;
    assert_eq!(run.calls[0].name, "calculator", "{:#?}", run.history);
    let args = args_of(&run.calls[0]);
    assert_eq!(args["operation"], "multiply", "{args}");
    assert_eq!(args["a"].as_f64(), Some(7.0), "{args}");
    assert_eq!(args["b"].as_f64(), Some(8.0), "{args}");
    assert!(!run.results[0].is_error, "{:#?}", run.results);
    assert!(run.answer.contains("56"), "{:#?}", run.history);
    assert_ends_in_text_after_the_tool(&run);
}

#[tokio::test]
async fn a_greeting_gets_an_answer_and_no_tool_call() {
    let run = ask(&smart_assistant(), "Hello! How are you?").await;
    assert!(run.calls.is_empty(), "{:#?}", run.history);
    assert!(!run.answer.trim().is_empty(), "{:#?}", run.history);
}

#[tokio::test]
async fn a_chinese_greeting_and_a_thanks_get_no_tool_call() {
    for question in ["你好！", "谢谢！"] {
        let run = ask(&smart_assistant(), question).await;
        assert!(run.calls.is_empty(), "{question}: {:#?}", run.history);
        assert!(
            !run.answer.trim().is_empty(),
            "{question}: {:#?}",
            run.history
        );
    }
}

/// Requests none of the demo's tools serves (all from the held-out part of
/// `eval/tools.jsonl`, none tuned on): an answer, not a call with made-up values.
#[tokio::test]
async fn a_request_no_tool_serves_gets_an_answer_and_no_tool_call() {
    for question in [
        "Suggest a movie for a family night.",
        "推荐几本适合初学者的编程书。",
        "Book a flight from London to New York for next Monday.",
    ] {
        let run = ask(&smart_assistant(), question).await;
        assert!(run.calls.is_empty(), "{question}: {:#?}", run.history);
        assert!(
            !run.answer.trim().is_empty(),
            "{question}: {:#?}",
            run.history
        );
    }
}

#[tokio::test]
async fn with_the_call_check_a_request_near_a_tool_is_answered_and_a_served_one_called() {
    // The default choice sends this request to the weather of 上海 (the city is in it, so the
    // argument check passes it); asked whether that call does what the user wants, the model
    // says no.
    let agent = LlmAgent::builder("smart-assistant")
        .model(model().with_config(LlamaConfig::default().threads(1).confirm_calls(true)))
        .instruction("你是一个全能助手。")
        .tools(tinyagent_demo::all_tools())
        .build()
        .unwrap();
    let run = ask(&agent, "帮我在上海订一家酒店。").await;
    assert!(run.calls.is_empty(), "{:#?}", run.history);
    assert!(!run.answer.trim().is_empty(), "{:#?}", run.history);
    let run = ask(&agent, "重庆天气预报").await;
    assert_eq!(run.calls.len(), 1, "{:#?}", run.history);
    assert_eq!(run.calls[0].name, "get_weather", "{:#?}", run.history);
    assert_eq!(args_of(&run.calls[0])["city"], "重庆", "{:#?}", run.history);
    assert_ends_in_text_after_the_tool(&run);
}

#[tokio::test]
async fn after_a_failed_call_the_answer_invents_no_value() {
    // The weather tool knows no Tokyo: the answer must say so rather than give a
    // temperature (the question, the call and the error hold no number at all).
    let run = ask(
        &smart_assistant(),
        "What is the temperature in Tokyo in fahrenheit?",
    )
    .await;
    assert_eq!(run.calls[0].name, "get_weather", "{:#?}", run.history);
    assert!(run.results[0].is_error, "{:#?}", run.results);
    assert!(
        !run.answer.chars().any(|c| c.is_ascii_digit()),
        "an invented value: {:#?}",
        run.history
    );
    assert!(!run.answer.trim().is_empty(), "{:#?}", run.history);
}

/// The tool calls made by the turn that answers `question` in `session`.
async fn calls_of_turn(agent: &LlmAgent, session: &Session, question: &str) -> Vec<ToolCall> {
    let before = session.messages().len();
    agent
        .ask(session, question)
        .await
        .unwrap_or_else(|e| panic!("the run failed: {e}; history: {:#?}", session.messages()));
    session.messages()[before..]
        .iter()
        .flat_map(|m| m.tool_calls().cloned().collect::<Vec<_>>())
        .collect()
}

#[tokio::test]
async fn a_follow_up_asks_the_tool_about_the_new_city_and_a_thanks_calls_nothing() {
    let agent = smart_assistant();
    let session = Session::new();
    let first = calls_of_turn(&agent, &session, "北京天气怎么样？").await;
    assert_eq!(first.len(), 1, "{:#?}", session.messages());
    assert_eq!(args_of(&first[0])["city"], "北京");
    let follow_up = calls_of_turn(&agent, &session, "那上海呢？").await;
    assert_eq!(follow_up.len(), 1, "{:#?}", session.messages());
    assert_eq!(
        follow_up[0].name,
        "get_weather",
        "{:#?}",
        session.messages()
    );
    assert_eq!(
        args_of(&follow_up[0])["city"],
        "上海",
        "{:#?}",
        session.messages()
    );
    let thanks = calls_of_turn(&agent, &session, "谢谢！").await;
    assert!(thanks.is_empty(), "{:#?}", session.messages());
}

#[tokio::test]
async fn a_time_zone_is_the_citys_not_the_descriptions_example() {
    // The time tool's description gives Asia/Shanghai as its example; a question about
    // London must not get it.
    let run = ask(&smart_assistant(), "What time is it in London?").await;
    assert_eq!(run.calls[0].name, "get_current_time", "{:#?}", run.history);
    assert_eq!(
        args_of(&run.calls[0])["timezone"],
        "Europe/London",
        "{:#?}",
        run.history
    );
    assert!(!run.results[0].is_error, "{:#?}", run.results);
}

#[tokio::test]
async fn an_arithmetic_follow_up_works_on_the_last_result() {
    // "再乘以 2" after 7 × 8 multiplies the result, 56, by 2: the model left to itself
    // copies the previous call's 7.
    let agent = smart_assistant();
    let session = Session::new();
    let first = calls_of_turn(&agent, &session, "帮我算一下 7 乘以 8 等于多少。").await;
    assert_eq!(first.len(), 1, "{:#?}", session.messages());
    let follow_up = calls_of_turn(&agent, &session, "再乘以 2 呢？").await;
    assert_eq!(follow_up.len(), 1, "{:#?}", session.messages());
    assert_eq!(follow_up[0].name, "calculator", "{:#?}", session.messages());
    let args = args_of(&follow_up[0]);
    assert_eq!(args["operation"], "multiply", "{args}");
    let mut numbers = [args["a"].as_f64(), args["b"].as_f64()];
    numbers.sort_by(|x, y| x.partial_cmp(y).unwrap_or(std::cmp::Ordering::Equal));
    assert_eq!(numbers, [Some(2.0), Some(56.0)], "{args}");
    let answer = session
        .messages()
        .last()
        .map(|m| m.text())
        .unwrap_or_default();
    assert!(answer.contains("112"), "{:#?}", session.messages());
    // The answer gives the result, not a further product of it ("112 乘以 2 等于 224"): every
    // number it states is one of the conversation's.
    let said = [7.0, 8.0, 56.0, 2.0, 112.0];
    for n in numbers_in(&answer) {
        assert!(
            said.contains(&n),
            "{n} in {answer:?}: {:#?}",
            session.messages()
        );
    }
}

/// The numbers written in `text`, as digits.
fn numbers_in(text: &str) -> Vec<f64> {
    text.split(|c: char| !(c.is_ascii_digit() || c == '.'))
        .map(|w| w.trim_matches('.'))
        .filter(|w| !w.is_empty())
        .filter_map(|w| w.parse().ok())
        .collect()
}

#[tokio::test]
async fn a_forced_tool_is_called_even_when_another_fits_the_question() {
    // Left to itself the model calls get_weather here (see the tests above); tool_choice
    // must override that.
    let req = ModelRequest::new(vec![Message::user("北京天气怎么样？")])
        .tools(
            tinyagent_demo::all_tools()
                .iter()
                .map(|t| t.definition())
                .collect(),
        )
        .tool_choice(ToolChoice::Tool("calculator".into()));
    let response = model().generate(&req).await.unwrap();
    let calls: Vec<_> = response.message.tool_calls().collect();
    assert_eq!(calls.len(), 1, "{response:?}");
    assert_eq!(calls[0].name, "calculator");
    let free = model()
        .generate(&req.clone().tool_choice(ToolChoice::Auto))
        .await
        .unwrap();
    let chosen: Vec<_> = free.message.tool_calls().map(|c| c.name.clone()).collect();
    assert_eq!(chosen, ["get_weather"], "{free:?}");
}

#[tokio::test]
async fn text_is_streamed_and_ends_with_one_done() {
    let model = model().with_config(LlamaConfig::default().threads(1).max_tokens(24));
    let req = ModelRequest::new(vec![Message::user("Say hello.")]);
    let events: Vec<ModelEvent> = model.stream(&req).map(|e| e.unwrap()).collect().await;
    let deltas: String = events
        .iter()
        .filter_map(|e| match e {
            ModelEvent::TextDelta(t) => Some(t.as_str()),
            _ => None,
        })
        .collect();
    let dones: Vec<_> = events
        .iter()
        .filter_map(|e| match e {
            ModelEvent::Done(r) => Some(r),
            _ => None,
        })
        .collect();
    assert_eq!(dones.len(), 1);
    assert!(matches!(events.last(), Some(ModelEvent::Done(_))));
    assert!(!deltas.trim().is_empty());
    assert_eq!(dones[0].message.text(), deltas.trim());
    assert!(dones[0].usage.output_tokens.is_some_and(|n| n <= 24));
    assert!(dones[0].usage.input_tokens.is_some_and(|n| n > 0));
}

#[tokio::test]
async fn dropping_the_stream_stops_generation() {
    // A model of its own, so that its token count is this test's alone.
    let model = LlamaModel::default_model_with(LlamaConfig::default().threads(1))
        .unwrap_or_else(|e| panic!("the default model is needed for these tests: {e}"));
    let req = ModelRequest::new(vec![Message::user(
        "Write a very long story about a dragon.",
    )]);
    // Greedy decoding is deterministic: left alone, this answer runs past 32 tokens, so a
    // dropped stream whose generation went on would count at least that many.
    let capped = model.with_config(LlamaConfig::default().threads(1).max_tokens(32));
    let before = model.speed_totals().output_tokens;
    capped.generate(&req).await.unwrap();
    let left_alone = model.speed_totals().output_tokens - before;
    assert_eq!(
        left_alone, 32,
        "the prompt must not end on its own before 32 tokens"
    );

    let long = model.with_config(LlamaConfig::default().threads(1).max_tokens(2000));
    let before = model.speed_totals().output_tokens;
    {
        let mut stream = long.stream(&req);
        let first = stream.next().await.unwrap().unwrap();
        assert!(matches!(first, ModelEvent::TextDelta(_)));
    }
    // The next request waits for the model, so once it is answered the dropped generation is
    // over; it may have made a token or two more while the drop was noticed.
    let quick = model.with_config(LlamaConfig::default().threads(1).max_tokens(2));
    quick
        .generate(&ModelRequest::new(vec![Message::user("Hi")]))
        .await
        .unwrap();
    let generated = model.speed_totals().output_tokens - before;
    assert!(
        generated <= 2 + 8,
        "{generated} tokens were generated: the dropped stream did not stop its generation"
    );
}

#[test]
fn a_prompt_begun_before_is_restored_and_continues_as_a_fresh_read_would() {
    // A model of its own, so that its prompt cache holds this test's prompts alone.
    let cached = LlamaModel::default_model_with(LlamaConfig::default().threads(1))
        .unwrap_or_else(|e| panic!("the default model is needed for these tests: {e}"));
    let fresh = cached.with_config(LlamaConfig::default().threads(1).prompt_cache_mib(0));
    let head = "<|im_start|>system\nYou are a careful assistant. You answer questions about \
                the weather, arithmetic and the time of day in cities around the world, in \
                one short sentence, without inventing facts.<|im_end|>\n<|im_start|>user\n";
    let first = format!("{head}What is 7 times 8?<|im_end|>\n<|im_start|>assistant\n");
    let second =
        format!("{head}Name three colours of the rainbow.<|im_end|>\n<|im_start|>assistant\n");

    let a = cached.complete(&first, 12).unwrap();
    assert_eq!(a.speed.cached_tokens, 0, "nothing was cached before");
    let b = cached.complete(&second, 24).unwrap();
    assert!(
        b.speed.cached_tokens >= 32 && b.speed.prompt_tokens < 20,
        "the shared instruction is restored, only the new question is read: {:?}",
        b.speed
    );
    let want = fresh.complete(&second, 24).unwrap();
    assert_eq!(
        want.speed.cached_tokens, 0,
        "a model without a cache reads it all"
    );
    assert_eq!(
        want.speed.prompt_tokens,
        b.speed.prompt_tokens + b.speed.cached_tokens
    );
    assert_eq!(b.text, want.text, "restoring changed what the model writes");

    // The whole of an earlier prompt, then more: all but its last token are restored.
    let longer = format!(
        "{second}Red, orange and yellow.<|im_end|>\n<|im_start|>user\nAnd three more?<|im_end|>\n<|im_start|>assistant\n"
    );
    let c = cached.complete(&longer, 24).unwrap();
    assert!(
        c.speed.cached_tokens >= b.speed.cached_tokens + b.speed.prompt_tokens - 1,
        "{:?}",
        c.speed
    );
    assert_eq!(c.text, fresh.complete(&longer, 24).unwrap().text);
}

#[test]
fn a_prompt_saved_by_an_earlier_process_is_loaded_and_continues_as_a_fresh_read_would() {
    let dir = tempfile::tempdir().unwrap();
    // No prompts kept in memory: what is restored can only come from the files.
    let on_disk = LlamaConfig::default()
        .threads(1)
        .prompt_cache_mib(0)
        .prompt_cache_dir(dir.path());
    let writer = model().with_config(on_disk.clone());
    let fresh = model().with_config(LlamaConfig::default().threads(1).prompt_cache_mib(0));
    // An instruction long enough to be saved (at least 256 tokens are read).
    let rules = "Answer in one short sentence. Never invent a value a tool did not give. \
                 Say which tool you would use for the weather, arithmetic or the time. "
        .repeat(8);
    let head = format!("<|im_start|>system\n{rules}<|im_end|>\n<|im_start|>user\n");
    let first = format!("{head}What is 7 times 8?<|im_end|>\n<|im_start|>assistant\n");
    let second =
        format!("{head}Name three colours of the rainbow.<|im_end|>\n<|im_start|>assistant\n");

    let a = writer.complete(&first, 8).unwrap();
    assert_eq!(a.speed.cached_tokens, 0, "nothing was saved before");
    assert!(a.speed.prompt_tokens >= 256, "{:?}", a.speed);
    let saved: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .flatten()
        .flat_map(|model_dir| std::fs::read_dir(model_dir.path()).unwrap().flatten())
        .map(|f| f.path())
        .collect();
    assert_eq!(saved.len(), 2, "one state and its tokens: {saved:?}");

    // A later process with the same directory reads only the new question.
    let reader = model().with_config(on_disk.clone());
    let b = reader.complete(&second, 24).unwrap();
    assert!(
        b.speed.cached_tokens >= 256 && b.speed.prompt_tokens < 20,
        "the saved instruction is loaded, only the new question is read: {:?}",
        b.speed
    );
    let want = fresh.complete(&second, 24).unwrap();
    assert_eq!(
        want.speed.prompt_tokens,
        b.speed.prompt_tokens + b.speed.cached_tokens
    );
    assert_eq!(b.text, want.text, "loading changed what the model writes");

    // A state file that is not one is read around: the prompt is read whole, the same answer.
    let state = saved
        .iter()
        .find(|p| p.extension().is_some_and(|e| e == "state"))
        .unwrap();
    std::fs::write(state, b"not a llama.cpp state").unwrap();
    let c = model().with_config(on_disk).complete(&second, 24).unwrap();
    assert_eq!(c.speed.cached_tokens, 0, "{:?}", c.speed);
    assert_eq!(c.text, want.text);
}

#[test]
fn missing_model_file_says_how_to_get_one() {
    let err = LlamaModel::load("/nonexistent/dir/model.gguf", LlamaConfig::default()).unwrap_err();
    assert_eq!(err.kind(), ModelErrorKind::InvalidRequest);
    assert!(err.message().contains("scripts/fetch-model.sh"), "{err}");
    assert!(err.message().contains("TINYAGENT_GGUF"), "{err}");
}

#[test]
fn malformed_model_files_give_clear_errors() {
    let dir = std::env::temp_dir().join(format!("tinyagent-llama-it-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();

    let text = dir.join("notes.gguf");
    std::fs::write(&text, "this is not a model\n".repeat(100)).unwrap();
    let err = LlamaModel::load(&text, LlamaConfig::default()).unwrap_err();
    assert!(err.message().contains("not a GGUF model"), "{err}");

    let empty = dir.join("empty.gguf");
    std::fs::write(&empty, b"").unwrap();
    let err = LlamaModel::load(&empty, LlamaConfig::default()).unwrap_err();
    assert!(err.message().contains("not a GGUF model"), "{err}");

    // A real header and the start of the tensors, cut off: llama.cpp must refuse it cleanly.
    let real = std::fs::read(model().path()).unwrap();
    let truncated = dir.join("truncated.gguf");
    std::fs::write(&truncated, &real[..real.len() / 3]).unwrap();
    let err = LlamaModel::load(&truncated, LlamaConfig::default()).unwrap_err();
    assert!(err.message().contains("could not load"), "{err}");

    let garbage_after_magic = dir.join("garbage.gguf");
    let mut bytes = b"GGUF\x03\0\0\0".to_vec();
    bytes.extend((0..100_000u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8));
    std::fs::write(&garbage_after_magic, &bytes).unwrap();
    let err = LlamaModel::load(&garbage_after_magic, LlamaConfig::default()).unwrap_err();
    assert!(err.message().contains("could not load"), "{err}");
}

#[test]
fn the_prompt_uses_the_models_template_and_lists_the_tools() {
    let model = model();
    assert!(!model.uses_fallback_template());
    let req = ModelRequest::new(vec![Message::user("北京天气怎么样？")])
        .instruction("你是一个全能助手。")
        .tools(vec![tinyagent_demo::weather_tool().definition()]);
    let prompt = model.prompt(&req).unwrap();
    assert!(
        prompt.starts_with("<|im_start|>system\n你是一个全能助手。"),
        "{prompt}"
    );
    assert!(prompt.contains("get_weather"), "{prompt}");
    assert!(prompt.ends_with("<|im_start|>assistant\n"), "{prompt}");
}

/// The typed answer the weather question asks for.
#[derive(Debug, serde::Deserialize, tinyagent::schemars::JsonSchema)]
#[schemars(crate = "tinyagent::schemars")]
struct WeatherReport {
    /// The city the weather is for.
    city: String,
    /// The temperature in degrees Celsius, as the weather tool gave it.
    temperature: f64,
}

#[tokio::test]
async fn a_typed_answer_is_json_of_the_asked_shape_with_the_tools_values() {
    let agent = LlmAgent::builder("typed")
        .model(model())
        .instruction("You are a helpful assistant.")
        .tool(tinyagent_demo::weather_tool())
        .build()
        .unwrap();
    let session = Session::new();
    let report: WeatherReport = agent
        .ask_as(&session, "北京天气怎么样？")
        .await
        .unwrap_or_else(|e| panic!("no typed answer: {e}; history: {:#?}", session.messages()));
    eprintln!("typed answer: {report:?}");
    // The grammar holds the shape; the values come from the tool result.
    let history = session.messages();
    let result = history
        .iter()
        .flat_map(|m| m.tool_results().cloned().collect::<Vec<_>>())
        .next()
        .expect("the weather tool ran");
    assert!(!result.is_error, "{}", result.content);
    assert!(result.content.contains("22.5"), "{}", result.content);
    assert_eq!(report.temperature, 22.5, "{report:?}");
    assert!(!report.city.trim().is_empty(), "{report:?}");
    let last = history.last().unwrap().text();
    assert!(
        last.trim_start().starts_with('{'),
        "the answer is JSON: {last}"
    );
}

/// A prompt longer than 2,048 tokens (many tools, a long history) fits the default window, the
/// model's own trained context; a smaller configured window refuses it at once, saying how to
/// raise it.
#[tokio::test]
async fn a_long_prompt_fits_the_default_window_and_a_small_one_says_how_to_raise_it() {
    // A little over 2,048 tokens of text the model has to read before it answers.
    let long = "The quick brown fox jumps over the lazy dog. ".repeat(210);
    let req = ModelRequest::new(vec![Message::user(format!(
        "{long}\nHow many foxes were there? Answer in one word."
    ))]);
    let small = model().with_config(LlamaConfig::default().threads(1).context_size(2048));
    let err = small.generate(&req).await.unwrap_err();
    assert_eq!(err.kind(), ModelErrorKind::ContextLengthExceeded, "{err}");
    assert!(err.message().contains("context window of 2048"), "{err}");
    assert!(err.message().contains("--context-size"), "{err}");

    let default = model().with_config(LlamaConfig::default().threads(2).max_tokens(4));
    let reply = default.generate(&req).await.unwrap();
    assert!(
        reply.usage.input_tokens.is_some_and(|n| n > 2048),
        "{:?}",
        reply.usage
    );
    assert!(!reply.message.text().trim().is_empty());
}

/// The smart assistant with the demo's tools among 500 others, behind a tool search: the
/// model is offered a few tools per question and still picks the right one.
#[tokio::test]
async fn among_500_more_tools_behind_a_search_the_demo_questions_get_their_tools() {
    let mut tools = tinyagent::testing::many_tools(500);
    tools.extend(tinyagent_demo::all_tools());
    let agent = LlmAgent::builder("smart-assistant")
        .model(model())
        .instruction("你是一个全能助手。")
        .tool_resolver(tinyagent::tools::ToolSearch::new(tools))
        .build()
        .unwrap();
    let run = ask(&agent, "北京天气怎么样？").await;
    assert_eq!(run.calls[0].name, "get_weather", "{:#?}", run.history);
    assert_eq!(args_of(&run.calls[0])["city"], "北京", "{:#?}", run.history);
    assert!(run.answer.contains("22.5"), "{:#?}", run.history);
    let run = ask(&agent, "帮我算一下 7 乘以 8 等于多少。").await;
    assert_eq!(run.calls[0].name, "calculator", "{:#?}", run.history);
    let args = args_of(&run.calls[0]);
    assert_eq!(
        (args["a"].as_f64(), args["b"].as_f64()),
        (Some(7.0), Some(8.0)),
        "{args}"
    );
    assert!(run.answer.contains("56"), "{:#?}", run.history);
}

#[test]
fn tokens_are_counted_by_the_models_own_vocabulary() {
    let model = model();
    let english = model.count_tokens("Hello, world!").expect("a count");
    let chinese = model
        .count_tokens("北京今天的天气怎么样？")
        .expect("a count");
    // Qwen's vocabulary: "Hello", ",", " world", "!"; and Chinese by words, not characters.
    assert_eq!(english, 4);
    assert!((3..11).contains(&chinese), "{chinese}");
    assert_eq!(model.count_tokens(""), Some(0));
    // Special-token text is text, not a special token.
    assert!(model.count_tokens("<|im_end|>").unwrap() > 1);
}
