//! `POST /v1/responses`: OpenAI's Responses API in front of an agent, beside Chat Completions.
//!
//! The `model` names the agent; `input` (a string, or message and call items) becomes its
//! history and the new user message; `instructions` are the client's text, placed as its
//! system messages are (below the operator's). Nothing is stored: `previous_response_id` and
//! `conversation` are refused (the session API keeps conversations). The agent's own tools run
//! here and are reported as in Chat Completions, in a top-level `tinyagent` field: on
//! `response.in_progress` events when streaming, under `tinyagent.events` in a whole answer.
//! Request fields are translated to their Chat Completions names and honoured, refused or
//! ignored by the same table ([`crate::options`]).

use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use axum::Extension;
use axum::body::Bytes;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use futures::StreamExt;
use futures::stream::{self, BoxStream};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};
use tinyagent::{Event, Session, Usage};
use tokio::time::Instant;

use crate::chat::{
    Admit, ChatMessage, Transcript, conversation, event_json, is_reported, paused, run_to_end,
    timeout_error,
};
use tinyagent_openai::types::{
    ChatToolCall, MessageItem, OutputContent, OutputItem, ResponseObject, ResponseStreamEvent,
    ResponseUsage,
};

use crate::error::ApiError;
use crate::extract::ApiJson;
use crate::request_id::{RequestId, in_request};
use crate::sse::{self, Step};
use crate::state::AppState;
use crate::tenancy::Caller;

/// A Responses request; the fields besides these go through [`translate`].
#[derive(Debug, Deserialize)]
pub(crate) struct ResponsesRequest {
    model: String,
    input: Value,
    #[serde(default)]
    instructions: Option<String>,
    #[serde(default)]
    stream: Option<bool>,
    #[serde(flatten)]
    extra: Map<String, Value>,
}

/// Fields with no effect on an answer, accepted and not used.
const IGNORED: &[&str] = &[
    "metadata",
    "user",
    "safety_identifier",
    "prompt_cache_key",
    "prompt_cache_retention",
    "service_tier",
    "truncation",
    "include",
    "stream_options",
    "store",
    "reasoning",
];

/// Fields this server refuses whatever their value (but `null`), with why.
const REFUSED: &[(&str, &str)] = &[
    (
        "previous_response_id",
        "this server keeps no responses; send the whole conversation in `input`, or use the \
         session API (POST /v1/sessions/{id}/messages) for conversations kept on the server",
    ),
    (
        "conversation",
        "this server keeps no conversations under this API; use the session API",
    ),
    (
        "background",
        "responses are answered while the request waits",
    ),
    ("prompt", "prompt templates are not supported; send `input`"),
    (
        "max_tool_calls",
        "the agent's own limits bound its tool calls (set by the operator)",
    ),
];

/// The request's other fields under their Chat Completions names, for [`crate::options`].
fn translate(extra: &Map<String, Value>) -> Result<Map<String, Value>, ApiError> {
    let mut out = Map::new();
    for (name, value) in extra {
        if value.is_null() || IGNORED.contains(&name.as_str()) {
            continue;
        }
        if let Some((_, why)) = REFUSED.iter().find(|(field, _)| field == name) {
            if name == "background" && value == &Value::Bool(false) {
                continue;
            }
            return Err(
                ApiError::bad_request(format!("`{name}` is not supported: {why}"))
                    .param(name.clone())
                    .code("unsupported_parameter"),
            );
        }
        match name.as_str() {
            "max_output_tokens" => {
                out.insert("max_tokens".into(), value.clone());
            }
            "text" => {
                let format = value.get("format").unwrap_or(&Value::Null);
                match format.get("type").and_then(Value::as_str) {
                    None | Some("text") => {}
                    Some("json_schema") => {
                        let mut schema = format.clone();
                        if let Some(o) = schema.as_object_mut() {
                            o.remove("type");
                        }
                        out.insert(
                            "response_format".into(),
                            json!({"type": "json_schema", "json_schema": schema}),
                        );
                    }
                    Some(_) => {
                        out.insert("response_format".into(), format.clone());
                    }
                }
                if let Some(verbosity) = value.get("verbosity").filter(|v| !v.is_null()) {
                    out.insert("verbosity".into(), verbosity.clone());
                }
            }
            "tool_choice" => {
                let choice = match value.get("name") {
                    Some(tool) if value.get("type") == Some(&json!("function")) => {
                        json!({"type": "function", "function": {"name": tool}})
                    }
                    _ => value.clone(),
                };
                out.insert("tool_choice".into(), choice);
            }
            // The same name and meaning in both APIs.
            "temperature" | "top_p" | "parallel_tool_calls" | "tools" | "top_logprobs" => {
                out.insert(name.clone(), value.clone());
            }
            // Chat Completions' names (`stop`, `seed`, `max_tokens`...) are not this API's.
            _ => {
                return Err(ApiError::bad_request(format!(
                    "unrecognized request argument `{name}`"
                ))
                .param(name.clone())
                .code("unsupported_parameter"));
            }
        }
    }
    Ok(out)
}

/// The text of a content value: a string, or `input_text` / `output_text` parts joined.
fn content_text(content: &Value, at: &str) -> Result<String, ApiError> {
    match content {
        Value::String(text) => Ok(text.clone()),
        Value::Array(parts) => {
            let mut text = String::new();
            for (i, part) in parts.iter().enumerate() {
                match part.get("type").and_then(Value::as_str) {
                    Some("input_text" | "output_text") => {
                        text.push_str(part.get("text").and_then(Value::as_str).unwrap_or(""));
                    }
                    kind => {
                        return Err(ApiError::bad_request(format!(
                            "content parts of type {} are not supported; send text",
                            kind.map_or_else(|| "(none)".to_owned(), |k| format!("{k:?}"))
                        ))
                        .param(format!("{at}.content[{i}]")));
                    }
                }
            }
            Ok(text)
        }
        _ => Err(
            ApiError::bad_request("`content` must be a string or a list of parts")
                .param(format!("{at}.content")),
        ),
    }
}

/// `instructions` and `input` as Chat Completions messages, with the request parameter each
/// came from.
fn messages(
    instructions: Option<String>,
    input: Value,
) -> Result<(Vec<ChatMessage>, Vec<String>), ApiError> {
    let mut out: Vec<ChatMessage> = Vec::new();
    let mut from: Vec<String> = Vec::new();
    if let Some(text) = instructions.filter(|t| !t.is_empty()) {
        out.push(ChatMessage::text("system", text));
        from.push("instructions".into());
    }
    let items = match input {
        Value::String(text) => vec![json!({"role": "user", "content": text})],
        Value::Array(items) => items,
        _ => {
            return Err(
                ApiError::bad_request("`input` must be a string or a list of items").param("input"),
            );
        }
    };
    for (i, item) in items.iter().enumerate() {
        let at = format!("input[{i}]");
        let field = |k: &str| item.get(k).and_then(Value::as_str).unwrap_or_default();
        let message = match item.get("type").and_then(Value::as_str) {
            None | Some("message") => {
                let content = content_text(item.get("content").unwrap_or(&Value::Null), &at)?;
                ChatMessage::text(field("role"), content)
            }
            Some("function_call") => {
                ChatMessage::text("assistant", "").tool_calls(vec![ChatToolCall::new(
                    field("call_id"),
                    field("name"),
                    field("arguments"),
                )])
            }
            Some("function_call_output") => {
                let output = match item.get("output") {
                    Some(Value::String(s)) => s.clone(),
                    Some(other) => content_text(other, &at)?,
                    None => String::new(),
                };
                let mut message = ChatMessage::text("tool", output);
                message.tool_call_id = item
                    .get("call_id")
                    .and_then(Value::as_str)
                    .map(str::to_owned);
                message
            }
            Some(other) => {
                return Err(ApiError::bad_request(format!(
                    "input items of type {other:?} are not supported: send messages (and, where \
                     the operator allows it, function_call and function_call_output items)"
                ))
                .param(format!("{at}.type")));
            }
        };
        out.push(message);
        from.push(at);
    }
    Ok((out, from))
}

/// An error about `messages[i]…` named by the request parameter it came from.
fn named(mut err: ApiError, from: &[String]) -> ApiError {
    if let Some(param) = err.param.take() {
        let renamed = param
            .strip_prefix("messages[")
            .and_then(|rest| rest.split_once(']'))
            .and_then(|(n, tail)| Some(format!("{}{tail}", from.get(n.parse::<usize>().ok()?)?)));
        err.param = Some(match renamed {
            Some(p) => p,
            None if param == "messages" => "input".to_owned(),
            None => param,
        });
    }
    err
}

/// What every event and answer of one response shares.
struct Meta {
    id: String,
    message_id: String,
    created_at: u64,
    model: String,
    instructions: Option<String>,
}

impl Meta {
    /// The response object with this status, output and usage.
    fn response(&self, status: &str, text: Option<&str>, usage: Option<&Usage>) -> ResponseObject {
        let output = match text {
            Some(text) => vec![self.message(text, "completed")],
            None => Vec::new(),
        };
        let response = ResponseObject::new(&self.id, self.created_at, &self.model, status, output)
            .instructions(self.instructions.clone());
        match usage {
            Some(usage) => response.usage(wire_usage(usage)),
            None => response,
        }
    }

    fn message(&self, text: &str, status: &str) -> OutputItem {
        let content = if status == "in_progress" {
            Vec::new()
        } else {
            vec![OutputContent::text(text)]
        };
        OutputItem::Message(MessageItem::new(&self.message_id, status, content))
    }

    /// The events a stream opens with: the response created and in progress, its message
    /// item and the item's text part added.
    fn opening(&self, numbered: &mut Events) -> Vec<Bytes> {
        let in_progress = || self.response("in_progress", None, None);
        let mut text_part = self.in_text("response.content_part.added");
        text_part.part = Some(OutputContent::text(""));
        vec![
            numbered.frame(ResponseStreamEvent::response(
                "response.created",
                in_progress(),
            )),
            numbered.frame(ResponseStreamEvent::response(
                "response.in_progress",
                in_progress(),
            )),
            numbered.frame(ResponseStreamEvent::item(
                "response.output_item.added",
                0,
                self.message("", "in_progress"),
            )),
            numbered.frame(text_part),
        ]
    }

    /// An event about the message's one text part.
    fn in_text(&self, kind: &str) -> ResponseStreamEvent {
        ResponseStreamEvent::in_part(kind, 0, &self.message_id, 0)
    }
}

/// A response's usage as the Responses API gives it, with its cost in US dollars (as in Chat
/// Completions) only when known.
fn wire_usage(usage: &Usage) -> ResponseUsage {
    ResponseUsage::new(
        usage.input_tokens.unwrap_or(0),
        usage.cached_input_tokens.unwrap_or(0),
        usage.output_tokens.unwrap_or(0),
        usage.reasoning_tokens.unwrap_or(0),
    )
    .cost(usage.cost.map(|cost| cost.usd()))
}

/// A response or stream event with what clients see of the run beside it: the events of a
/// whole answer (`tinyagent.events`), or the one an `in_progress` event reports
/// (`tinyagent.event`).
#[derive(Serialize)]
struct WithReported<T> {
    #[serde(flatten)]
    inner: T,
    #[serde(skip_serializing_if = "Option::is_none")]
    tinyagent: Option<Reported>,
}

#[derive(Serialize)]
#[serde(untagged)]
enum Reported {
    Events { events: Vec<Value> },
    Event { event: Value },
}

fn unique_id(prefix: &str) -> String {
    format!(
        "{prefix}_{}",
        tinyagent::store::new_id("").trim_start_matches('_')
    )
}

pub(crate) async fn create(
    State(state): State<Arc<AppState>>,
    Extension(caller): Extension<Caller>,
    ApiJson(request): ApiJson<ResponsesRequest>,
) -> Result<Response, ApiError> {
    let deadline = state.limits.request_timeout.map(|d| Instant::now() + d);
    let fields = translate(&request.extra)?;
    let (options, shape) = crate::options::read(&fields, &state.parameters)?;
    let Some(agent) = state.agent(&request.model).cloned() else {
        return Err(ApiError::not_found(format!(
            "the model `{}` does not exist; this server's models (agents) are: {}",
            request.model,
            state.agent_names()
        ))
        .param("model")
        .code("model_not_found"));
    };
    let admit = Admit {
        instructions: state.client_instructions,
        tool_results: state.client_tool_results,
    };
    agent.check_options(&options)?;
    let instructions = request.instructions.clone();
    let (chat, from) = messages(request.instructions, request.input)?;
    let (history, message) = conversation(chat, admit).map_err(|e| named(e, &from))?;
    state.afford(&caller)?;
    let session = Session::new();
    session.append(history);
    let agent = state.metered(&agent, &caller);
    let events = crate::answer_shape::run(agent, session, message, options, shape);
    let meta = Meta {
        id: unique_id("resp"),
        message_id: unique_id("msg"),
        created_at: SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0),
        model: request.model,
        instructions,
    };
    let steps = sse::until(events, deadline);
    if request.stream.unwrap_or(false) {
        Ok(sse::response(sse::with_heartbeat(
            stream_events(state, caller, meta, steps),
            sse::HEARTBEAT,
        )))
    } else {
        answer(&state, &caller, meta, steps).await
    }
}

/// Runs to the end and answers with one response object.
async fn answer(
    state: &AppState,
    caller: &Caller,
    meta: Meta,
    steps: BoxStream<'static, Step>,
) -> Result<Response, ApiError> {
    let outcome = run_to_end(state, caller, steps).await?;
    let body = WithReported {
        inner: meta.response("completed", Some(&outcome.text), Some(&outcome.usage)),
        tinyagent: Some(Reported::Events {
            events: outcome.reported,
        }),
    };
    Ok(axum::Json(body).into_response())
}

/// The numbered events of one stream.
struct Events {
    next: u64,
}

impl Events {
    fn frame(&mut self, event: ResponseStreamEvent) -> Bytes {
        self.reporting(event, None)
    }

    /// The event, with what it reports of the run beside it.
    fn reporting(&mut self, mut event: ResponseStreamEvent, reported: Option<Reported>) -> Bytes {
        event.sequence_number = self.next;
        self.next += 1;
        let kind = event.kind.clone();
        let event = WithReported {
            inner: event,
            tinyagent: reported,
        };
        sse::frame(
            Some(&kind),
            &serde_json::to_string(&event).expect("an event serializes"),
        )
    }
}

/// The `error` event that ends a stream.
fn error_event(err: &ApiError) -> ResponseStreamEvent {
    ResponseStreamEvent::error(err.code, &err.message, err.param.as_deref())
}

/// The run as Responses stream events: created, in progress, the message item and its text
/// deltas, then completed (or an `error` event).
fn stream_events(
    state: Arc<AppState>,
    caller: Caller,
    meta: Meta,
    steps: BoxStream<'static, Step>,
) -> impl futures::Stream<Item = Bytes> + Send + 'static {
    let request_id = RequestId::current();
    let mut numbered = Events { next: 0 };
    let in_progress = |meta: &Meta| meta.response("in_progress", None, None);
    let opening = meta.opening(&mut numbered);
    let mut transcript = Transcript::default();
    let mut ended = false;
    let rest = steps.flat_map(move |step| {
        let mut frames: Vec<Bytes> = Vec::new();
        if ended {
            return stream::iter(frames);
        }
        let text_delta = |piece: &str| {
            let mut delta = meta.in_text("response.output_text.delta");
            delta.delta = Some(piece.to_owned());
            delta.logprobs = Some(Vec::new());
            delta
        };
        let fail = |err: ApiError, numbered: &mut Events| numbered.frame(error_event(&err));
        match step {
            Step::TimedOut => {
                ended = true;
                frames.push(fail(
                    in_request(request_id, || timeout_error(&state)),
                    &mut numbered,
                ));
            }
            Step::Event(Err(err)) => {
                ended = true;
                frames.push(fail(
                    in_request(request_id, || state.run_error(err, &caller)),
                    &mut numbered,
                ));
            }
            Step::Event(Ok(event)) => match &event {
                Event::TextDelta(text) => {
                    let piece = transcript.delta(text);
                    if !piece.is_empty() {
                        frames.push(numbered.frame(text_delta(&piece)));
                    }
                }
                Event::Usage { .. } => transcript.step_done(),
                Event::Finished { usage, answer, .. } => {
                    ended = true;
                    if transcript.text.is_empty() && !answer.is_empty() {
                        transcript.text.clone_from(answer);
                        frames.push(numbered.frame(text_delta(answer)));
                    }
                    let text = transcript.text.clone();
                    let mut done = meta.in_text("response.output_text.done");
                    done.text = Some(text.clone());
                    done.logprobs = Some(Vec::new());
                    frames.push(numbered.frame(done));
                    let mut part = meta.in_text("response.content_part.done");
                    part.part = Some(OutputContent::text(text.as_str()));
                    frames.push(numbered.frame(part));
                    frames.push(numbered.frame(ResponseStreamEvent::item(
                        "response.output_item.done",
                        0,
                        meta.message(&text, "completed"),
                    )));
                    frames.push(numbered.frame(ResponseStreamEvent::response(
                        "response.completed",
                        meta.response("completed", Some(&text), Some(usage)),
                    )));
                }
                Event::Paused { pending, .. } => {
                    ended = true;
                    let err = in_request(request_id, || paused(pending.clone()));
                    frames.push(fail(err, &mut numbered));
                }
                other if is_reported(other) => {
                    if matches!(other, Event::ReplyRestarted { .. }) {
                        transcript.restart();
                    }
                    // A tool call, its progress or a restart: reported beside the response,
                    // on an event every client reads past.
                    let progress =
                        ResponseStreamEvent::response("response.in_progress", in_progress(&meta));
                    frames.push(numbered.reporting(
                        progress,
                        Some(Reported::Event {
                            event: event_json(other),
                        }),
                    ));
                }
                _ => {}
            },
        }
        stream::iter(frames)
    });
    stream::iter(opening).chain(rest)
}

#[cfg(test)]
mod tests;
