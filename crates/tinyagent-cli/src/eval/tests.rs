//! The tests of `eval`.

use super::*;

#[test]
fn expected_arguments_match_as_documented() {
    assert!(matches(&json!("北京"), Some(&json!(" 北京 "))));
    assert!(matches(&json!("London"), Some(&json!("london"))));
    assert!(!matches(&json!("London"), Some(&json!("Londres"))));
    assert!(!matches(&json!("London"), None));
    assert!(matches(&json!(56), Some(&json!(56.0))));
    assert!(!matches(&json!(56), Some(&json!(8))));
    assert!(!matches(&json!(56), Some(&json!("56"))));
    assert!(matches(&json!(null), None));
    assert!(!matches(&json!(null), Some(&json!("celsius"))));
    assert!(matches(&json!([null, "celsius"]), None));
    assert!(matches(&json!([null, "celsius"]), Some(&json!("Celsius"))));
    assert!(!matches(
        &json!([null, "celsius"]),
        Some(&json!("fahrenheit"))
    ));
    assert!(matches(
        &json!({"contains": "good morning"}),
        Some(&json!("Translate: Good morning!"))
    ));
    assert!(matches(
        &json!({"a": 1, "b": ["x", "y"]}),
        Some(&json!({"a": 1, "b": "y", "c": 3}))
    ));
    assert!(!matches(&json!({"a": 1}), Some(&json!({"a": 2}))));
    assert!(matches(&json!(true), Some(&json!(true))));
    assert!(!matches(&json!(true), Some(&json!("true"))));
}

#[test]
fn cases_are_read_with_their_history_and_bad_lines_are_named() {
    let text = r#"
{"question": "北京天气怎么样？", "tool": "get_weather", "arguments": {"city": "北京"}}

{"id": "more", "part": "reporting", "history": [{"user": "7 乘以 8？"}, {"call": {"name": "calculator", "arguments": {"a": 7, "b": 8}}, "result": "56"}, {"assistant": "56。"}], "question": "再乘以 2 呢？", "tool": "calculator", "arguments": {"a": 56}}
"#;
    let cases = parse_cases(text).unwrap();
    assert_eq!(cases.len(), 2);
    assert_eq!(cases[0].id.as_deref(), Some("line 2"));
    assert_eq!(cases[1].part.as_deref(), Some("reporting"));
    let sent = messages(&cases[1]);
    let roles: Vec<Role> = sent.iter().map(|m| m.role).collect();
    assert_eq!(
        roles,
        [
            Role::User,
            Role::Assistant,
            Role::Tool,
            Role::Assistant,
            Role::User
        ]
    );
    let call = sent[1].tool_calls().next().unwrap();
    assert_eq!(call.name, "calculator");
    assert_eq!(
        serde_json::from_str::<Value>(&call.arguments).unwrap(),
        json!({"a": 7, "b": 8})
    );
    assert_eq!(sent[2].tool_results().next().unwrap().call_id, call.id);
    assert_eq!(sent[4].text(), "再乘以 2 呢？");

    let err = parse_cases("{\"question\": \"a\", \"tool\": null}\n{\"question\": 3}").unwrap_err();
    assert!(err.starts_with("line 2: "), "{err}");
    let err = parse_cases("{\"question\": \"a\", \"tool\": null, \"tools\": []}").unwrap_err();
    assert!(err.contains("unknown field"), "{err}");
    assert!(parse_cases("\n\n").unwrap_err().contains("no questions"));
    assert!(
        parse_cases("{\"question\": \" \", \"tool\": null}")
            .unwrap_err()
            .contains("empty")
    );
}

fn outcome(part: &str, expected: Option<&str>, called: Option<&str>, args_ok: bool) -> Outcome {
    Outcome {
        id: String::new(),
        part: Some(part.to_owned()),
        question: String::new(),
        expected: expected.map(str::to_owned),
        called: called.map(str::to_owned),
        arguments: None,
        answer: None,
        error: None,
        right_tool: expected == called,
        right_arguments: expected == called && args_ok,
        seconds: 1.0,
        input_tokens: Some(100),
        output_tokens: Some(10),
    }
}

#[test]
fn the_figures_count_tools_arguments_and_answers_without_a_tool() {
    let outcomes = vec![
        outcome("tuning", Some("w"), Some("w"), true),
        outcome("tuning", Some("w"), Some("w"), false),
        outcome("tuning", Some("c"), Some("w"), false),
        outcome("tuning", Some("c"), None, false),
        outcome("reporting", None, None, false),
        outcome("reporting", None, Some("w"), false),
    ];
    let all = summaries(&outcomes);
    assert_eq!(
        all.iter().map(|s| s.part.as_str()).collect::<Vec<_>>(),
        ["tuning", "reporting", "all"]
    );
    let tuning = &all[0];
    assert_eq!((tuning.questions, tuning.need_a_tool), (4, 4));
    assert_eq!(tuning.right_tool, Some(0.5));
    assert_eq!(tuning.right_arguments, Some(0.25));
    // One answered without a tool, and it needed one.
    assert_eq!(tuning.no_tool_precision, Some(0.0));
    assert_eq!(tuning.no_tool_recall, None);
    let whole = &all[2];
    assert_eq!(whole.no_tool_precision, Some(0.5));
    assert_eq!(whole.no_tool_recall, Some(0.5));
    assert_eq!(whole.median_seconds, 1.0);
    assert_eq!(whole.median_input_tokens, Some(100.0));

    let table = confusion(&outcomes);
    assert_eq!(table["w"]["w"], 2);
    assert_eq!(table["c"]["w"], 1);
    assert_eq!(table["c"][NO_TOOL], 1);
    assert_eq!(table[NO_TOOL][NO_TOOL], 1);
    assert_eq!(table[NO_TOOL]["w"], 1);
    let text = confusion_table(&outcomes);
    assert!(text.lines().next().unwrap().contains("(none)"), "{text}");
    assert_eq!(text.lines().count(), 4, "{text}");
}
