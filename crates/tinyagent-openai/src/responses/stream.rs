//! Assembling a streamed Responses reply from its typed events: text deltas, function calls
//! whose arguments arrive in pieces (keyed by `output_index`), reasoning items, and the final
//! `response.completed` / `response.incomplete` / `response.failed` event.

use serde_json::Value;
use tinyagent::model::{ModelErrorKind, ModelEvent};
use tinyagent::{ModelError, ModelRequest, ModelResponse};
use tinyagent_http::{Decoder, Flow};

use super::wire;
use crate::types::{OutputItem, ResponseObject};
use crate::wire::sanitize_tool_name;

/// A function call being received.
#[derive(Debug)]
struct PendingCall {
    output_index: u64,
    item_id: String,
    call_id: String,
    name: String,
    arguments: String,
}

/// The state of one streamed reply.
#[derive(Debug, Default)]
pub struct ResponseAssembler {
    text_bytes: usize,
    calls: Vec<PendingCall>,
    /// The finished output items, by `output_index`.
    items: Vec<(u64, OutputItem)>,
    /// The final response object (`response.completed` or `response.incomplete`).
    last: Option<ResponseObject>,
    offered: Vec<tinyagent::model::ToolDefinition>,
    events: usize,
}

impl ResponseAssembler {
    fn call_for(&mut self, event: &Value) -> Option<&mut PendingCall> {
        let index = event.get("output_index").and_then(Value::as_u64);
        let item = event.get("item_id").and_then(Value::as_str);
        self.calls
            .iter_mut()
            .rev()
            .find(|c| Some(c.output_index) == index || item.is_some_and(|i| i == c.item_id))
    }

    /// `response.output_item.added`: a function call starts.
    fn item_added(&mut self, value: &Value, out: &mut Vec<ModelEvent>) {
        let item = value.get("item").unwrap_or(&Value::Null);
        if item.get("type").and_then(Value::as_str) == Some("function_call") {
            let text = |k: &str| item.get(k).and_then(Value::as_str).unwrap_or_default();
            let call_id = match text("call_id") {
                "" => tinyagent::store::new_id("call"),
                id => id.to_owned(),
            };
            let name = sanitize_tool_name(text("name"), &self.offered);
            out.push(ModelEvent::ToolCallStart {
                id: call_id.clone(),
                name: name.clone(),
            });
            let arguments = text("arguments").to_owned();
            if !arguments.is_empty() {
                out.push(ModelEvent::ToolCallDelta {
                    id: call_id.clone(),
                    arguments_fragment: arguments.clone(),
                });
            }
            self.calls.push(PendingCall {
                output_index: value
                    .get("output_index")
                    .and_then(Value::as_u64)
                    .unwrap_or(self.calls.len() as u64),
                item_id: text("id").to_owned(),
                call_id,
                name,
                arguments,
            });
        }
    }

    /// `response.output_item.done`: an item is whole.
    fn item_done(&mut self, value: &Value) {
        let index = value
            .get("output_index")
            .and_then(Value::as_u64)
            .unwrap_or(self.items.len() as u64);
        let mut item = value.get("item").cloned().unwrap_or(Value::Null);
        // The call keeps the id its start event gave the consumer.
        if let Some(call) = self.calls.iter().find(|c| c.output_index == index)
            && item.get("type").and_then(Value::as_str) == Some("function_call")
        {
            item["call_id"] = Value::String(call.call_id.clone());
            if item.get("arguments").and_then(Value::as_str).is_none() {
                item["arguments"] = Value::String(call.arguments.clone());
            }
        }
        // An item of no kind these types name is kept as JSON, so this cannot fail.
        let item = serde_json::from_value(item).unwrap_or(OutputItem::Other(Value::Null));
        self.items.push((index, item));
    }

    /// Reads one event, `value`, parsed from `data`.
    fn push_value(
        &mut self,
        value: &Value,
        data: &str,
        out: &mut Vec<ModelEvent>,
    ) -> Result<Flow, ModelError> {
        let kind = value
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or_default();
        match kind {
            "response.output_text.delta" | "response.refusal.delta" => {
                if let Some(delta) = value.get("delta").and_then(Value::as_str)
                    && !delta.is_empty()
                {
                    self.text_bytes += delta.len();
                    out.push(ModelEvent::TextDelta(delta.to_owned()));
                }
            }
            "response.output_item.added" => self.item_added(value, out),
            "response.function_call_arguments.delta" => {
                let delta = value
                    .get("delta")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                if let Some(call) = self.call_for(value)
                    && !delta.is_empty()
                {
                    call.arguments.push_str(delta);
                    out.push(ModelEvent::ToolCallDelta {
                        id: call.call_id.clone(),
                        arguments_fragment: delta.to_owned(),
                    });
                }
            }
            "response.output_item.done" => self.item_done(value),
            "response.completed" | "response.incomplete" => {
                let response = value.get("response").cloned().unwrap_or_default();
                let response =
                    tinyagent_http::parse_shape(response, "the final response", data.as_bytes())?;
                self.last = Some(response);
                return Ok(Flow::Done);
            }
            "response.failed" => {
                let response: ResponseObject = value
                    .get("response")
                    .and_then(|r| serde_json::from_value(r.clone()).ok())
                    .unwrap_or_default();
                return Err(wire::response_error(&response).unwrap_or_else(|| {
                    ModelError::new(ModelErrorKind::Unavailable, "the response failed")
                }));
            }
            "error" => {
                // The error's fields are the event's own (older servers nest them in `error`).
                let err = value
                    .get("error")
                    .filter(|e| e.is_object())
                    .unwrap_or(value);
                return Err(crate::error::error_in_body(err));
            }
            // response.created, in_progress, content parts, text done, reasoning summary
            // deltas and the like say nothing the items and the final event do not.
            _ => {}
        }
        Ok(Flow::Continue)
    }
}

impl Decoder for ResponseAssembler {
    fn push(
        &mut self,
        _event: &str,
        data: &str,
        req: &ModelRequest,
        out: &mut Vec<ModelEvent>,
    ) -> Result<Flow, ModelError> {
        if data == "[DONE]" {
            return Ok(Flow::Done);
        }
        if self.events == 0 {
            self.offered = req.tools.to_vec();
        }
        self.events += 1;
        let value = tinyagent_http::parse_json(data.as_bytes(), "a stream event")?;
        self.push_value(&value, data, out)
    }

    fn events(&self) -> usize {
        self.events
    }

    fn has_finished(&self) -> bool {
        self.last.is_some()
    }

    fn truncation_error(&self, why: &str) -> ModelError {
        let detail = match self.calls.last() {
            Some(call) if !self.items.iter().any(|(i, _)| *i == call.output_index) => format!(
                "after {} events, in the middle of a call to {} ({} bytes of arguments)",
                self.events,
                call.name,
                call.arguments.len()
            ),
            _ => format!(
                "after {} events and {} bytes of text",
                self.events, self.text_bytes
            ),
        };
        ModelError::invalid_response(format!(
            "the stream {why} before the response was complete (no response.completed), {detail}"
        ))
        .retryable(true)
    }

    fn finish(self) -> Result<ModelResponse, ModelError> {
        let Some(last) = self.last else {
            return Err(self.truncation_error("ended"));
        };
        let mut items = self.items;
        items.sort_by_key(|(i, _)| *i);
        let items = items.into_iter().map(|(_, item)| item).collect();
        wire::response(last, items, &self.offered)
    }
}
