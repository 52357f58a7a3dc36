//! From a [`ModelRequest`] to a chat for the model's template and an output contract, and from
//! the model's output back to message parts.

use serde_json::{Map, Value, json};
use tinyagent::tools::SchemaValidator;
use tinyagent::{
    Message, ModelError, ModelErrorKind, ModelRequest, Part, Role, ToolCall, ToolChoice,
    ToolDefinition, new_id,
};

use crate::LlamaConfig;

/// One message for the chat template: a role name and its text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ChatTurn {
    pub role: &'static str,
    pub content: String,
}

/// What the model must produce this step.
#[derive(Debug)]
pub(crate) enum Output {
    /// Free text, until the model's end-of-turn token.
    Text,
    /// One JSON object: `{"answer": "…"}` (when `allow_answer`) or
    /// `{"name": "<tool>", "arguments": {…}}` for one of `tools`.
    Json(JsonOutput),
}

/// The JSON output contract of a tool-calling step.
#[derive(Debug)]
pub(crate) struct JsonOutput {
    /// The tools the model may name (those offered by the request, after `tool_choice`).
    pub tools: Vec<ToolDefinition>,
    /// Whether `{"answer": "…"}` is allowed.
    pub allow_answer: bool,
    /// The JSON Schema every output must match; turned into a grammar.
    pub schema: Value,
}

/// A prepared step: the chat to render and the output contract.
#[derive(Debug)]
pub(crate) struct Plan {
    pub chat: Vec<ChatTurn>,
    pub output: Output,
}

const DEFAULT_INSTRUCTION: &str = "You are a helpful assistant.";

/// Decides the output contract and writes the chat for `req`.
///
/// `terse` leaves the arguments' descriptions out of the tool list.
pub(crate) fn plan(
    req: &ModelRequest,
    config: &LlamaConfig,
    terse: bool,
) -> Result<Plan, ModelError> {
    let output = output_for(req, config)?;
    let chat = chat_for(req, &output, terse);
    Ok(Plan { chat, output })
}

fn output_for(req: &ModelRequest, config: &LlamaConfig) -> Result<Output, ModelError> {
    if req.tools.is_empty() {
        return match &req.tool_choice {
            Some(ToolChoice::Required | ToolChoice::Tool(_)) => Err(invalid(
                "tool_choice asks for a tool call but the request offers no tools",
            )),
            _ => Ok(Output::Text),
        };
    }
    let (tools, allow_answer) = match &req.tool_choice {
        Some(ToolChoice::None) => return Ok(Output::Text),
        Some(ToolChoice::Required) => (req.tools.clone(), false),
        Some(ToolChoice::Tool(name)) => {
            let Some(tool) = req.tools.iter().find(|t| &t.name == name) else {
                return Err(invalid(format!(
                    "tool_choice names the tool {name:?}, which the request does not offer \
                     (offered: {})",
                    names(&req.tools)
                )));
            };
            (vec![tool.clone()], false)
        }
        _ => {
            if tool_rounds(&req.messages) >= config.max_tool_rounds as usize {
                return Ok(Output::Text);
            }
            (req.tools.clone(), true)
        }
    };
    let schema = output_schema(&tools, allow_answer);
    Ok(Output::Json(JsonOutput {
        tools,
        allow_answer,
        schema,
    }))
}

/// Assistant tool-call messages since the user's last message.
fn tool_rounds(messages: &[Message]) -> usize {
    messages
        .iter()
        .rev()
        .take_while(|m| m.role != Role::User)
        .filter(|m| m.role == Role::Assistant && m.has_tool_calls())
        .count()
}

fn names(tools: &[ToolDefinition]) -> String {
    tools
        .iter()
        .map(|t| t.name.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

fn invalid(message: impl Into<String>) -> ModelError {
    ModelError::new(ModelErrorKind::InvalidRequest, message.into())
}

/// The schema of one tool-call branch: `{"name": <const>, "arguments": <input schema>}`.
pub(crate) fn call_schema(name: &str, arguments: &Value) -> Value {
    json!({
        "type": "object",
        "properties": {
            "name": {"const": name},
            "arguments": arguments,
        },
        "required": ["name", "arguments"],
    })
}

/// The schema of the final-answer branch.
pub(crate) fn answer_schema() -> Value {
    json!({
        "type": "object",
        "properties": {"answer": {"type": "string", "minLength": 1}},
        "required": ["answer"],
    })
}

/// The schema of every allowed output: one branch per tool, plus the answer if allowed.
pub(crate) fn output_schema(tools: &[ToolDefinition], allow_answer: bool) -> Value {
    let mut branches: Vec<Value> = tools
        .iter()
        .map(|t| call_schema(&t.name, &t.input_schema))
        .collect();
    if allow_answer {
        branches.push(answer_schema());
    }
    one_of(branches)
}

/// `{"oneOf": branches}`, or the branch itself when there is one.
pub(crate) fn one_of(mut branches: Vec<Value>) -> Value {
    if branches.len() == 1 {
        branches.remove(0)
    } else {
        json!({ "oneOf": branches })
    }
}

fn system_prompt(req: &ModelRequest, output: &Output, terse: bool) -> String {
    let mut text = if req.instruction.trim().is_empty() {
        DEFAULT_INSTRUCTION.to_owned()
    } else {
        req.instruction.trim().to_owned()
    };
    match output {
        Output::Json(out) => {
            text.push_str("\n\nYou can use these tools:\n");
            for tool in &out.tools {
                text.push_str(&format!("- {}: {}\n", tool.name, tool.description));
                describe_arguments(&mut text, &tool.input_schema, terse);
            }
            text.push_str(
                "\nReply with one JSON object and nothing else. To call a tool: \
                 {\"name\": \"<tool name>\", \"arguments\": {<arguments>}}",
            );
            if out.allow_answer {
                text.push_str(". To answer the user directly: {\"answer\": \"<your answer>\"}");
            }
            text.push('.');
        }
        Output::Text => {
            if req.messages.iter().any(|m| m.role == Role::Tool) {
                text.push_str(
                    "\n\nAnswer the user's question in plain text, using the tool results.",
                );
            }
        }
    }
    text
}

/// The JSON an assistant's tool call is shown as in the history (the output contract's form).
pub(crate) fn call_json(call: &ToolCall) -> String {
    let arguments = serde_json::from_str::<Value>(&call.arguments)
        .unwrap_or_else(|_| Value::String(call.arguments.clone()));
    let mut object = Map::new();
    object.insert("name".into(), Value::String(call.name.clone()));
    object.insert("arguments".into(), arguments);
    Value::Object(object).to_string()
}

fn chat_for(req: &ModelRequest, output: &Output, terse: bool) -> Vec<ChatTurn> {
    let mut chat = vec![ChatTurn {
        role: "system",
        content: system_prompt(req, output, terse),
    }];
    for message in &req.messages {
        let turn = match message.role {
            Role::System => ChatTurn {
                role: "system",
                content: message.text(),
            },
            Role::User => ChatTurn {
                role: "user",
                content: message.text(),
            },
            Role::Assistant => {
                let mut lines: Vec<String> = Vec::new();
                let text = message.text();
                if !text.is_empty() {
                    lines.push(text);
                }
                // When the reply is to be plain text, earlier calls are told in words: shown as
                // JSON, a small model answers with more JSON.
                let in_words = matches!(output, Output::Text);
                lines.extend(message.tool_calls().map(|call| {
                    if in_words {
                        format!(
                            "I will call the tool {} with {}.",
                            call.name, call.arguments
                        )
                    } else {
                        call_json(call)
                    }
                }));
                ChatTurn {
                    role: "assistant",
                    content: lines.join("\n"),
                }
            }
            // Small chat models know only system, user and assistant: tool results are shown
            // to them as a user turn that says where each result comes from.
            Role::Tool => {
                let lines: Vec<String> = message
                    .tool_results()
                    .map(|r| {
                        let verb = if r.is_error { "failed" } else { "returned" };
                        format!("Tool {} {verb}: {}", r.name, r.content)
                    })
                    .collect();
                ChatTurn {
                    role: "user",
                    content: lines.join("\n"),
                }
            }
        };
        chat.push(turn);
    }
    chat
}

/// Turns a JSON output into message parts, checking it against the contract.
pub(crate) fn parse_json_output(
    text: &str,
    out: &JsonOutput,
    validators: &[(String, SchemaValidator)],
) -> Result<Part, ModelError> {
    let bad = |why: String| {
        ModelError::invalid_response(format!("the local model's reply {text:?} {why}"))
            .retryable(false)
    };
    let value: Value = serde_json::from_str(text.trim())
        .map_err(|e| bad(format!("is not one JSON object: {e}")))?;
    let Value::Object(mut object) = value else {
        return Err(bad("is not a JSON object".into()));
    };
    if let Some(answer) = object.get("answer") {
        if !out.allow_answer {
            return Err(bad("answers although a tool call was required".into()));
        }
        let Some(answer) = answer.as_str() else {
            return Err(bad("has an answer that is not a string".into()));
        };
        return Ok(Part::text(answer));
    }
    let Some(Value::String(name)) = object.remove("name") else {
        return Err(bad("has neither an answer nor a tool name".into()));
    };
    if !out.tools.iter().any(|t| t.name == name) {
        return Err(bad(format!(
            "calls {name:?}, which is not an offered tool (offered: {})",
            names(&out.tools)
        )));
    }
    let arguments = object
        .remove("arguments")
        .unwrap_or(Value::Object(Map::new()));
    if let Some((_, validator)) = validators.iter().find(|(n, _)| *n == name) {
        validator.validate(&arguments).map_err(|e| {
            bad(format!(
                "calls {name} with arguments its schema rejects: {e}"
            ))
        })?;
    }
    Ok(Part::ToolCall(ToolCall::new(
        new_id("call"),
        name,
        arguments.to_string(),
    )))
}

/// What can be saved of a JSON output cut off by the token limit: the start of an answer.
pub(crate) fn salvage_answer(text: &str) -> Option<String> {
    let rest = text.trim_start().strip_prefix('{')?.trim_start();
    let rest = rest.strip_prefix("\"answer\"")?.trim_start();
    let rest = rest.strip_prefix(':')?.trim_start();
    let rest = rest.strip_prefix('"')?;
    // Close the string at the longest prefix that still parses.
    for end in (0..=rest.len()).rev() {
        if !rest.is_char_boundary(end) {
            continue;
        }
        if let Ok(Value::String(s)) = serde_json::from_str(&format!("\"{}\"", &rest[..end])) {
            return Some(s);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use tinyagent::ToolResult;

    fn weather() -> ToolDefinition {
        ToolDefinition {
            name: "get_weather".into(),
            description: "weather".into(),
            input_schema: json!({"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}),
        }
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
            plan(&req, &config, false).unwrap().output,
            Output::Text
        ));
        let req = req.with_tools(vec![weather()]);
        let Output::Json(out) = plan(&req, &config, false).unwrap().output else {
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
        .with_tools(vec![weather()]);
        let first = plan(&req, &config, false).unwrap();
        assert!(matches!(first.output, Output::Text));
        assert_eq!(
            first.chat[2].content,
            r#"I will call the tool get_weather with {"city":"北京"}."#
        );
        assert_eq!(first.chat[3].content, "Tool get_weather returned: 22.5");
        assert!(first.chat[0].content.contains("using the tool results"));
        let more = plan(&req, &LlamaConfig::default().max_tool_rounds(2), false).unwrap();
        assert!(matches!(more.output, Output::Json(_)));
        assert_eq!(
            more.chat[2].content,
            r#"{"name":"get_weather","arguments":{"city":"北京"}}"#
        );
    }

    #[test]
    fn tool_choice_narrows_the_contract() {
        let config = LlamaConfig::default();
        let req = ModelRequest::new(vec![Message::user("hi")]).with_tools(vec![weather()]);
        let forced = req.clone().with_tool_choice(ToolChoice::Required);
        let Output::Json(out) = plan(&forced, &config, false).unwrap().output else {
            panic!("expected JSON output");
        };
        assert!(!out.allow_answer);
        assert_eq!(out.schema["properties"]["name"]["const"], "get_weather");
        let unknown = req
            .clone()
            .with_tool_choice(ToolChoice::Tool("nope".into()));
        let err = plan(&unknown, &config, false).unwrap_err();
        assert!(err.message().contains("get_weather"), "{err}");
        let none = req.with_tool_choice(ToolChoice::None);
        assert!(matches!(
            plan(&none, &config, false).unwrap().output,
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
        assert!(parse_json_output("not json", &out, &validators).is_err());
    }

    #[test]
    fn salvages_a_cut_off_answer() {
        assert_eq!(
            salvage_answer(r#"{"answer": "It is sunny \"to"#).as_deref(),
            Some("It is sunny \"to")
        );
        assert_eq!(salvage_answer(r#"{"name": "get_weather", "argu"#), None);
    }
}

/// One line per top-level argument: name, type or allowed values, required or optional, and
/// (unless `terse`) its description. The full schema is enforced by the grammar, not the prompt.
fn describe_arguments(out: &mut String, schema: &Value, terse: bool) {
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
        return;
    };
    for (name, property) in properties {
        let kind = property
            .get("enum")
            .or_else(|| property.get("type"))
            .map_or_else(|| "any".to_owned(), Value::to_string);
        let need = if required.contains(&name.as_str()) {
            "required"
        } else {
            "optional"
        };
        out.push_str(&format!("  - {name} ({kind}, {need})"));
        match property.get("description").and_then(Value::as_str) {
            Some(description) if !terse => out.push_str(&format!(": {description}\n")),
            _ => out.push('\n'),
        }
    }
}
