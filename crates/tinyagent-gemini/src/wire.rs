//! The Gemini API's wire format: `GenerateContentRequest` bodies out,
//! `GenerateContentResponse`s (whole, or one per streamed event) in.

use std::collections::HashSet;
use std::sync::{Mutex, OnceLock};

use serde_json::{Map, Value, json};
use tinyagent::model::SamplingOption;
use tinyagent::tools::schema::gemini_schema;
use tinyagent::{
    ContentPart, Message, ModelError, ModelRequest, ModelResponse, Part, Role, ToolCall,
    ToolResult, Usage,
    model::{FinishReason, ToolChoice, ToolDefinition},
    store::new_id,
};
use tinyagent_http::{snippet, system_and_turns};

use crate::config::GeminiConfig;

/// Builds the request body for `req`.
pub(crate) fn request_body(config: &GeminiConfig, req: &ModelRequest) -> Value {
    let mut body = Map::new();
    let (system, contents) = contents(req);
    body.insert("contents".into(), Value::Array(contents));
    if !system.is_empty() {
        body.insert(
            "systemInstruction".into(),
            json!({"parts": [{"text": system}]}),
        );
    }
    if !req.tools.is_empty() {
        let declarations: Vec<Value> = req.tools.iter().map(declaration).collect();
        body.insert(
            "tools".into(),
            json!([{"functionDeclarations": declarations}]),
        );
        if let Some(choice) = &req.tool_choice {
            body.insert(
                "toolConfig".into(),
                json!({"functionCallingConfig": tool_choice(choice)}),
            );
        }
    }
    let mut generation = Map::new();
    for (field, value) in tinyagent_http::sampling_fields(req, |o| {
        Some(match o {
            SamplingOption::Temperature => "temperature",
            SamplingOption::TopP => "topP",
            SamplingOption::Stop => "stopSequences",
            SamplingOption::Seed => "seed",
            SamplingOption::PresencePenalty => "presencePenalty",
            SamplingOption::FrequencyPenalty => "frequencyPenalty",
            _ => return None,
        })
    }) {
        generation.insert(field.into(), value);
    }
    if let Some(max) = req.max_tokens.or(config.max_tokens) {
        generation.insert("maxOutputTokens".into(), Value::from(max));
    }
    if !generation.is_empty() {
        body.insert("generationConfig".into(), Value::Object(generation));
    }
    for (k, v) in &config.http.extra_body {
        body.insert(k.clone(), v.clone());
    }
    Value::Object(body)
}

/// The system instruction (the instruction, then system messages of the history) and the
/// contents: `user` and `model` turns, consecutive turns of one role merged, function
/// responses in a `user` turn.
fn contents(req: &ModelRequest) -> (String, Vec<Value>) {
    let (system, turns) = system_and_turns(req, |m| match m.role {
        Role::Assistant => ("model", model_parts(m)),
        Role::Tool => {
            let mut parts: Vec<Value> = m
                .tool_results()
                .map(|r| {
                    let mut response = json!({
                        "id": r.call_id,
                        "name": r.name,
                        "response": response_object(&r.content, r.is_error),
                    });
                    let media = response_media(r);
                    if !media.is_empty() {
                        response["parts"] = Value::Array(media);
                    }
                    json!({ "functionResponse": response })
                })
                .collect();
            parts.extend(text_parts(m));
            ("user", parts)
        }
        _ => ("user", text_parts(m)),
    });
    let contents = turns
        .into_iter()
        .map(|(role, parts)| json!({"role": role, "parts": parts}))
        .collect();
    (system, contents)
}

fn text_parts(m: &Message) -> Vec<Value> {
    m.parts
        .iter()
        .filter_map(Part::as_text)
        .filter(|t| !t.is_empty())
        .map(|t| json!({"text": t}))
        .collect()
}

/// A model turn: text and function calls in order; a reasoning part's signature goes on the
/// part after it, as the API gave it (thought text itself is not sent back).
fn model_parts(m: &Message) -> Vec<Value> {
    let mut parts = Vec::new();
    let mut signature: Option<&str> = None;
    for part in &m.parts {
        let mut value = match part {
            Part::Reasoning {
                signature: Some(s), ..
            } => {
                signature = Some(s);
                continue;
            }
            Part::Text { text } if !text.is_empty() => json!({"text": text}),
            Part::ToolCall(call) => json!({"functionCall": {
                "id": call.id,
                "name": call.name,
                "args": call_args(&call.arguments),
            }}),
            _ => continue,
        };
        if let Some(s) = signature.take() {
            value["thoughtSignature"] = Value::String(s.to_owned());
        }
        parts.push(value);
    }
    parts
}

/// The `args` of a past call: the model's arguments when they are a JSON object, `{}` when
/// empty, else the text inside `{"invalid_arguments": "…"}`.
fn call_args(arguments: &str) -> Value {
    if arguments.trim().is_empty() {
        return json!({});
    }
    match serde_json::from_str::<Value>(arguments) {
        Ok(v @ Value::Object(_)) => v,
        _ => json!({"invalid_arguments": arguments}),
    }
}

/// The media types the API takes inline in a function response.
const MEDIA_TYPES: [&str; 5] = [
    "image/png",
    "image/jpeg",
    "image/webp",
    "application/pdf",
    "text/plain",
];

/// A tool result's images (and PDF or text blobs) as the function response's `inlineData`
/// parts; the response object keeps the text with a placeholder for each, and for anything
/// the API does not take inline.
fn response_media(r: &ToolResult) -> Vec<Value> {
    r.parts
        .iter()
        .filter_map(|p| match p {
            ContentPart::Image { data, mime_type }
            | ContentPart::Resource {
                blob: Some(data),
                mime_type: Some(mime_type),
                ..
            } if MEDIA_TYPES.contains(&mime_type.as_str()) => {
                Some(json!({"inlineData": {"mimeType": mime_type, "data": data}}))
            }
            _ => None,
        })
        .collect()
}

/// A tool's output as the `response` object the API wants: a JSON object as it is;
/// anything else under `result` (or `error` for a failure).
fn response_object(content: &str, is_error: bool) -> Value {
    let key = if is_error { "error" } else { "result" };
    match serde_json::from_str::<Value>(content) {
        Ok(v @ Value::Object(_)) if !is_error => v,
        Ok(v) if !is_error => json!({ key: v }),
        _ => json!({ key: content }),
    }
}

fn declaration(def: &ToolDefinition) -> Value {
    static WARNED: OnceLock<Mutex<HashSet<String>>> = OnceLock::new();
    let out = gemini_schema(&def.input_schema);
    if !out.dropped.is_empty() {
        let key = format!("{}\n{}", def.name, out.dropped.join("\n"));
        let mut warned = WARNED
            .get_or_init(Default::default)
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if warned.insert(key) {
            out.warn("gemini", &def.name);
        }
    }
    let mut decl = json!({"name": def.name, "description": def.description});
    let empty = out.schema["properties"]
        .as_object()
        .is_some_and(|p| p.is_empty());
    if !empty {
        decl["parameters"] = out.schema;
    }
    decl
}

fn tool_choice(choice: &ToolChoice) -> Value {
    match choice {
        ToolChoice::None => json!({"mode": "NONE"}),
        ToolChoice::Required => json!({"mode": "ANY"}),
        ToolChoice::Tool(name) => json!({"mode": "ANY", "allowedFunctionNames": [name]}),
        _ => json!({"mode": "AUTO"}),
    }
}

// ---------------------------------------------------------------------------------------
// Responses

/// `usageMetadata` as tinyagent counts it (`promptTokenCount` already includes the cached
/// tokens; `candidatesTokenCount` leaves out the thoughts, which count as output).
pub(crate) fn usage(meta: &Value) -> Usage {
    let count = |k: &str| meta.get(k).and_then(Value::as_u64);
    let mut usage = Usage::default();
    usage.input_tokens = match (count("promptTokenCount"), count("toolUsePromptTokenCount")) {
        (None, None) => None,
        (a, b) => Some(a.unwrap_or(0) + b.unwrap_or(0)),
    };
    usage.reasoning_tokens = count("thoughtsTokenCount");
    usage.output_tokens = match (count("candidatesTokenCount"), usage.reasoning_tokens) {
        (None, None) => None,
        (a, b) => Some(a.unwrap_or(0) + b.unwrap_or(0)),
    };
    usage.cached_input_tokens = count("cachedContentTokenCount");
    usage
}

/// Maps a finish reason; a reply with function calls that stopped for no other reason
/// stopped for them.
pub(crate) fn finish_reason(reason: Option<&str>, has_calls: bool) -> FinishReason {
    match reason {
        Some("MAX_TOKENS") => FinishReason::Length,
        Some(
            "SAFETY" | "RECITATION" | "BLOCKLIST" | "PROHIBITED_CONTENT" | "SPII" | "IMAGE_SAFETY",
        ) => FinishReason::ContentFilter,
        _ if has_calls => FinishReason::ToolCalls,
        None | Some("STOP" | "FINISH_REASON_UNSPECIFIED") => FinishReason::Stop,
        Some(other) => FinishReason::Other(other.to_ascii_lowercase()),
    }
}

/// The parts of one candidate's content, in order: thoughts, text, function calls (a
/// part's `thoughtSignature` kept as a reasoning part before it).
pub(crate) fn candidate_parts(parts: &[Value], offered: &[ToolDefinition]) -> Vec<Part> {
    let mut out = Vec::new();
    for p in parts {
        let signature = p
            .get("thoughtSignature")
            .and_then(Value::as_str)
            .map(str::to_owned);
        let text = p.get("text").and_then(Value::as_str).unwrap_or_default();
        if p.get("thought").and_then(Value::as_bool) == Some(true) {
            out.push(Part::reasoning(text, signature));
            continue;
        }
        if let Some(signature) = signature {
            out.push(Part::reasoning("", Some(signature)));
        }
        if let Some(call) = p.get("functionCall") {
            out.push(Part::ToolCall(function_call(call, offered)));
        } else if !text.is_empty() {
            out.push(Part::text(text));
        }
    }
    out
}

/// A `functionCall` as a tool call (an id made when the API gives none).
pub(crate) fn function_call(call: &Value, offered: &[ToolDefinition]) -> ToolCall {
    let name = call.get("name").and_then(Value::as_str).unwrap_or_default();
    let name = offered
        .iter()
        .find(|t| t.name == name)
        .map_or_else(|| name.to_owned(), |t| t.name.clone());
    let id = call
        .get("id")
        .and_then(Value::as_str)
        .filter(|id| !id.is_empty())
        .map_or_else(|| new_id("call"), str::to_owned);
    let args = match call.get("args") {
        None | Some(Value::Null) => "{}".to_owned(),
        Some(args) => args.to_string(),
    };
    ToolCall::new(id, name, args)
}

/// The first candidate of a response, or the error of one that has none (a prompt blocked).
pub(crate) fn first_candidate(value: &Value) -> Result<Option<&Value>, ModelError> {
    if let Some(c) = value
        .get("candidates")
        .and_then(Value::as_array)
        .and_then(|c| c.first())
    {
        return Ok(Some(c));
    }
    if let Some(reason) = value
        .get("promptFeedback")
        .and_then(|f| f.get("blockReason"))
        .and_then(Value::as_str)
    {
        return Err(ModelError::invalid_response(format!(
            "the API blocked the prompt ({reason}); nothing was generated"
        ))
        .retryable(false));
    }
    Ok(None)
}

/// Turns a non-streaming response body into a [`ModelResponse`].
pub(crate) fn parse_response(
    body: &[u8],
    offered: &[ToolDefinition],
) -> Result<ModelResponse, ModelError> {
    let value = tinyagent_http::parse_json(body, "the response")?;
    if let Some(err) = value.get("error") {
        return Err(crate::error::error_in_body(err));
    }
    let candidate = first_candidate(&value)?.ok_or_else(|| {
        ModelError::invalid_response(format!("the response has no candidates: {}", snippet(body)))
    })?;
    let parts = candidate
        .get("content")
        .and_then(|c| c.get("parts"))
        .and_then(Value::as_array)
        .map(|p| candidate_parts(p, offered))
        .unwrap_or_default();
    let has_calls = parts.iter().any(|p| matches!(p, Part::ToolCall(_)));
    let mut response = ModelResponse::new(
        Message::new(Role::Assistant, parts),
        value.get("usageMetadata").map(usage).unwrap_or_default(),
        finish_reason(
            candidate.get("finishReason").and_then(Value::as_str),
            has_calls,
        ),
    );
    response.id = tinyagent_http::field_text(value.get("responseId"));
    response.model = tinyagent_http::field_text(value.get("modelVersion"));
    Ok(response)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_outputs_become_response_objects() {
        assert_eq!(
            response_object(r#"{"city":"北京"}"#, false),
            json!({"city": "北京"})
        );
        assert_eq!(response_object("晴", false), json!({"result": "晴"}));
        assert_eq!(response_object("56", false), json!({"result": 56}));
        assert_eq!(
            response_object("除数不能为零", true),
            json!({"error": "除数不能为零"})
        );
    }

    #[test]
    fn finish_reasons_and_usage() {
        assert_eq!(finish_reason(Some("STOP"), true), FinishReason::ToolCalls);
        assert_eq!(
            finish_reason(Some("MAX_TOKENS"), true),
            FinishReason::Length
        );
        assert_eq!(
            finish_reason(Some("SAFETY"), false),
            FinishReason::ContentFilter
        );
        assert_eq!(
            finish_reason(Some("MALFORMED_FUNCTION_CALL"), false),
            FinishReason::Other("malformed_function_call".into())
        );
        let u = usage(&json!({"promptTokenCount": 100, "candidatesTokenCount": 20,
            "thoughtsTokenCount": 30, "cachedContentTokenCount": 64, "totalTokenCount": 150}));
        assert_eq!(u.input_tokens, Some(100));
        assert_eq!(u.output_tokens, Some(50));
        assert_eq!(u.reasoning_tokens, Some(30));
        assert_eq!(u.cached_input_tokens, Some(64));
    }
}
