//! Unit tests of the Responses endpoint's translation of requests.

use super::*;

#[test]
fn request_fields_take_their_chat_completions_names() {
    let extra: Map<String, Value> = serde_json::from_value(json!({
        "max_output_tokens": 100,
        "text": {"format": {"type": "json_schema", "name": "a", "schema": {"type": "object"},
                            "strict": true}},
        "tool_choice": {"type": "function", "name": "add"},
        "temperature": 0.5,
        "store": true,
        "metadata": {"k": "v"},
    }))
    .unwrap();
    let out = translate(&extra).unwrap();
    assert_eq!(out["max_tokens"], 100);
    assert_eq!(
        out["response_format"],
        json!({"type": "json_schema", "json_schema": {"name": "a",
               "schema": {"type": "object"}, "strict": true}})
    );
    assert_eq!(
        out["tool_choice"],
        json!({"type": "function", "function": {"name": "add"}})
    );
    assert_eq!(out["temperature"], 0.5);
    assert!(!out.contains_key("store") && !out.contains_key("metadata"));
    for (field, value) in [
        ("previous_response_id", json!("resp_1")),
        ("stop", json!(["x"])),
        ("seed", json!(1)),
        ("max_tokens", json!(9)),
    ] {
        let refused = translate(&Map::from_iter([(field.to_owned(), value)])).unwrap_err();
        assert_eq!(refused.param.as_deref(), Some(field));
        assert_eq!(refused.code, Some("unsupported_parameter"));
    }
}

#[test]
fn input_becomes_messages_and_errors_name_the_input_item() {
    let (messages, from) = messages(
        Some("Be brief.".into()),
        json!([{"role": "user", "content": [{"type": "input_text", "text": "Hi"}]},
               {"type": "message", "role": "assistant", "content": "Hello"},
               {"role": "user", "content": "7 + 8?"}]),
    )
    .unwrap();
    assert_eq!(messages.len(), 4);
    assert_eq!(from, ["instructions", "input[0]", "input[1]", "input[2]"]);
    let bad = messages_error(json!([{"role": "user", "content": [{"type": "input_image"}]}]));
    assert_eq!(bad.param.as_deref(), Some("input[0].content[0]"));
    let bad = messages_error(json!([{"type": "reasoning", "id": "rs_1", "summary": []}]));
    assert_eq!(bad.param.as_deref(), Some("input[0].type"));
    let err = named(
        ApiError::bad_request("x").param("messages[1].tool_call_id"),
        &["instructions".into(), "input[0]".into()],
    );
    assert_eq!(err.param.as_deref(), Some("input[0].tool_call_id"));
}

fn messages_error(input: Value) -> ApiError {
    match messages(None, input) {
        Err(e) => e,
        Ok(_) => panic!("accepted"),
    }
}
