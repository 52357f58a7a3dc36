//! The Messages API wire format: request bodies out, messages and their parts in.
//!
//! Requests are built as JSON values (so `extra_body` can be merged and tests can compare
//! them); responses are read leniently, every field optional, unknown block types skipped.

use std::borrow::Cow;
use std::collections::HashSet;
use std::sync::{Mutex, OnceLock};

use serde::Deserialize;
use serde_json::{Map, Value, json};
use tinyagent::model::SamplingOption;
use tinyagent::tools::schema::anthropic_schema;
use tinyagent::{
    ContentPart, Message, ModelError, ModelRequest, ModelResponse, Part, Role, ToolCall,
    ToolResult, Usage,
    model::{FinishReason, ToolChoice, ToolDefinition},
    store::new_id,
};
use tinyagent_http::{snippet, system_and_turns};

use crate::config::AnthropicConfig;

/// `{"type": "ephemeral"}`: a prompt-caching breakpoint.
fn ephemeral() -> Value {
    json!({"type": "ephemeral"})
}

/// Builds the request body for `req`.
pub(crate) fn request_body(config: &AnthropicConfig, req: &ModelRequest, stream: bool) -> Value {
    let mut body = Map::new();
    body.insert("model".into(), Value::String(config.model.clone()));
    let (system, messages) = messages(req);
    let mut max_tokens = req
        .max_tokens
        .or(config.max_tokens)
        .unwrap_or(crate::DEFAULT_MAX_TOKENS);
    if let Some(budget) = config.thinking_tokens {
        // The API wants the token limit above the thinking budget.
        if max_tokens <= budget {
            max_tokens = budget.saturating_add(max_tokens);
        }
    }
    body.insert("max_tokens".into(), Value::from(max_tokens));
    body.insert("messages".into(), Value::Array(messages));
    if !system.is_empty() {
        let system = if config.cache_instruction {
            json!([{"type": "text", "text": system, "cache_control": ephemeral()}])
        } else {
            Value::String(system)
        };
        body.insert("system".into(), system);
    }
    if !req.tools.is_empty() {
        let mut tools: Vec<Value> = req.tools.iter().map(tool).collect();
        if config.cache_tools {
            if let Some(last) = tools.last_mut() {
                last["cache_control"] = ephemeral();
            }
        }
        body.insert("tools".into(), Value::Array(tools));
        let choice = req.tool_choice.as_ref().unwrap_or(&ToolChoice::Auto);
        let mut choice = tool_choice(choice);
        if config.disable_parallel_tool_use && choice["type"] != "none" {
            choice["disable_parallel_tool_use"] = Value::Bool(true);
        }
        if req.tool_choice.is_some() || config.disable_parallel_tool_use {
            body.insert("tool_choice".into(), choice);
        }
    }
    if let Some(budget) = config.thinking_tokens {
        body.insert(
            "thinking".into(),
            json!({"type": "enabled", "budget_tokens": budget}),
        );
    }
    if let Some(t) = req.sampling.temperature {
        // The API takes 0 to 1.
        if let Some(t) = tinyagent_http::decimal(t.clamp(0.0, 1.0)) {
            body.insert("temperature".into(), t);
        }
    }
    for (field, value) in tinyagent_http::sampling_fields(req, |o| match o {
        SamplingOption::TopP => Some("top_p"),
        SamplingOption::Stop => Some("stop_sequences"),
        _ => None,
    }) {
        body.insert(field.into(), value);
    }
    if stream {
        body.insert("stream".into(), Value::Bool(true));
    }
    for (k, v) in &config.http.extra_body {
        body.insert(k.clone(), v.clone());
    }
    Value::Object(body)
}

/// The system prompt (the instruction, then any system messages of the history) and the
/// messages: user and assistant turns alternating, consecutive turns of one role merged,
/// tool results as `tool_result` blocks in a user turn.
fn messages(req: &ModelRequest) -> (String, Vec<Value>) {
    let (system, turns) = system_and_turns(req, |m| match m.role {
        Role::Assistant => ("assistant", assistant_blocks(m)),
        Role::Tool => {
            // Results first: the API wants them at the start of the user turn.
            let mut blocks: Vec<Value> = m
                .tool_results()
                .map(|r| {
                    let mut block = json!({
                        "type": "tool_result",
                        "tool_use_id": wire_id(&r.call_id),
                        "content": tool_result_content(r),
                    });
                    if r.is_error {
                        block["is_error"] = Value::Bool(true);
                    }
                    block
                })
                .collect();
            blocks.extend(text_blocks(m));
            ("user", blocks)
        }
        _ => ("user", text_blocks(m)),
    });
    let messages = turns
        .into_iter()
        .map(|(role, content)| json!({"role": role, "content": content}))
        .collect();
    (system, messages)
}

/// The image types the API takes in `image` blocks.
const IMAGE_TYPES: [&str; 4] = ["image/jpeg", "image/png", "image/gif", "image/webp"];

/// A tool result's `content`: its text, or, when it holds images the API takes, a list of
/// blocks in the result's order: the images as base64 `image` blocks, everything else as text
/// (audio and resources described, as in the text the model reads otherwise).
fn tool_result_content(r: &ToolResult) -> Value {
    let is_image = |p: &ContentPart| matches!(p, ContentPart::Image { mime_type, .. } if IMAGE_TYPES.contains(&mime_type.as_str()));
    if !r.parts.iter().any(is_image) {
        return Value::String(r.content.clone());
    }
    let blocks = r
        .parts
        .iter()
        .filter_map(|p| match p {
            ContentPart::Image { data, mime_type } if is_image(p) => Some(json!({
                "type": "image",
                "source": {"type": "base64", "media_type": mime_type, "data": data},
            })),
            ContentPart::Text { text } if text.is_empty() => None,
            other => Some(json!({"type": "text", "text": other.describe()})),
        })
        .collect();
    Value::Array(blocks)
}

/// The text parts of a message as text blocks (empty ones left out: the API rejects them).
fn text_blocks(m: &Message) -> Vec<Value> {
    m.parts
        .iter()
        .filter_map(Part::as_text)
        .filter(|t| !t.is_empty())
        .map(|t| json!({"type": "text", "text": t}))
        .collect()
}

/// An assistant turn: its thinking blocks (signed ones only: the API checks the signature,
/// and reasoning from other providers has none), text and `tool_use` blocks, in order.
fn assistant_blocks(m: &Message) -> Vec<Value> {
    let mut blocks = Vec::with_capacity(m.parts.len());
    for part in &m.parts {
        match part {
            Part::Reasoning {
                text,
                redacted: true,
                ..
            } => blocks.push(json!({"type": "redacted_thinking", "data": text})),
            Part::Reasoning {
                text,
                signature: Some(signature),
                ..
            } => blocks.push(json!({"type": "thinking", "thinking": text, "signature": signature})),
            Part::Text { text } if !text.is_empty() => {
                blocks.push(json!({"type": "text", "text": text}));
            }
            Part::ToolCall(call) => blocks.push(json!({
                "type": "tool_use",
                "id": wire_id(&call.id),
                "name": wire_name(&call.name),
                "input": history_input(&call.arguments),
            })),
            _ => {}
        }
    }
    blocks
}

/// The `input` of a past call: the model's arguments when they are a JSON object, `{}` when
/// empty, and otherwise the text kept whole in `{"invalid_arguments": "…"}` (the API wants
/// an object, and the model still sees what it wrote).
pub(crate) fn history_input(arguments: &str) -> Value {
    if arguments.trim().is_empty() {
        return json!({});
    }
    match serde_json::from_str::<Value>(arguments) {
        Ok(v @ Value::Object(_)) => v,
        _ => json!({"invalid_arguments": arguments}),
    }
}

/// An id as the API accepts it (`^[a-zA-Z0-9_-]+$`): other characters become `_`. Ids made
/// by other providers or by hand keep working, and a call and its result map alike.
pub(crate) fn wire_id(id: &str) -> Cow<'_, str> {
    if !id.is_empty()
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
    {
        return Cow::Borrowed(id);
    }
    if id.is_empty() {
        return Cow::Borrowed("toolu_missing");
    }
    Cow::Owned(
        id.chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '-' {
                    c
                } else {
                    '_'
                }
            })
            .collect(),
    )
}

/// A tool name as the API accepts it (`^[a-zA-Z0-9_-]{1,128}$`): other characters become
/// `_`, cut to 128 characters. [`tool_name`] maps it back.
pub(crate) fn wire_name(name: &str) -> Cow<'_, str> {
    let ok = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '-';
    if !name.is_empty() && name.len() <= 128 && name.chars().all(ok) {
        return Cow::Borrowed(name);
    }
    let mapped: String = name
        .chars()
        .map(|c| if ok(c) { c } else { '_' })
        .take(128)
        .collect();
    Cow::Owned(if mapped.is_empty() {
        "_".into()
    } else {
        mapped
    })
}

/// The offered tool a name from the API stands for (its name as sent may have been mapped by
/// [`wire_name`]); the name itself when none matches.
pub(crate) fn tool_name(wire: &str, offered: &[ToolDefinition]) -> String {
    offered
        .iter()
        .find(|t| t.name == wire)
        .or_else(|| offered.iter().find(|t| wire_name(&t.name) == wire))
        .map_or_else(|| wire.to_owned(), |t| t.name.clone())
}

fn tool(def: &ToolDefinition) -> Value {
    let mut tool = json!({
        "name": wire_name(&def.name),
        "input_schema": input_schema(&def.name, &def.input_schema),
    });
    if !def.description.is_empty() {
        tool["description"] = Value::String(def.description.clone());
    }
    tool
}

/// The schema as `input_schema` wants it ([`anthropic_schema`]); what it had to change is
/// logged at WARN, once per tool and change.
fn input_schema(name: &str, schema: &Value) -> Value {
    static WARNED: OnceLock<Mutex<HashSet<String>>> = OnceLock::new();
    let out = anthropic_schema(schema);
    if !out.dropped.is_empty() {
        let key = format!("{name}\n{}", out.dropped.join("\n"));
        let mut warned = WARNED
            .get_or_init(Default::default)
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if warned.insert(key) {
            out.warn("anthropic", name);
        }
    }
    out.schema
}

fn tool_choice(choice: &ToolChoice) -> Value {
    match choice {
        ToolChoice::None => json!({"type": "none"}),
        ToolChoice::Required => json!({"type": "any"}),
        ToolChoice::Tool(name) => json!({"type": "tool", "name": wire_name(name)}),
        _ => json!({"type": "auto"}),
    }
}

// ---------------------------------------------------------------------------------------
// Responses

/// A message (a whole response, or `message_start`'s message).
#[derive(Debug, Default, Deserialize)]
pub(crate) struct WireMessage {
    #[serde(default)]
    pub content: Option<Vec<Value>>,
    #[serde(default)]
    pub stop_reason: Option<String>,
    #[serde(default)]
    pub usage: Option<WireUsage>,
}

/// `usage`, in a message or a `message_delta` (where every count is cumulative).
#[derive(Debug, Default, Deserialize, Clone, Copy)]
pub(crate) struct WireUsage {
    #[serde(default)]
    pub input_tokens: Option<u64>,
    #[serde(default)]
    pub output_tokens: Option<u64>,
    #[serde(default)]
    pub cache_creation_input_tokens: Option<u64>,
    #[serde(default)]
    pub cache_read_input_tokens: Option<u64>,
}

impl WireUsage {
    /// This usage updated with the counts a later report has.
    pub(crate) fn merge(self, later: WireUsage) -> WireUsage {
        WireUsage {
            input_tokens: later.input_tokens.or(self.input_tokens),
            output_tokens: later.output_tokens.or(self.output_tokens),
            cache_creation_input_tokens: later
                .cache_creation_input_tokens
                .or(self.cache_creation_input_tokens),
            cache_read_input_tokens: later
                .cache_read_input_tokens
                .or(self.cache_read_input_tokens),
        }
    }
}

impl From<WireUsage> for Usage {
    /// The API's `input_tokens` leaves out the cached tokens; tinyagent's counts them.
    fn from(u: WireUsage) -> Self {
        let mut usage = Usage::default();
        let cached = [u.cache_read_input_tokens, u.cache_creation_input_tokens];
        usage.input_tokens = match (u.input_tokens, cached) {
            (None, [None, None]) => None,
            (input, [read, write]) => Some(
                input
                    .unwrap_or(0)
                    .saturating_add(read.unwrap_or(0))
                    .saturating_add(write.unwrap_or(0)),
            ),
        };
        usage.output_tokens = u.output_tokens;
        usage.cached_input_tokens = u.cache_read_input_tokens;
        usage.cache_write_input_tokens = u.cache_creation_input_tokens;
        usage
    }
}

/// Maps a stop reason; a reply with tool calls that stopped for no other reason stopped for
/// them.
pub(crate) fn finish_reason(reason: Option<&str>, has_tool_calls: bool) -> FinishReason {
    match reason {
        Some("tool_use") => FinishReason::ToolCalls,
        // Cut by the token limit, even with tool calls: their input may be incomplete.
        Some("max_tokens" | "model_context_window_exceeded") => FinishReason::Length,
        Some("refusal") => FinishReason::ContentFilter,
        _ if has_tool_calls => FinishReason::ToolCalls,
        None | Some("end_turn" | "stop_sequence" | "") => FinishReason::Stop,
        Some(other) => FinishReason::Other(other.to_owned()),
    }
}

fn text_of(block: &Value, field: &str) -> String {
    block
        .get(field)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned()
}

/// The part a complete content block stands for; `None` for blocks tinyagent has no part
/// for (server tools' blocks, citations-only blocks).
pub(crate) fn block_part(block: &Value, offered: &[ToolDefinition]) -> Option<Part> {
    match block.get("type").and_then(Value::as_str)? {
        "text" => {
            let text = text_of(block, "text");
            (!text.is_empty()).then(|| Part::text(text))
        }
        "thinking" => Some(Part::reasoning(
            text_of(block, "thinking"),
            block
                .get("signature")
                .and_then(Value::as_str)
                .map(str::to_owned),
        )),
        "redacted_thinking" => Some(Part::Reasoning {
            text: text_of(block, "data"),
            signature: None,
            redacted: true,
        }),
        "tool_use" => {
            let name = block.get("name").and_then(Value::as_str)?;
            let id = block
                .get("id")
                .and_then(Value::as_str)
                .filter(|id| !id.is_empty())
                .map_or_else(|| new_id("toolu"), str::to_owned);
            let arguments = match block.get("input") {
                None | Some(Value::Null) => "{}".to_owned(),
                Some(input) => input.to_string(),
            };
            Some(Part::ToolCall(ToolCall::new(
                id,
                tool_name(name, offered),
                arguments,
            )))
        }
        _ => None,
    }
}

/// Turns a non-streaming response body into a [`ModelResponse`].
pub(crate) fn parse_response(
    body: &[u8],
    offered: &[ToolDefinition],
) -> Result<ModelResponse, ModelError> {
    let value = tinyagent_http::parse_json(body, "the response")?;
    if value.get("type").and_then(Value::as_str) == Some("error") || value.get("error").is_some() {
        return Err(crate::error::error_event(&value));
    }
    let id = tinyagent_http::field_text(value.get("id"));
    let model = tinyagent_http::field_text(value.get("model"));
    let msg: WireMessage = tinyagent_http::parse_shape(value, "the response", body)?;
    let Some(content) = msg.content else {
        return Err(ModelError::invalid_response(format!(
            "the response has no content: {}",
            snippet(body)
        )));
    };
    let parts: Vec<Part> = content
        .iter()
        .filter_map(|b| block_part(b, offered))
        .collect();
    let has_calls = parts.iter().any(|p| matches!(p, Part::ToolCall(_)));
    let mut response = ModelResponse::new(
        Message::new(Role::Assistant, parts),
        msg.usage.map(Usage::from).unwrap_or_default(),
        finish_reason(msg.stop_reason.as_deref(), has_calls),
    );
    response.id = id;
    response.model = model;
    Ok(response)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_ids_are_mapped_to_what_the_api_accepts_and_back() {
        let offered = vec![ToolDefinition::new(
            "fs.read",
            "",
            json!({"type": "object"}),
        )];
        assert_eq!(wire_name("fs.read"), "fs_read");
        assert_eq!(wire_name("get_weather"), "get_weather");
        assert_eq!(tool_name("fs_read", &offered), "fs.read");
        assert_eq!(tool_name("other", &offered), "other");
        assert_eq!(wire_id("call:1"), "call_1");
        assert_eq!(wire_id("toolu_01A"), "toolu_01A");
        assert_eq!(wire_id(""), "toolu_missing");
        assert_eq!(wire_name(&"x".repeat(200)).len(), 128);
    }

    #[test]
    fn stop_reasons() {
        assert_eq!(finish_reason(Some("end_turn"), false), FinishReason::Stop);
        assert_eq!(
            finish_reason(Some("tool_use"), true),
            FinishReason::ToolCalls
        );
        assert_eq!(
            finish_reason(Some("max_tokens"), true),
            FinishReason::Length
        );
        assert_eq!(
            finish_reason(Some("refusal"), false),
            FinishReason::ContentFilter
        );
        assert_eq!(
            finish_reason(Some("pause_turn"), false),
            FinishReason::Other("pause_turn".into())
        );
    }

    #[test]
    fn usage_counts_cached_input() {
        let u: Usage = WireUsage {
            input_tokens: Some(10),
            output_tokens: Some(5),
            cache_creation_input_tokens: Some(100),
            cache_read_input_tokens: Some(1000),
        }
        .into();
        assert_eq!(u.input_tokens, Some(1110));
        assert_eq!(u.cached_input_tokens, Some(1000));
        assert_eq!(u.cache_write_input_tokens, Some(100));
        assert_eq!(u.output_tokens, Some(5));
        assert!(Usage::from(WireUsage::default()).is_unreported());
    }

    #[test]
    fn history_input_is_always_an_object() {
        assert_eq!(history_input(r#"{"city":"北京"}"#), json!({"city": "北京"}));
        assert_eq!(history_input(" "), json!({}));
        assert_eq!(
            history_input(r#"{"city":"北"#),
            json!({"invalid_arguments": r#"{"city":"北"#})
        );
    }
}
