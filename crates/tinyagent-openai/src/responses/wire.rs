//! The Responses wire format: request bodies (`input` items) out, response objects in.

use serde_json::{Map, Value, json};
use tinyagent::model::{FinishReason, ModelErrorKind, ResponseFormat, ToolChoice, ToolDefinition};
use tinyagent::{
    ContentPart, Message, ModelError, ModelRequest, ModelResponse, Part, Role, ToolCall, Usage,
    store::new_id,
};
use tinyagent_http::snippet;

use super::config::ResponsesConfig;
use crate::types::{OutputItem, ResponseObject};
use crate::wire::{
    answer_schema, history_arguments, result_text, sanitize_tool_name, tool_parameters,
};

/// The prefix of a [`Part::Reasoning`] signature that holds a Responses reasoning item: the
/// item's id, a newline, and its encrypted content (empty when the API gave none).
const REASONING_PREFIX: &str = "openai-responses:";

/// Builds the request body for `req`.
pub(crate) fn request_body(config: &ResponsesConfig, req: &ModelRequest, stream: bool) -> Value {
    let mut body = Map::new();
    body.insert("model".into(), Value::String(config.model.clone()));
    if !req.instruction.is_empty() {
        body.insert(
            "instructions".into(),
            Value::String(req.instruction.clone()),
        );
    }
    body.insert("input".into(), Value::Array(input(req, config.store)));
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
        if let Some(choice) = &req.tool_choice {
            body.insert("tool_choice".into(), tool_choice(choice));
        }
    }
    if let Some(format) = &req.response_format {
        body.insert("text".into(), json!({"format": text_format(format)}));
    }
    for (field, value) in tinyagent_http::sampling_fields(req, |o| Some(o.name())) {
        body.insert(field.into(), value);
    }
    if let Some(max) = req.max_tokens.or(config.max_tokens) {
        // The API's floor.
        body.insert("max_output_tokens".into(), Value::from(max.max(16)));
    }
    if let Some(effort) = &config.reasoning {
        body.insert("reasoning".into(), json!({"effort": effort}));
        if !config.store {
            body.insert("include".into(), json!(["reasoning.encrypted_content"]));
        }
    }
    body.insert("store".into(), Value::Bool(config.store));
    if stream {
        body.insert("stream".into(), Value::Bool(true));
    }
    for (k, v) in &config.http.extra_body {
        body.insert(k.clone(), v.clone());
    }
    Value::Object(body)
}

/// The history as `input` items: messages, and the calls and results as their own items.
fn input(req: &ModelRequest, stored: bool) -> Vec<Value> {
    let mut out = Vec::with_capacity(req.messages.len());
    for m in &req.messages {
        match m.role {
            Role::System => out.push(json!({"role": "system", "content": m.text()})),
            Role::User => out.push(json!({"role": "user", "content": m.text()})),
            Role::Assistant => assistant_items(m, stored, &mut out),
            Role::Tool => {
                let mut images = Vec::new();
                for r in m.tool_results() {
                    out.push(json!({
                        "type": "function_call_output", "call_id": r.call_id,
                        "output": result_text(r),
                    }));
                    let mut these: Vec<Value> = r
                        .parts
                        .iter()
                        .filter_map(|p| match p {
                            ContentPart::Image { data, mime_type } => Some(json!({
                                "type": "input_image", "detail": "auto",
                                "image_url": format!("data:{mime_type};base64,{data}"),
                            })),
                            _ => None,
                        })
                        .collect();
                    if !these.is_empty() {
                        these.insert(
                            0,
                            json!({"type": "input_text", "text": format!(
                                "The images returned by the {} tool (call {}):", r.name, r.call_id
                            )}),
                        );
                        images.extend(these);
                    }
                }
                if !images.is_empty() {
                    out.push(json!({"role": "user", "content": images}));
                }
                let text = m.text();
                if !text.is_empty() {
                    out.push(json!({"role": "user", "content": text}));
                }
            }
        }
    }
    out
}

/// An assistant message's parts in order: reasoning items this API gave (sent back as they
/// came, when the API can read them: with their encrypted content, or stored), text as an
/// assistant message, calls as `function_call` items.
fn assistant_items(m: &Message, stored: bool, out: &mut Vec<Value>) {
    let mut text = String::new();
    let flush = |text: &mut String, out: &mut Vec<Value>| {
        if !text.is_empty() {
            out.push(json!({"role": "assistant", "content": std::mem::take(text)}));
        }
    };
    for part in &m.parts {
        match part {
            Part::Text { text: t } => text.push_str(t),
            Part::ToolCall(c) => {
                flush(&mut text, out);
                out.push(json!({
                    "type": "function_call", "call_id": c.id, "name": c.name,
                    "arguments": history_arguments(&c.arguments),
                }));
            }
            Part::Reasoning {
                text: summary,
                signature: Some(signature),
                ..
            } => {
                let Some((id, encrypted)) = signature
                    .strip_prefix(REASONING_PREFIX)
                    .and_then(|s| s.split_once('\n'))
                else {
                    continue;
                };
                if encrypted.is_empty() && !stored {
                    continue;
                }
                flush(&mut text, out);
                let summary: Vec<Value> = if summary.is_empty() {
                    Vec::new()
                } else {
                    vec![json!({"type": "summary_text", "text": summary})]
                };
                let mut item = json!({"type": "reasoning", "id": id, "summary": summary});
                if !encrypted.is_empty() {
                    item["encrypted_content"] = json!(encrypted);
                }
                out.push(item);
            }
            _ => {}
        }
    }
    flush(&mut text, out);
}

/// A function tool: flat (`name`, `parameters` beside `type`), strict when asked and possible.
fn tool(def: &ToolDefinition, strict: bool) -> Value {
    let (parameters, strict) = tool_parameters(def, strict);
    let mut tool = json!({
        "type": "function", "name": def.name, "parameters": parameters, "strict": strict,
    });
    if !def.description.is_empty() {
        tool["description"] = json!(def.description);
    }
    tool
}

fn tool_choice(choice: &ToolChoice) -> Value {
    match choice {
        ToolChoice::None => json!("none"),
        ToolChoice::Required => json!("required"),
        ToolChoice::Tool(name) => json!({"type": "function", "name": name}),
        _ => json!("auto"),
    }
}

/// Structured outputs: `{"type": "json_schema", name, schema, strict}`, flat.
fn text_format(format: &ResponseFormat) -> Value {
    let (schema, strict) = answer_schema(format);
    json!({"type": "json_schema", "name": format.name, "schema": schema, "strict": strict})
}

/// One output item as the message's parts: text, a call, or reasoning.
pub(crate) fn item_parts(item: OutputItem, offered: &[ToolDefinition], parts: &mut Vec<Part>) {
    match item {
        OutputItem::Message(message) => {
            let text = message.text();
            if !text.is_empty() {
                parts.push(Part::text(text));
            }
        }
        OutputItem::FunctionCall(call) => {
            let arguments = call.arguments_text();
            let Some(name) = call.name.filter(|n| !n.trim().is_empty()) else {
                return;
            };
            let id = call
                .call_id
                .filter(|id| !id.is_empty())
                .unwrap_or_else(|| new_id("call"));
            parts.push(Part::ToolCall(ToolCall::new(
                id,
                sanitize_tool_name(&name, offered),
                arguments,
            )));
        }
        OutputItem::Reasoning(reasoning) => {
            let summary = reasoning.summary_text();
            let id = reasoning.id.unwrap_or_default();
            let encrypted = reasoning.encrypted_content.unwrap_or_default();
            let signature =
                (!id.is_empty()).then(|| format!("{REASONING_PREFIX}{id}\n{encrypted}"));
            parts.push(Part::reasoning(summary, signature));
        }
        // Built-in tools' items (web search and the like) are not asked for.
        _ => {}
    }
}

/// The usage of a response object.
pub(crate) fn usage(response: &ResponseObject) -> Usage {
    let mut usage = Usage::default();
    let Some(u) = response.usage else {
        return usage;
    };
    usage.input_tokens = u.input_tokens;
    usage.output_tokens = u.output_tokens;
    usage.cached_input_tokens = u.input_tokens_details.and_then(|d| d.cached_tokens);
    usage.reasoning_tokens = u.output_tokens_details.and_then(|d| d.reasoning_tokens);
    usage
}

/// Why a response ended: its status and incomplete reason, and whether it holds calls.
pub(crate) fn finish_reason(response: &ResponseObject, has_calls: bool) -> FinishReason {
    let reason = response
        .incomplete_details
        .as_ref()
        .and_then(|d| d.reason.as_deref());
    match (response.status.as_deref(), reason) {
        // A cut-off reply stays cut off even with calls: their arguments may be incomplete.
        (Some("incomplete"), Some("max_output_tokens")) => FinishReason::Length,
        (Some("incomplete"), Some("content_filter")) => FinishReason::ContentFilter,
        (Some("incomplete"), Some(other)) => FinishReason::Other(other.to_owned()),
        (Some("incomplete"), None) => FinishReason::Length,
        _ if has_calls => FinishReason::ToolCalls,
        _ => FinishReason::Stop,
    }
}

/// The error of a response whose status is `failed` (or that carries an `error`).
pub(crate) fn response_error(response: &ResponseObject) -> Option<ModelError> {
    let failed = response.status.as_deref() == Some("failed");
    match response.error.as_ref().filter(|e| !e.is_null()) {
        Some(err) => Some(crate::error::error_in_body(err)),
        None if failed => Some(ModelError::new(
            ModelErrorKind::Unavailable,
            "the response failed without saying why (status \"failed\")",
        )),
        None => None,
    }
}

/// A response object as a [`ModelResponse`]; `items` (the items a stream delivered one by
/// one, with the call ids its start events gave) replace its `output` when there are any.
pub(crate) fn response(
    mut value: ResponseObject,
    items: Vec<OutputItem>,
    offered: &[ToolDefinition],
) -> Result<ModelResponse, ModelError> {
    if let Some(err) = response_error(&value) {
        return Err(err);
    }
    let output = match value.output.take() {
        _ if !items.is_empty() => items,
        Some(output) => output,
        None => {
            return Err(ModelError::invalid_response(format!(
                "the response has no output: {}",
                snippet(serde_json::to_string(&value).unwrap_or_default().as_bytes())
            )));
        }
    };
    let mut parts = Vec::new();
    for item in output {
        item_parts(item, offered, &mut parts);
    }
    let has_calls = parts.iter().any(|p| matches!(p, Part::ToolCall(_)));
    let mut response = ModelResponse::new(
        Message::new(Role::Assistant, parts),
        usage(&value),
        finish_reason(&value, has_calls),
    );
    response.id = value.id;
    response.model = value.model;
    Ok(response)
}

/// Turns a non-streaming response body into a [`ModelResponse`].
pub(crate) fn parse_response(
    body: &[u8],
    offered: &[ToolDefinition],
) -> Result<ModelResponse, ModelError> {
    let value = tinyagent_http::parse_json(body, "the response")?;
    let value = tinyagent_http::parse_shape(value, "the response", body)?;
    response(value, Vec::new(), offered)
}
