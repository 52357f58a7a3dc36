mod invented;

use super::*;

#[test]
fn an_echoed_instruction_or_question_is_dropped_from_the_answer() {
    let instruction = "你是一个全能助手。";
    let question = "再乘以 2 呢？";
    let echoes = [instruction, question];
    assert_eq!(
        without_echoes("你是一个全能助手。\n\nThe answer is 56.00.", &echoes).as_deref(),
        Some("The answer is 56.00.")
    );
    assert_eq!(
        without_echoes("再乘以 2 呢？56 乘以 2 等于 112.00。", &echoes).as_deref(),
        Some("56 乘以 2 等于 112.00。")
    );
    assert_eq!(
        without_echoes("你是一个全能助手。 再乘以 2 呢？ 112", &echoes).as_deref(),
        Some("112")
    );
    assert_eq!(without_echoes("The answer is 56.", &echoes), None);
    // A restated question is part of the answer.
    assert_eq!(without_echoes("2 + 3 = 5", &["2 + 3"]), None);
    assert_eq!(without_echoes("Hi there!", &["Hi"]), None);
    assert_eq!(without_echoes("北京天气晴，25度", &["北京天气"]), None);
    assert_eq!(
        without_echoes("北京天气\n晴，25度", &["北京天气"]).as_deref(),
        Some("晴，25度")
    );
    assert_eq!(without_echoes("你是一个全能助手。", &echoes), None);
    assert_eq!(without_echoes("anything", &["  ", ""]), None);
}
use tinyagent::ToolResult;

const JSON: Style = Style {
    format: Format::Json,
    terse: false,
    examples: false,
    follow_language: true,
};

fn weather() -> ToolDefinition {
    ToolDefinition::new(
        "get_weather",
        "weather",
        json!({"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}),
    )
}

fn json_out(allow_answer: bool) -> JsonOutput {
    let tools = vec![weather()];
    let schema = output_schema(&tools, allow_answer);
    JsonOutput {
        tools,
        allow_answer,
        schema,
    }
}

#[test]
fn text_without_tools_json_with_tools() {
    let config = LlamaConfig::default();
    let req = ModelRequest::new(vec![Message::user("hi")]);
    assert!(matches!(
        plan(&req, &config, JSON).unwrap().output,
        Output::Text
    ));
    let req = req.tools(vec![weather()]);
    let Output::Json(out) = plan(&req, &config, JSON).unwrap().output else {
        panic!("expected JSON output");
    };
    assert!(out.allow_answer);
    assert_eq!(out.schema["oneOf"].as_array().unwrap().len(), 2);
}

#[test]
fn after_a_tool_round_the_model_answers_in_text() {
    let config = LlamaConfig::default();
    let call = ToolCall::new("c1", "get_weather", r#"{"city":"北京"}"#);
    let req = ModelRequest::new(vec![
        Message::user("北京天气怎么样？"),
        Message::new(Role::Assistant, vec![Part::ToolCall(call)]),
        Message::from_tool_results([ToolResult::ok("c1", "get_weather", "22.5")]),
    ])
    .tools(vec![weather()]);
    let first = plan(&req, &config, JSON).unwrap();
    assert!(matches!(first.output, Output::Text));
    assert_eq!(first.chat.len(), 2, "{:?}", first.chat);
    assert_eq!(
        first.chat[1].content,
        "北京天气怎么样？\n\nThe question above was answered by the tool get_weather, called \
         with {\"city\":\"北京\"}; it returned: 22.5"
    );
    assert!(
        first.chat[0]
            .content
            .contains("giving the values of the tool results")
    );
    let more = plan(&req, &LlamaConfig::default().max_tool_rounds(2), JSON).unwrap();
    assert!(matches!(more.output, Output::Json(_)));
    assert_eq!(
        more.chat[2].content,
        r#"{"name":"get_weather","arguments":{"city":"北京"}}"#
    );
}

#[test]
fn after_a_failed_call_the_answer_says_so_and_invents_no_value() {
    let call = ToolCall::new(
        "c1",
        "get_weather",
        r#"{"city":"Tokyo","unit":"fahrenheit"}"#,
    );
    let error = "no weather data for \"Tokyo\" (known: Beijing, Shanghai, Guangzhou)";
    let req = ModelRequest::new(vec![
        Message::user("What is the temperature in Tokyo in fahrenheit?"),
        Message::new(Role::Assistant, vec![Part::ToolCall(call)]),
        Message::from_tool_results([ToolResult::error("c1", "get_weather", error)]),
    ])
    .tools(vec![weather()]);
    assert_eq!(recent_errors(&req), [error]);
    assert!(recent_results(&req).is_empty());
    let answer = plan(&req, &LlamaConfig::default(), JSON).unwrap();
    assert!(
        answer.chat[0].content.contains("The tool call failed"),
        "{:?}",
        answer.chat[0]
    );
    // A temperature the tool never gave is invented; saying it failed is not.
    assert!(invents_numbers(
        "The temperature in Tokyo is 23 degrees Fahrenheit.",
        &req
    ));
    assert!(!invents_numbers(
        "I could not get the weather in Tokyo: no data for it.",
        &req
    ));

    let ok = ModelRequest::new(vec![
        Message::user("帮我算一下 7 乘以 8 等于多少。"),
        Message::from_tool_results([ToolResult::ok(
            "c1",
            "calculator",
            r#"{"result":56.0,"expression":"7.00 * 8.00 = 56.00"}"#,
        )]),
    ]);
    // The same value written another way is the result's; another value is not.
    assert!(!invents_numbers("7乘以8等于56。", &ok));
    assert!(!invents_numbers("7 × 8 = 56.00", &ok));
    assert!(invents_numbers("7乘以8等于54。", &ok));
}

#[test]
fn tool_choice_narrows_the_contract() {
    let config = LlamaConfig::default();
    let req = ModelRequest::new(vec![Message::user("hi")]).tools(vec![weather()]);
    let forced = req.clone().tool_choice(ToolChoice::Required);
    let Output::Json(out) = plan(&forced, &config, JSON).unwrap().output else {
        panic!("expected JSON output");
    };
    assert!(!out.allow_answer);
    assert_eq!(out.schema["properties"]["name"]["const"], "get_weather");
    let unknown = req.clone().tool_choice(ToolChoice::Tool("nope".into()));
    let err = plan(&unknown, &config, JSON).unwrap_err();
    assert!(err.message().contains("get_weather"), "{err}");
    let none = req.tool_choice(ToolChoice::None);
    assert!(matches!(
        plan(&none, &config, JSON).unwrap().output,
        Output::Text
    ));
}

#[test]
fn parses_answers_and_calls() {
    let out = json_out(true);
    let validators = vec![(
        "get_weather".to_owned(),
        SchemaValidator::new(&weather().input_schema).unwrap(),
    )];
    let part = parse_json_output(r#"{"answer": "hello"}"#, &out, &validators).unwrap();
    assert_eq!(part, Part::text("hello"));
    // The listed answer option, as the prompt teaches it.
    let part = parse_json_output(
        r#"{"name": "answer", "arguments": {"text": "hi there"}}"#,
        &out,
        &validators,
    )
    .unwrap();
    assert_eq!(part, Part::text("hi there"));
    let part = parse_json_output(
        r#" {"name": "get_weather", "arguments": {"city": "北京"}} "#,
        &out,
        &validators,
    )
    .unwrap();
    let Part::ToolCall(call) = part else {
        panic!("expected a call");
    };
    assert_eq!(call.name, "get_weather");
    assert_eq!(call.arguments, r#"{"city":"北京"}"#);
    assert!(call.id.starts_with("call_"));
}

#[test]
fn rejects_unknown_tools_and_bad_arguments() {
    let out = json_out(false);
    let validators = vec![(
        "get_weather".to_owned(),
        SchemaValidator::new(&weather().input_schema).unwrap(),
    )];
    let err =
        parse_json_output(r#"{"name":"rm_rf","arguments":{}}"#, &out, &validators).unwrap_err();
    assert!(err.message().contains("not an offered tool"), "{err}");
    let err = parse_json_output(
        r#"{"name":"get_weather","arguments":{}}"#,
        &out,
        &validators,
    )
    .unwrap_err();
    assert!(err.message().contains("schema rejects"), "{err}");
    let err = parse_json_output(r#"{"answer":"x"}"#, &out, &validators).unwrap_err();
    assert!(err.message().contains("required"), "{err}");
    let err = parse_json_output(
        r#"{"name":"answer","arguments":{"text":"x"}}"#,
        &out,
        &validators,
    )
    .unwrap_err();
    assert!(err.message().contains("required"), "{err}");
    assert!(parse_json_output("not json", &out, &validators).is_err());
}

#[test]
fn the_all_tools_schemas_become_one_exact_grammar() {
    // No fallback needed: every keyword of the tutorial's schemas has a grammar equivalent.
    let tools: Vec<ToolDefinition> = tinyagent_demo::all_tools()
        .iter()
        .map(|t| t.definition())
        .collect();
    for allow_answer in [true, false] {
        let schema = output_schema(&tools, allow_answer).to_string();
        let grammar = llama_cpp_2::json_schema_to_grammar(&schema).unwrap();
        assert!(grammar.contains("get_weather"), "{grammar}");
        assert!(grammar.contains("fahrenheit"), "{grammar}");
    }
    // A schema the converter cannot handle is an error (then the model falls back to
    // "any object" arguments plus validation after decoding).
    let bad = json!({"$ref": "#/$defs/missing"});
    assert!(llama_cpp_2::json_schema_to_grammar(&call_schema("t", &bad).to_string()).is_err());
}

#[test]
fn answering_is_listed_with_the_tools_under_a_name_no_tool_has() {
    let config = LlamaConfig::default();
    let req = ModelRequest::new(vec![Message::user("hi")]).tools(vec![weather()]);
    let listed = super::plan(&req, &config, JSON).unwrap();
    let system = &listed.chat[0].content;
    assert!(system.contains("- get_weather: weather"), "{system}");
    assert!(
        system.contains("- answer: reply to the user yourself"),
        "{system}"
    );
    let answer_tool = ToolDefinition::new("answer", "answers", json!({"type": "object"}));
    assert_eq!(answer_name(&[weather(), answer_tool.clone()]), "reply");
    let taken: Vec<ToolDefinition> = [
        "answer",
        "reply",
        "answer_directly",
        "reply_directly",
        "direct_answer",
    ]
    .into_iter()
    .map(|n| ToolDefinition::new(n, "x", json!({"type": "object"})))
    .collect();
    assert_eq!(answer_name(&taken), "__answer");
    // Forced to call a tool, the model is not offered the answer.
    let forced = req.clone().tool_choice(ToolChoice::Required);
    let forced = super::plan(&forced, &config, JSON).unwrap();
    assert!(!forced.chat[0].content.contains("- answer:"));
}

#[test]
fn salvages_a_cut_off_answer() {
    assert_eq!(
        salvage_answer(r#"{"answer": "It is sunny \"to"#, "answer").as_deref(),
        Some("It is sunny \"to")
    );
    assert_eq!(
        salvage_answer(
            r#"{"name": "answer", "arguments": {"text": "Hello, I am"#,
            "answer"
        )
        .as_deref(),
        Some("Hello, I am")
    );
    assert_eq!(
        salvage_answer(r#"{"name": "get_weather", "argu"#, "answer"),
        None
    );
    assert_eq!(
        salvage_answer(r#"{"name": "answer", "arguments": {"text": "hi"#, "reply"),
        None
    );
}

#[test]
fn the_answer_follows_the_language_of_the_question() {
    assert_eq!(language_of("北京天气怎么样？"), Some("Chinese (中文)"));
    assert_eq!(
        language_of("帮我算一下 7 乘以 8 等于多少。"),
        Some("Chinese (中文)")
    );
    assert_eq!(language_of("東京の天気はどうですか"), Some("Japanese"));
    assert_eq!(language_of("서울 날씨 어때요?"), Some("Korean"));
    assert_eq!(language_of("Какая погода в Москве?"), Some("Russian"));
    assert_eq!(language_of("What is the weather in Beijing?"), None);
    assert_eq!(language_of("42"), None);

    let call = ToolCall::new("c1", "get_weather", r#"{"city":"北京"}"#);
    let req = ModelRequest::new(vec![
        Message::user("北京天气怎么样？"),
        Message::new(Role::Assistant, vec![Part::ToolCall(call)]),
        Message::from_tool_results([ToolResult::ok("c1", "get_weather", "22.5")]),
    ])
    .tools(vec![weather()]);
    let plan = plan(&req, &LlamaConfig::default(), JSON).unwrap();
    assert!(
        plan.chat[0].content.ends_with("Answer in Chinese (中文)."),
        "{:?}",
        plan.chat[0]
    );
}

#[test]
fn example_calls_come_from_the_schema_and_invent_no_values() {
    let calculator = tinyagent_demo::calculator_tool().definition();
    let call = example_call(&calculator);
    let args: Value = serde_json::from_str(&call.arguments).unwrap();
    assert_eq!(call.name, "calculator");
    assert_eq!(args["operation"], "add", "the first enum value: {args}");
    assert!(args["a"].is_number() && args["b"].is_number(), "{args}");
    let weather = tinyagent_demo::weather_tool().definition();
    let args: Value = serde_json::from_str(&example_call(&weather).arguments).unwrap();
    assert_eq!(args["city"], "<city>", "no made-up city to copy: {args}");
}

#[test]
fn the_tagged_format_lists_schemas_and_shows_calls_in_tags() {
    let tagged = Style {
        format: Format::Tagged,
        terse: true,
        examples: true,
        follow_language: true,
    };
    let call = ToolCall::new("c1", "get_weather", r#"{"city":"北京"}"#);
    let req = ModelRequest::new(vec![
        Message::user("北京天气怎么样？"),
        Message::new(Role::Assistant, vec![Part::ToolCall(call)]),
        Message::from_tool_results([ToolResult::ok("c1", "get_weather", "22.5")]),
    ])
    .tools(vec![weather()]);
    let plan = plan(&req, &LlamaConfig::default().max_tool_rounds(2), tagged).unwrap();
    let system = &plan.chat[0].content;
    assert!(
        system.contains(r#"<tools>[{"name":"get_weather""#),
        "{system}"
    );
    assert!(system.contains("<tool_call>[]</tool_call>"), "{system}");
    assert!(
        system.contains(
            r#"<tool_call>[{"name":"get_weather","arguments":{"city":"<city>"}}]</tool_call>"#
        ),
        "{system}"
    );
    assert_eq!(
        plan.chat[2].content,
        r#"<tool_call>[{"name":"get_weather","arguments":{"city":"北京"}}]</tool_call>"#
    );
    assert_eq!(
        Format::Tagged.call_prefix("get_weather"),
        r#"<tool_call>[{"name": "get_weather", "arguments": "#
    );
    assert_eq!(
        Format::Json.choice("calculator"),
        r#"{"name": "calculator""#
    );
    assert_eq!(Format::Tagged.no_call(), Some("<tool_call>[]"));
}

#[test]
fn the_hermes_format_is_the_chat_templates_own() {
    let hermes = Style {
        format: Format::Hermes,
        terse: false,
        examples: false,
        follow_language: true,
    };
    let call = ToolCall::new("c1", "get_weather", r#"{"city":"北京"}"#);
    let req = ModelRequest::new(vec![
        Message::user("北京天气怎么样？"),
        Message::new(Role::Assistant, vec![Part::ToolCall(call)]),
        Message::from_tool_results([ToolResult::ok("c1", "get_weather", "22.5")]),
    ])
    .tools(vec![weather()]);
    let plan = plan(&req, &LlamaConfig::default().max_tool_rounds(2), hermes).unwrap();
    let system = &plan.chat[0].content;
    assert!(
        system.contains("<tools>\n{\"type\":\"function\",\"function\":{\"name\":\"get_weather\""),
        "{system}"
    );
    assert!(
        system.ends_with(
            "<tool_call>\n{\"name\": <function-name>, \"arguments\": <args-json-object>}\n</tool_call>"
        ),
        "{system}"
    );
    assert_eq!(
        plan.chat[2].content,
        "<tool_call>\n{\"name\":\"get_weather\",\"arguments\":{\"city\":\"北京\"}}\n</tool_call>"
    );
    assert_eq!(plan.chat[3].role, "user");
    assert_eq!(
        plan.chat[3].content,
        "<tool_response>\n22.5\n</tool_response>"
    );
    assert_eq!(
        Format::Hermes.call_prefix("get_weather"),
        "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": "
    );
    // An answer is plain text: "no tool" is the reply not opening as a call.
    assert_eq!(Format::Hermes.no_call(), None);
    assert_eq!(Format::Hermes.call_opening(), "<tool_call>");
}

#[test]
fn an_answer_instead_of_a_call_is_told_what_the_tools_can_do() {
    let tools: Vec<ToolDefinition> = tinyagent_demo::all_tools()
        .iter()
        .map(|t| t.definition())
        .collect();
    let req = ModelRequest::new(vec![Message::user("帮我订一张去上海的机票。")]).tools(tools);
    let direct = direct_answer_plan(&req, JSON);
    assert!(matches!(direct.output, Output::Text));
    let system = &direct.chat[0].content;
    for tool in req.tools.iter() {
        assert!(system.contains(&format!("- {}: ", tool.name)), "{system}");
    }
    assert!(system.contains("say that you cannot do that"), "{system}");
    assert!(system.ends_with("Answer in Chinese (中文)."), "{system}");
    // A description is shown up to its first sentence.
    let long = ToolDefinition::new(
        "search",
        "Searches the web. Returns titles, links and snippets.",
        json!({"type": "object"}),
    );
    let req = ModelRequest::new(vec![Message::user("hi")]).tools(vec![long]);
    let system = direct_answer_plan(&req, JSON).chat[0].content.clone();
    assert!(system.contains("- search: Searches the web.\n"), "{system}");
    // An answer after a tool round, or without tools, is not told this.
    assert!(
        !answer_plan(&req, JSON).chat[0]
            .content
            .contains("only with these tools")
    );
    let bare = ModelRequest::new(vec![Message::user("hi")]);
    assert!(
        !direct_answer_plan(&bare, JSON).chat[0]
            .content
            .contains("only with these tools")
    );
}

/// The expected value of an argument in `eval/tools.jsonl`: the value, the first of its
/// alternatives that is not "absent", or the text it must contain.
fn expected_value(value: &Value) -> Option<Value> {
    match value {
        Value::Null => None,
        Value::Array(alternatives) => alternatives.iter().find_map(expected_value),
        Value::Object(o) => o.get("contains").cloned(),
        other => Some(other.clone()),
    }
}

/// The conversation before an eval question: its `history` entries, then the question.
fn eval_request(case: &Value) -> ModelRequest {
    let mut messages = Vec::new();
    for (i, entry) in case["history"].as_array().into_iter().flatten().enumerate() {
        if let Some(user) = entry["user"].as_str() {
            messages.push(Message::user(user));
        } else if let Some(said) = entry["assistant"].as_str() {
            messages.push(Message::assistant(said));
        } else if let Some(call) = entry.get("call") {
            let id = format!("c{i}");
            let name = call["name"].as_str().unwrap();
            let call = ToolCall::new(&id, name, call["arguments"].to_string());
            messages.push(Message::new(Role::Assistant, vec![Part::ToolCall(call)]));
            let result = entry["result"].as_str().unwrap_or_default();
            messages.push(Message::from_tool_results([ToolResult::ok(
                &id, name, result,
            )]));
        }
    }
    messages.push(Message::user(case["question"].as_str().unwrap()));
    ModelRequest::new(messages)
}

#[test]
fn no_expected_call_of_the_eval_file_is_taken_for_made_up() {
    let tools: Vec<ToolDefinition> = tinyagent_demo::all_tools()
        .iter()
        .map(|t| t.definition())
        .collect();
    let file = concat!(env!("CARGO_MANIFEST_DIR"), "/../../eval/tools.jsonl");
    let text = std::fs::read_to_string(file).unwrap();
    let mut checked = 0;
    for line in text.lines().filter(|l| l.trim_start().starts_with('{')) {
        let case: Value = serde_json::from_str(line).unwrap();
        let Some(name) = case["tool"].as_str() else {
            continue;
        };
        let tool = tools.iter().find(|t| t.name == name).unwrap();
        let arguments: serde_json::Map<String, Value> = case["arguments"]
            .as_object()
            .into_iter()
            .flatten()
            .filter_map(|(k, v)| Some((k.clone(), expected_value(v)?)))
            .collect();
        let invented = invented_arguments(tool, &Value::Object(arguments), &eval_request(&case));
        assert!(invented.is_empty(), "{line}: {invented:?}");
        checked += 1;
    }
    assert!(checked > 150, "{checked} expected calls checked");
}
