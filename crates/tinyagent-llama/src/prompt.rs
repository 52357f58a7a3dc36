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

/// How the tools and the output protocol are written for the model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Style {
    /// The call syntax.
    pub format: Format,
    /// Leave the arguments' descriptions out of the tool list.
    pub terse: bool,
    /// Show one example call per tool, its values derived from the tool's schema.
    pub examples: bool,
    /// Ask for the answer in the language of the question.
    pub follow_language: bool,
}

/// The call syntax the prompt teaches (resolved from [`crate::ToolFormat`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Format {
    /// `{"name": …, "arguments": {…}}` or `{"answer": …}`, tools listed in words.
    Json,
    /// The tools as JSON inside `<tools></tools>`, calls inside `<tool_call>[…]</tool_call>`
    /// (`[]` for none): the format SmolLM2, Qwen and Hermes-style models are trained on.
    Tagged,
}

impl Format {
    /// The text of a call to `name` up to where its arguments begin.
    pub fn call_prefix(self, name: &str) -> String {
        let name = Value::String(name.to_owned());
        match self {
            Self::Json => format!("{{\"name\": {name}, \"arguments\": "),
            Self::Tagged => format!("<tool_call>[{{\"name\": {name}, \"arguments\": "),
        }
    }

    /// The text of a call to `name` up to the end of the name: what tool choice scores.
    pub fn choice(self, name: &str) -> String {
        let name = Value::String(name.to_owned());
        match self {
            Self::Json => format!("{{\"name\": {name}"),
            Self::Tagged => format!("<tool_call>[{{\"name\": {name}"),
        }
    }

    /// The text that says "no tool, an answer": what tool choice scores against the calls.
    pub fn no_call(self) -> &'static str {
        match self {
            Self::Json => "{\"answer\"",
            Self::Tagged => "<tool_call>[]",
        }
    }

    /// An assistant's call as the history shows it.
    fn show_call(self, call: &ToolCall) -> String {
        match self {
            Self::Json => call_json(call),
            Self::Tagged => format!("<tool_call>[{}]</tool_call>", call_json(call)),
        }
    }
}

/// Decides the output contract and writes the chat for `req`.
pub(crate) fn plan(
    req: &ModelRequest,
    config: &LlamaConfig,
    style: Style,
) -> Result<Plan, ModelError> {
    let output = output_for(req, config)?;
    let chat = chat_for(req, &output, style);
    Ok(Plan { chat, output })
}

/// The chat for a plain-text answer to `req` (no tool may be called).
pub(crate) fn answer_plan(req: &ModelRequest, style: Style) -> Plan {
    let output = Output::Text;
    let chat = chat_for(req, &output, style);
    Plan { chat, output }
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

fn system_prompt(req: &ModelRequest, output: &Output, style: Style) -> String {
    let mut text = if req.instruction.trim().is_empty() {
        DEFAULT_INSTRUCTION.to_owned()
    } else {
        req.instruction.trim().to_owned()
    };
    match output {
        Output::Json(out) => match style.format {
            Format::Json => {
                text.push_str("\n\nYou can use these tools:\n");
                for tool in &out.tools {
                    text.push_str(&format!("- {}: {}\n", tool.name, tool.description));
                    describe_arguments(&mut text, &tool.input_schema, style.terse);
                }
                text.push_str(
                    "\nReply with one JSON object and nothing else. To call a tool: \
                     {\"name\": \"<tool name>\", \"arguments\": {<arguments>}}",
                );
                if out.allow_answer {
                    text.push_str(". To answer the user directly: {\"answer\": \"<your answer>\"}");
                }
                text.push('.');
                if style.examples {
                    text.push_str("\nExamples:");
                    for tool in &out.tools {
                        let call = example_call(tool);
                        text.push_str(&format!("\n{}", Format::Json.show_call(&call)));
                    }
                }
            }
            Format::Tagged => {
                let listed: Vec<Value> = out
                    .tools
                    .iter()
                    .map(|t| {
                        json!({
                            "name": t.name,
                            "description": t.description,
                            "parameters": if style.terse {
                                without_descriptions(&t.input_schema)
                            } else {
                                t.input_schema.clone()
                            },
                        })
                    })
                    .collect();
                text.push_str(&format!(
                    "\n\nYou have access to the following tools:\n<tools>{}</tools>\n\n\
                     To call a tool, reply with the call in this format and nothing else:\n\
                     <tool_call>[{{\"name\": \"func_name\", \"arguments\": {{\"argument1\": \"value1\"}}}}]</tool_call>",
                    Value::Array(listed)
                ));
                if out.allow_answer {
                    text.push_str(
                        "\nIf no tool is needed, reply with <tool_call>[]</tool_call> and then answer.",
                    );
                }
                if style.examples {
                    text.push_str("\nExamples:");
                    for tool in &out.tools {
                        let call = example_call(tool);
                        text.push_str(&format!("\n{}", Format::Tagged.show_call(&call)));
                    }
                }
            }
        },
        Output::Text => {
            if req.messages.iter().any(|m| m.role == Role::Tool) {
                text.push_str(
                    "\n\nAnswer the user's question in one short sentence of plain text, \
                     giving the values of the tool results.",
                );
            }
            if let Some(language) = last_user_text(req)
                .and_then(|t| language_of(&t))
                .filter(|_| style.follow_language)
            {
                text.push_str(&format!(" Answer in {language}."));
            }
        }
    }
    text
}

/// The top-level arguments of a plain object schema (`properties` only, no combinators),
/// in order, or `None` for any other schema (then the arguments are generated as a whole).
pub(crate) fn simple_fields(schema: &Value) -> Option<Vec<(String, Value)>> {
    let object = schema.as_object()?;
    if object.get("type").and_then(Value::as_str) != Some("object") {
        return None;
    }
    let allowed = [
        "type",
        "properties",
        "required",
        "additionalProperties",
        "description",
        "title",
        "$schema",
    ];
    if object.keys().any(|k| !allowed.contains(&k.as_str())) {
        return None;
    }
    let properties = object.get("properties")?.as_object()?;
    if properties.is_empty() {
        return None;
    }
    Some(
        properties
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect(),
    )
}

/// Whether `schema` lists `name` among its required properties.
pub(crate) fn is_required(schema: &Value, name: &str) -> bool {
    schema
        .get("required")
        .and_then(Value::as_array)
        .is_some_and(|r| r.iter().any(|v| v == name))
}

/// A tool as text for noisy-channel scoring: name, description, and each argument with its
/// description.
pub(crate) fn channel_text(tool: &ToolDefinition) -> String {
    let mut text = format!("{}: {}", tool.name, tool.description.trim());
    if let Some(properties) = tool
        .input_schema
        .get("properties")
        .and_then(Value::as_object)
    {
        let args: Vec<String> = properties
            .iter()
            .map(
                |(name, p)| match p.get("description").and_then(Value::as_str) {
                    Some(d) => format!("{name} ({})", d.trim()),
                    None => name.clone(),
                },
            )
            .collect();
        if !args.is_empty() {
            text.push_str(&format!(". Arguments: {}.", args.join(", ")));
        }
    }
    text
}

/// The tool results given since the user's last message.
pub(crate) fn recent_results(req: &ModelRequest) -> Vec<String> {
    req.messages
        .iter()
        .rev()
        .take_while(|m| m.role != Role::User)
        .flat_map(|m| {
            m.tool_results()
                .filter(|r| !r.is_error)
                .map(|r| r.content.clone())
        })
        .collect()
}

/// `answer` without a copy of the system `instruction` the model wrote before it (small
/// models sometimes start an answer by repeating their instruction); `None` when it has none,
/// or when the instruction is all there is.
pub(crate) fn without_echoed_instruction(answer: &str, instruction: &str) -> Option<String> {
    let instruction = instruction.trim();
    if instruction.is_empty() {
        return None;
    }
    let rest = answer.trim_start().strip_prefix(instruction)?.trim_start();
    (!rest.is_empty()).then(|| rest.to_owned())
}

/// Whether `answer` quotes at least one value of the tool `results` (a number, or a string of
/// two characters or more), or the results hold no such value.
pub(crate) fn quotes_results(answer: &str, results: &[String]) -> bool {
    fn values(value: &Value, out: &mut Vec<String>) {
        match value {
            Value::Number(n) => {
                out.push(n.to_string());
                if let Some(f) = n.as_f64() {
                    if f.fract() == 0.0 && f.abs() < 1e15 {
                        out.push(format!("{}", f as i64));
                    }
                }
            }
            Value::String(s) if s.chars().count() >= 2 => out.push(s.clone()),
            Value::Array(items) => items.iter().for_each(|v| values(v, out)),
            Value::Object(map) => map.values().for_each(|v| values(v, out)),
            _ => {}
        }
    }
    let mut wanted = Vec::new();
    for result in results {
        match serde_json::from_str::<Value>(result) {
            Ok(value) => values(&value, &mut wanted),
            Err(_) => values(&Value::String(result.trim().to_owned()), &mut wanted),
        }
    }
    wanted.is_empty() || wanted.iter().any(|w| answer.contains(w.as_str()))
}

/// The text of the user's last message.
fn last_user_text(req: &ModelRequest) -> Option<String> {
    req.messages
        .iter()
        .rev()
        .find(|m| m.role == Role::User)
        .map(Message::text)
}

/// The language a question is written in, told by its script (the answer follows it): the
/// scripts whose language is unambiguous, or `None` (the model's default, usually English).
pub(crate) fn language_of(text: &str) -> Option<&'static str> {
    let (mut han, mut kana, mut hangul, mut cyrillic, mut arabic, mut letters) = (0, 0, 0, 0, 0, 0);
    for c in text.chars() {
        match c {
            '\u{3040}'..='\u{30ff}' => kana += 1,
            '\u{ac00}'..='\u{d7af}' | '\u{1100}'..='\u{11ff}' => hangul += 1,
            '\u{4e00}'..='\u{9fff}' | '\u{3400}'..='\u{4dbf}' => han += 1,
            '\u{0400}'..='\u{04ff}' => cyrillic += 1,
            '\u{0600}'..='\u{06ff}' => arabic += 1,
            c if c.is_alphabetic() => letters += 1,
            _ => {}
        }
    }
    if kana > 0 {
        Some("Japanese")
    } else if hangul > 0 {
        Some("Korean")
    } else if han > 0 {
        Some("Chinese (中文)")
    } else if cyrillic > letters {
        Some("Russian")
    } else if arabic > letters {
        Some("Arabic")
    } else {
        None
    }
}

/// A call to `tool` with every argument, its value taken from the schema: each property's first
/// `examples` entry, its `default`, `const` or first `enum` value, else a value of its type.
/// Strings without a listed value become `<name>`, so no made-up value is there to copy.
pub(crate) fn example_call(tool: &ToolDefinition) -> ToolCall {
    let mut arguments = Map::new();
    if let Some(properties) = tool
        .input_schema
        .get("properties")
        .and_then(Value::as_object)
    {
        for (i, (name, property)) in properties.iter().enumerate() {
            arguments.insert(name.clone(), example_value(name, property, i));
        }
    }
    ToolCall::new(
        "example",
        tool.name.clone(),
        Value::Object(arguments).to_string(),
    )
}

fn example_value(name: &str, schema: &Value, index: usize) -> Value {
    if let Some(v) = schema.get("examples").and_then(|e| e.get(0)) {
        return v.clone();
    }
    for key in ["default", "const"] {
        if let Some(v) = schema.get(key) {
            return v.clone();
        }
    }
    if let Some(v) = schema.get("enum").and_then(|e| e.get(0)) {
        return v.clone();
    }
    let kind = match schema.get("type") {
        Some(Value::Array(kinds)) => kinds.iter().find(|k| *k != "null").cloned(),
        other => other.cloned(),
    };
    match kind.as_ref().and_then(Value::as_str) {
        Some("integer" | "number") => json!(index + 1),
        Some("boolean") => json!(true),
        Some("array") => json!([]),
        Some("object") => json!({}),
        _ => Value::String(format!("<{name}>")),
    }
}

/// A schema without `description` keywords below its top level.
fn without_descriptions(schema: &Value) -> Value {
    fn strip(value: &Value) -> Value {
        match value {
            Value::Object(map) => Value::Object(
                map.iter()
                    .filter(|(k, _)| k.as_str() != "description")
                    .map(|(k, v)| (k.clone(), strip(v)))
                    .collect(),
            ),
            Value::Array(items) => Value::Array(items.iter().map(strip).collect()),
            other => other.clone(),
        }
    }
    strip(schema)
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

fn chat_for(req: &ModelRequest, output: &Output, style: Style) -> Vec<ChatTurn> {
    let mut chat = vec![ChatTurn {
        role: "system",
        content: system_prompt(req, output, style),
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
                        style.format.show_call(call)
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
        if matches!(output, Output::Text) {
            // When the reply is to be plain text, a turn that only made tool calls is left out
            // (a small model would repeat it) and the results join the user's turn: the
            // question and the facts to answer it with, side by side.
            if turn.role == "assistant" && message.has_tool_calls() && message.text().is_empty() {
                continue;
            }
            if message.role == Role::Tool {
                if let Some(last) = chat.last_mut().filter(|t| t.role == "user") {
                    last.content.push_str("\n\n");
                    last.content.push_str(&turn.content);
                    continue;
                }
            }
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_echoed_instruction_is_dropped_from_the_answer() {
        let instruction = "你是一个全能助手。";
        assert_eq!(
            without_echoed_instruction("你是一个全能助手。\n\nThe answer is 56.00.", instruction)
                .as_deref(),
            Some("The answer is 56.00.")
        );
        assert_eq!(
            without_echoed_instruction("The answer is 56.", instruction),
            None
        );
        assert_eq!(
            without_echoed_instruction("你是一个全能助手。", instruction),
            None
        );
        assert_eq!(without_echoed_instruction("anything", "  "), None);
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
        let req = req.with_tools(vec![weather()]);
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
        .with_tools(vec![weather()]);
        let first = plan(&req, &config, JSON).unwrap();
        assert!(matches!(first.output, Output::Text));
        assert_eq!(first.chat.len(), 2, "{:?}", first.chat);
        assert_eq!(
            first.chat[1].content,
            "北京天气怎么样？\n\nTool get_weather returned: 22.5"
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
    fn tool_choice_narrows_the_contract() {
        let config = LlamaConfig::default();
        let req = ModelRequest::new(vec![Message::user("hi")]).with_tools(vec![weather()]);
        let forced = req.clone().with_tool_choice(ToolChoice::Required);
        let Output::Json(out) = plan(&forced, &config, JSON).unwrap().output else {
            panic!("expected JSON output");
        };
        assert!(!out.allow_answer);
        assert_eq!(out.schema["properties"]["name"]["const"], "get_weather");
        let unknown = req
            .clone()
            .with_tool_choice(ToolChoice::Tool("nope".into()));
        let err = plan(&unknown, &config, JSON).unwrap_err();
        assert!(err.message().contains("get_weather"), "{err}");
        let none = req.with_tool_choice(ToolChoice::None);
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
    fn the_seed_tools_schemas_become_one_exact_grammar() {
        // No fallback needed: every keyword of the tutorial's schemas has a grammar equivalent.
        let tools: Vec<ToolDefinition> = tinyagent::demo::seed_tools()
            .iter()
            .map(|t| ToolDefinition::from_tool(t.as_ref()))
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
    fn salvages_a_cut_off_answer() {
        assert_eq!(
            salvage_answer(r#"{"answer": "It is sunny \"to"#).as_deref(),
            Some("It is sunny \"to")
        );
        assert_eq!(salvage_answer(r#"{"name": "get_weather", "argu"#), None);
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
        .with_tools(vec![weather()]);
        let plan = plan(&req, &LlamaConfig::default(), JSON).unwrap();
        assert!(
            plan.chat[0].content.ends_with("Answer in Chinese (中文)."),
            "{:?}",
            plan.chat[0]
        );
    }

    #[test]
    fn example_calls_come_from_the_schema_and_invent_no_values() {
        let calculator = ToolDefinition::from_tool(tinyagent::demo::calculator_tool().as_ref());
        let call = example_call(&calculator);
        let args: Value = serde_json::from_str(&call.arguments).unwrap();
        assert_eq!(call.name, "calculator");
        assert_eq!(args["operation"], "add", "the first enum value: {args}");
        assert!(args["a"].is_number() && args["b"].is_number(), "{args}");
        let weather = ToolDefinition::from_tool(tinyagent::demo::weather_tool().as_ref());
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
        .with_tools(vec![weather()]);
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
        assert_eq!(Format::Tagged.no_call(), "<tool_call>[]");
    }
}
