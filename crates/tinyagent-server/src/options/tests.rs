//! The request fields' treatment, and the operator's pins and caps.

use super::*;

#[test]
fn every_field_is_honoured_refused_or_ignored_by_name() {
    let none = Parameters::default();
    let read = |body: Value| read(body.as_object().unwrap(), &none);
    let (options, shape) = read(serde_json::json!({
        "max_tokens": 50, "max_completion_tokens": 20, "temperature": 0.5,
        "tool_choice": "none", "parallel_tool_calls": false, "user": "u1",
        "metadata": {"a": "b"}, "store": true, "n": 1, "seed": null,
        "top_p": 0.5, "stop": "END", "presence_penalty": 0.25, "frequency_penalty": 0,
        "response_format": {"type": "json_object"}
    }))
    .unwrap();
    assert_eq!(options.max_tokens, Some(20));
    assert_eq!(options.sampling.temperature, Some(0.5));
    assert_eq!(options.sampling.top_p, Some(0.5));
    assert_eq!(options.sampling.stop, ["END"]);
    assert_eq!(options.sampling.seed, None);
    assert_eq!(options.sampling.presence_penalty, Some(0.25));
    assert_eq!(
        options.sampling.frequency_penalty, None,
        "0 asks for nothing"
    );
    assert_eq!(options.tool_choice, Some(ToolChoice::None));
    assert_eq!(options.parallel_tool_calls, Some(false));
    let shape = shape.unwrap();
    assert!(shape.check("[1]").is_err());
    assert_eq!(
        shape.check("```json\n{\"a\": 1}\n```").unwrap(),
        "{\"a\": 1}"
    );
    // Neutral values set nothing.
    let (neutral, _) =
        read(serde_json::json!({"top_p": 1, "stop": [], "presence_penalty": 0})).unwrap();
    assert_eq!(neutral.sampling.options().count(), 0);
    for (body, field, code) in [
        (
            serde_json::json!({"logprobs": true}),
            "logprobs",
            "unsupported_parameter",
        ),
        (serde_json::json!({"n": 2}), "n", "unsupported_parameter"),
        (
            serde_json::json!({"frobnicate": 1}),
            "frobnicate",
            "unsupported_parameter",
        ),
        (
            serde_json::json!({"max_tokens": 0}),
            "max_tokens",
            "invalid_value",
        ),
        (
            serde_json::json!({"tool_choice": "maybe"}),
            "tool_choice",
            "invalid_value",
        ),
        (serde_json::json!({"top_p": 1.5}), "top_p", "invalid_value"),
        (serde_json::json!({"seed": -1}), "seed", "invalid_value"),
        (
            serde_json::json!({"stop": ["a", "b", "c", "d", "e"]}),
            "stop",
            "invalid_value",
        ),
        (serde_json::json!({"stop": [1]}), "stop", "invalid_value"),
        (
            serde_json::json!({"presence_penalty": 3}),
            "presence_penalty",
            "invalid_value",
        ),
    ] {
        let err = read(body).unwrap_err();
        assert_eq!(err.param.as_deref(), Some(field), "{err:?}");
        assert_eq!(err.code, Some(code), "{err:?}");
    }
    // The operator may accept a field as a hint.
    let hint = Parameters {
        ignored: vec!["logprobs".to_owned()],
        ..Parameters::default()
    };
    let extra = serde_json::json!({"logprobs": true});
    assert!(super::read(extra.as_object().unwrap(), &hint).is_ok());
}

#[test]
fn the_operator_pins_and_caps_fields() {
    let operator = Parameters {
        pinned: vec![("seed".to_owned(), serde_json::json!(7))],
        caps: vec![
            ("temperature".to_owned(), 1.0),
            ("max_tokens".to_owned(), 100.0),
        ],
        ..Parameters::default()
    };
    let read = |body: Value| super::read(body.as_object().unwrap(), &operator);
    // Pins hold when a client says nothing, or the same.
    let (options, _) = read(serde_json::json!({})).unwrap();
    assert_eq!(options.sampling.seed, Some(7));
    assert_eq!(options.max_tokens, Some(100), "the cap is the limit");
    let (options, _) =
        read(serde_json::json!({"seed": 7, "max_tokens": 20, "temperature": 0.9})).unwrap();
    assert_eq!(
        (
            options.sampling.seed,
            options.max_tokens,
            options.sampling.temperature
        ),
        (Some(7), Some(20), Some(0.9))
    );
    // Another value of a pinned field, or one above a cap, is refused by name.
    for (body, field) in [
        (serde_json::json!({"seed": 8}), "seed"),
        (serde_json::json!({"temperature": 1.5}), "temperature"),
    ] {
        let err = read(body).unwrap_err();
        assert_eq!(err.param.as_deref(), Some(field), "{err:?}");
    }
    // A pinned value sent in another JSON form is the same value.
    let pinned_zero = Parameters {
        pinned: vec![
            ("temperature".to_owned(), serde_json::json!(0)),
            ("stop".to_owned(), serde_json::json!(["END"])),
        ],
        caps: vec![("top_p".to_owned(), 0.9)],
        ..Parameters::default()
    };
    let same = serde_json::json!({"temperature": 0.0, "stop": "END", "top_p": 1});
    let (options, _) = super::read(same.as_object().unwrap(), &pinned_zero).unwrap();
    assert_eq!(options.sampling.temperature, Some(0.0));
    assert_eq!(
        options.sampling.top_p, None,
        "a neutral value is never above a cap"
    );
    // A pin holds over a field the operator also ignores.
    let ignored_and_pinned = Parameters {
        ignored: vec!["seed".to_owned()],
        pinned: vec![("seed".to_owned(), serde_json::json!(42))],
        ..Parameters::default()
    };
    let sent = serde_json::json!({"seed": 7});
    let (options, _) = super::read(sent.as_object().unwrap(), &ignored_and_pinned).unwrap();
    assert_eq!(options.sampling.seed, Some(42));
    // The spec's seed is an int64.
    let too_big = serde_json::json!({"seed": u64::MAX});
    assert!(super::read(too_big.as_object().unwrap(), &Parameters::default()).is_err());
    // A token limit above the cap is lowered to it, as the agent's own limit lowers it.
    assert_eq!(
        read(serde_json::json!({"max_tokens": 500}))
            .unwrap()
            .0
            .max_tokens,
        Some(100)
    );
    // What an operator may not say.
    let bad = |pinned: Vec<(&str, Value)>, caps: Vec<(&str, f64)>| {
        Parameters {
            pinned: pinned.into_iter().map(|(n, v)| (n.to_owned(), v)).collect(),
            caps: caps.into_iter().map(|(n, c)| (n.to_owned(), c)).collect(),
            ..Parameters::default()
        }
        .check()
        .unwrap_err()
    };
    assert!(bad(vec![("n", serde_json::json!(2))], vec![]).contains("cannot be pinned"));
    assert!(bad(vec![], vec![("seed", 3.0)]).contains("cannot be capped"));
    assert!(bad(vec![("top_p", serde_json::json!(3))], vec![]).contains("from 0 to 1"));
    assert!(bad(vec![], vec![("max_tokens", 0.0)]).contains("at least 1"));
    let above = vec![("temperature", serde_json::json!(1.5))];
    assert!(bad(above, vec![("temperature", 1.0)]).contains("at most 1"));
    assert!(operator.check().is_ok());
}
