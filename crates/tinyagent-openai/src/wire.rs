//! The Chat Completions wire format: request bodies out, responses and stream chunks in.
//!
//! Requests are built as JSON values (so `extra_body` can be merged and tests can compare
//! them), their messages from the [`types`](crate::types) the server crate reads; responses
//! are read into those types, where every field may be missing or `null`, since compatible
//! servers differ in what they send.

use serde_json::{Map, Value, json};
use tinyagent::tools::schema::strict_schema;
use tinyagent::{
    Message, ModelError, ModelRequest, ModelResponse, Part, Role, ToolCall, ToolResult, Usage,
    model::{FinishReason, ResponseFormat, ToolChoice, ToolDefinition},
    store::new_id,
};

use crate::config::{MaxTokensField, OpenAiConfig};
use crate::types::{ChatCompletion, ChatMessage, ChatToolCall, ChatUsage, ContentPart};
use tinyagent_http::snippet;

/// Builds the request body for `req`.
pub(crate) fn request_body(config: &OpenAiConfig, req: &ModelRequest, stream: bool) -> Value {
    let mut body = Map::new();
    body.insert("model".into(), Value::String(config.model.clone()));
    body.insert(
        "messages".into(),
        serde_json::to_value(messages(req)).expect("messages serialize"),
    );
    if !req.tools.is_empty() {
        let tools = req
            .tools
            .iter()
            .map(|t| tool(t, config.strict_tools))
            .collect();
        body.insert("tools".into(), Value::Array(tools));
        if let Some(parallel) = config.parallel_tool_calls {
            body.insert("parallel_tool_calls".into(), Value::Bool(parallel));
        }
    }
    if let Some(choice) = &req.tool_choice {
        // `tool_choice` without tools is rejected by OpenAI; "none" is what it means then.
        if !req.tools.is_empty() {
            body.insert("tool_choice".into(), tool_choice(choice));
        }
    }
    if let Some(format) = &req.response_format {
        body.insert("response_format".into(), response_format(format));
    }
    // Every sampling option under its own name (the provider takes them all).
    for (field, value) in tinyagent_http::sampling_fields(req, |o| Some(o.name())) {
        body.insert(field.into(), value);
    }
    if let Some(max) = req.max_tokens.or(config.max_tokens) {
        let field = match config.max_tokens_field {
            MaxTokensField::MaxTokens => "max_tokens",
            MaxTokensField::MaxCompletionTokens => "max_completion_tokens",
            MaxTokensField::Auto if config.is_openai() => "max_completion_tokens",
            MaxTokensField::Auto => "max_tokens",
        };
        body.insert(field.into(), Value::from(max));
    }
    if stream {
        body.insert("stream".into(), Value::Bool(true));
        if config.stream_usage {
            body.insert("stream_options".into(), json!({"include_usage": true}));
        }
    }
    for (k, v) in &config.http.extra_body {
        body.insert(k.clone(), v.clone());
    }
    Value::Object(body)
}

fn messages(req: &ModelRequest) -> Vec<ChatMessage> {
    let mut out = Vec::with_capacity(req.messages.len() + 1);
    if !req.instruction.is_empty() {
        out.push(ChatMessage::text("system", req.instruction.as_str()));
    }
    for m in &req.messages {
        match m.role {
            Role::System => out.push(ChatMessage::text("system", m.text())),
            Role::User => out.push(ChatMessage::text("user", m.text())),
            Role::Assistant => out.push(assistant_message(m)),
            Role::Tool => {
                // One message per result, each answering its call by id; a tool message holds
                // only text, so images the tools returned follow in one user message.
                let mut images = Vec::new();
                for r in m.tool_results() {
                    images.extend(tool_result_images(r));
                    out.push(ChatMessage::tool_result(&r.call_id, result_text(r)));
                }
                if !images.is_empty() {
                    out.push(ChatMessage::parts("user", images));
                }
                // Text in a tool message (unusual) goes as a user message, so it is not lost.
                let text = m.text();
                if !text.is_empty() {
                    out.push(ChatMessage::text("user", text));
                }
            }
        }
    }
    out
}

/// The image types the API takes in `image_url` parts.
const IMAGE_TYPES: [&str; 4] = ["image/png", "image/jpeg", "image/webp", "image/gif"];

/// The images of a tool result as user-message content parts: a text part naming the call,
/// then each image as an `image_url` data URL. Images of other types, audio and resources
/// stay described in the tool message's text.
fn tool_result_images(r: &ToolResult) -> Vec<ContentPart> {
    let images: Vec<ContentPart> = r
        .parts
        .iter()
        .filter_map(|p| match p {
            tinyagent::ContentPart::Image { data, mime_type }
                if IMAGE_TYPES.contains(&mime_type.as_str()) =>
            {
                Some(ContentPart::image(format!(
                    "data:{mime_type};base64,{data}"
                )))
            }
            _ => None,
        })
        .collect();
    if images.is_empty() {
        return images;
    }
    let mut content = vec![ContentPart::text(format!(
        "The images returned by the {} tool (call {}):",
        r.name, r.call_id
    ))];
    content.extend(images);
    content
}

fn assistant_message(m: &Message) -> ChatMessage {
    let calls = m
        .tool_calls()
        .map(|c| ChatToolCall::new(&c.id, &c.name, history_arguments(&c.arguments)))
        .collect();
    // `content` is always a string: some servers reject `null` or a missing content beside
    // tool calls.
    ChatMessage::text("assistant", m.text()).tool_calls(calls)
}

/// The arguments of a past call as they are sent back: the model's text when it is a JSON
/// object, `{}` when it is empty, and otherwise the text kept whole inside
/// `{"invalid_arguments": "…"}`: servers that parse the history (vLLM, llama.cpp's chat
/// templates) reject arguments that are not a JSON object, and the model still sees what it
/// wrote.
pub(crate) fn history_arguments(arguments: &str) -> String {
    let trimmed = arguments.trim();
    if trimmed.is_empty() {
        return "{}".to_owned();
    }
    match serde_json::from_str::<Value>(trimmed) {
        Ok(Value::Object(_)) => arguments.to_owned(),
        _ => json!({"invalid_arguments": arguments}).to_string(),
    }
}

/// Structured outputs: `{"type": "json_schema", "json_schema": {name, schema, strict}}`.
fn response_format(format: &ResponseFormat) -> Value {
    let (schema, strict) = answer_schema(format);
    json!({
        "type": "json_schema",
        "json_schema": {"name": format.name, "schema": schema, "strict": strict},
    })
}

/// An answer's schema as structured outputs take it, and whether it is strict: in the strict
/// dialect when it can be (an object at the root, no maps), as it is otherwise.
pub(crate) fn answer_schema(format: &ResponseFormat) -> (Value, bool) {
    let object_root = format.schema.get("type").and_then(Value::as_str) == Some("object");
    let strict = object_root && can_be_strict(&format.schema);
    if strict {
        (strict_schema(&format.schema), true)
    } else {
        (format.schema.clone(), false)
    }
}

/// A tool's parameters as sent, and whether they are strict: with `strict` asked and the
/// schema able to be (no maps), in the strict dialect; an input schema that is not an object
/// is sent as an empty object schema.
pub(crate) fn tool_parameters(def: &ToolDefinition, strict: bool) -> (Value, bool) {
    let schema = if def.input_schema.is_object() {
        def.input_schema.clone()
    } else {
        json!({"type": "object", "properties": {}})
    };
    if strict && can_be_strict(&schema) {
        (strict_schema(&schema), true)
    } else {
        (schema, false)
    }
}

/// A tool result's text as the model reads it: an error says so.
pub(crate) fn result_text(r: &ToolResult) -> String {
    if r.is_error && !r.content.starts_with("Error") {
        format!("Error: {}", r.content)
    } else {
        r.content.clone()
    }
}

fn tool(def: &ToolDefinition, strict: bool) -> Value {
    let mut function = Map::new();
    function.insert("name".into(), Value::String(def.name.clone()));
    if !def.description.is_empty() {
        function.insert("description".into(), Value::String(def.description.clone()));
    }
    let (parameters, is_strict) = tool_parameters(def, strict);
    function.insert("parameters".into(), parameters);
    // Sent only when asked for: few servers besides OpenAI know the field.
    if strict {
        function.insert("strict".into(), Value::Bool(is_strict));
    }
    json!({"type": "function", "function": function})
}

/// Whether a schema can be expressed in the strict dialect: no maps (objects whose
/// `additionalProperties` is a schema) anywhere in it.
pub(crate) fn can_be_strict(schema: &Value) -> bool {
    match schema {
        Value::Object(map) => {
            if map
                .get("additionalProperties")
                .is_some_and(|v| v.is_object())
            {
                return false;
            }
            map.values().all(can_be_strict)
        }
        Value::Array(items) => items.iter().all(can_be_strict),
        _ => true,
    }
}

fn tool_choice(choice: &ToolChoice) -> Value {
    match choice {
        ToolChoice::Auto => json!("auto"),
        ToolChoice::None => json!("none"),
        ToolChoice::Required => json!("required"),
        ToolChoice::Tool(name) => json!({"type": "function", "function": {"name": name}}),
        // A choice this provider does not know yet: let the model decide.
        _ => json!("auto"),
    }
}

// ---------------------------------------------------------------------------------------
// Responses

impl From<ChatUsage> for Usage {
    fn from(u: ChatUsage) -> Self {
        let mut usage = Usage::default();
        usage.input_tokens = u.prompt_tokens;
        usage.output_tokens = u.completion_tokens;
        usage.cached_input_tokens = u.prompt_tokens_details.and_then(|d| d.cached_tokens);
        usage.reasoning_tokens = u.completion_tokens_details.and_then(|d| d.reasoning_tokens);
        usage
    }
}

/// Maps a wire finish reason; `has_tool_calls` turns a missing or `stop` reason into
/// [`FinishReason::ToolCalls`] (servers such as Ollama say `stop` beside tool calls).
pub(crate) fn finish_reason(reason: Option<&str>, has_tool_calls: bool) -> FinishReason {
    match reason {
        Some("tool_calls" | "function_call") => FinishReason::ToolCalls,
        // A cut-off or filtered reply stays so even with tool calls: their arguments may be
        // incomplete.
        Some("length" | "max_tokens") => FinishReason::Length,
        Some("content_filter") => FinishReason::ContentFilter,
        _ if has_tool_calls => FinishReason::ToolCalls,
        None | Some("stop" | "" | "eos" | "end_turn") => FinishReason::Stop,
        Some(other) => FinishReason::Other(other.to_owned()),
    }
}

/// The name of a tool the server called, cleaned: whitespace and stray punctuation around
/// it removed (`get_weather.`, `"get_weather"`), a `functions.` prefix dropped, and matched
/// against the offered tools (exactly, then without case) when possible.
pub(crate) fn sanitize_tool_name(raw: &str, offered: &[ToolDefinition]) -> String {
    if offered.iter().any(|t| t.name == raw) {
        return raw.to_owned();
    }
    let is_name_char = |c: char| c.is_alphanumeric() || c == '_' || c == '-';
    let mut name = raw.trim_matches(|c: char| !is_name_char(c));
    for prefix in ["functions.", "function.", "tools."] {
        if let Some(rest) = raw.trim().strip_prefix(prefix) {
            name = rest.trim_matches(|c: char| !is_name_char(c));
        }
    }
    if let Some(t) = offered.iter().find(|t| t.name == name) {
        return t.name.clone();
    }
    if let Some(t) = offered.iter().find(|t| t.name.eq_ignore_ascii_case(name)) {
        return t.name.clone();
    }
    if name.is_empty() {
        raw.to_owned()
    } else {
        name.to_owned()
    }
}

/// Turns a non-streaming response body into a [`ModelResponse`].
pub(crate) fn parse_response(
    body: &[u8],
    offered: &[ToolDefinition],
) -> Result<ModelResponse, ModelError> {
    let value = tinyagent_http::parse_json(body, "the response")?;
    if let Some(err) = value.get("error").filter(|e| !e.is_null()) {
        return Err(crate::error::error_in_body(err));
    }
    let resp: ChatCompletion = tinyagent_http::parse_shape(value, "the response", body)?;
    let choice = resp.choices.into_iter().next().ok_or_else(|| {
        ModelError::invalid_response(format!("the response has no choices: {}", snippet(body)))
    })?;
    let msg = choice.message;
    let mut parts = Vec::new();
    let text = msg.text();
    if !text.is_empty() {
        parts.push(Part::text(text));
    }
    let mut calls: Vec<ToolCall> = msg
        .tool_calls
        .unwrap_or_default()
        .into_iter()
        .filter_map(|c| {
            let f = c.function?;
            let arguments = f.arguments_text();
            let name = f.name.filter(|n| !n.trim().is_empty())?;
            Some(ToolCall::new(
                c.id.filter(|id| !id.is_empty())
                    .unwrap_or_else(|| new_id("call")),
                sanitize_tool_name(&name, offered),
                arguments,
            ))
        })
        .collect();
    if calls.is_empty() {
        // The legacy field, from servers that still send it instead of `tool_calls`.
        if let Some(f) = msg.function_call {
            let arguments = f.arguments_text();
            if let Some(name) = f.name.filter(|n| !n.trim().is_empty()) {
                calls.push(ToolCall::new(
                    new_id("call"),
                    sanitize_tool_name(&name, offered),
                    arguments,
                ));
            }
        }
    }
    let has_calls = !calls.is_empty();
    parts.extend(calls.into_iter().map(Part::ToolCall));
    let mut response = ModelResponse::new(
        Message::new(Role::Assistant, parts),
        resp.usage.map(Usage::from).unwrap_or_default(),
        finish_reason(choice.finish_reason.as_deref(), has_calls),
    );
    response.id = resp.id;
    response.model = resp.model;
    Ok(response)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn defs(names: &[&str]) -> Vec<ToolDefinition> {
        names
            .iter()
            .map(|n| ToolDefinition::new(*n, "", json!({"type": "object"})))
            .collect()
    }

    #[test]
    fn tool_names_are_cleaned() {
        let offered = defs(&["get_weather", "calculator"]);
        for raw in [
            "get_weather",
            "get_weather.",
            " get_weather ",
            "\"get_weather\"",
            "functions.get_weather",
            "Get_Weather",
        ] {
            assert_eq!(sanitize_tool_name(raw, &offered), "get_weather", "{raw}");
        }
        assert_eq!(sanitize_tool_name("other!", &offered), "other");
        assert_eq!(sanitize_tool_name("...", &offered), "...");
    }

    #[test]
    fn finish_reasons() {
        assert_eq!(finish_reason(Some("stop"), false), FinishReason::Stop);
        assert_eq!(finish_reason(Some("stop"), true), FinishReason::ToolCalls);
        assert_eq!(finish_reason(Some("length"), false), FinishReason::Length);
        assert_eq!(finish_reason(Some("length"), true), FinishReason::Length);
        assert_eq!(
            finish_reason(Some("content_filter"), true),
            FinishReason::ContentFilter
        );
        assert_eq!(finish_reason(Some("weird"), true), FinishReason::ToolCalls);
        assert_eq!(
            finish_reason(Some("function_call"), false),
            FinishReason::ToolCalls
        );
        assert_eq!(
            finish_reason(Some("content_filter"), false),
            FinishReason::ContentFilter
        );
        assert_eq!(
            finish_reason(Some("weird"), false),
            FinishReason::Other("weird".into())
        );
    }

    #[test]
    fn strictness() {
        assert!(can_be_strict(
            &json!({"type": "object", "properties": {"a": {"type": "string"}}})
        ));
        assert!(!can_be_strict(&json!({"type": "object", "properties": {
            "m": {"type": "object", "additionalProperties": {"type": "string"}}
        }})));
    }

    #[test]
    fn history_arguments_are_always_a_json_object() {
        assert_eq!(
            history_arguments(r#"{"city":"北京"}"#),
            r#"{"city":"北京"}"#
        );
        assert_eq!(history_arguments("  "), "{}");
        assert_eq!(
            history_arguments(r#"{"city":"北"#),
            r#"{"invalid_arguments":"{\"city\":\"北"}"#
        );
        assert_eq!(history_arguments("[1]"), r#"{"invalid_arguments":"[1]"}"#);
    }
}
