//! Assembling a streamed response from its chunks: text deltas, tool calls whose arguments
//! arrive in pieces (keyed by `index`), the finish reason and the usage chunk.

use tinyagent::{
    Message, ModelError, ModelRequest, ModelResponse, Part, Role, ToolCall, Usage,
    model::{ModelEvent, ToolDefinition},
    store::new_id,
};

use tinyagent_http::{Decoder, Flow};

use crate::types::{ChatCompletionChunk, ChatFunction};
use crate::wire;

/// A tool call being received.
#[derive(Debug)]
struct PendingCall {
    /// The wire `index` (or a key for the legacy `function_call`).
    key: u64,
    id: String,
    name: String,
    arguments: String,
    started: bool,
}

/// The key of the legacy `function_call` delta, apart from any `index`.
const LEGACY_KEY: u64 = u64::MAX;

/// The state of one streamed response.
#[derive(Debug, Default)]
pub struct Assembler {
    text: String,
    calls: Vec<PendingCall>,
    finish_reason: Option<String>,
    usage: Option<Usage>,
    saw_tool_calls_field: bool,
    chunks: usize,
    /// The answer's id and model, from the first chunk that names them.
    id: Option<String>,
    model: Option<String>,
}

impl Assembler {
    /// Reads one SSE `data` payload (not `[DONE]`), pushing the events it yields.
    pub(crate) fn push_data(
        &mut self,
        data: &str,
        offered: &[ToolDefinition],
        out: &mut Vec<ModelEvent>,
    ) -> Result<(), ModelError> {
        let value = tinyagent_http::parse_json(data.as_bytes(), "a stream chunk")?;
        if let Some(err) = value.get("error").filter(|e| !e.is_null()) {
            return Err(crate::error::error_in_body(err));
        }
        let chunk: ChatCompletionChunk =
            tinyagent_http::parse_shape(value, "a stream chunk", data.as_bytes())?;
        if self.id.is_none() {
            self.id = chunk.id;
        }
        if self.model.is_none() {
            self.model = chunk.model;
        }
        self.chunks += 1;
        if let Some(usage) = chunk.usage.flatten() {
            self.usage = Some(usage.into());
        }
        // Only the first choice is followed (requests never ask for more than one).
        let Some(choice) = chunk.choices.into_iter().find(|c| c.index == 0) else {
            return Ok(());
        };
        {
            let delta = choice.delta;
            // A refusal is the reply's text, as in a complete response.
            let text = delta.text();
            if !text.is_empty() {
                self.text.push_str(&text);
                out.push(ModelEvent::TextDelta(text));
            }
            let tool_calls = delta.tool_calls.unwrap_or_default();
            if !tool_calls.is_empty() {
                self.saw_tool_calls_field = true;
            }
            let n = tool_calls.len();
            for (position, call) in tool_calls.into_iter().enumerate() {
                // A server that leaves out `index` sends one call per chunk, or all in order.
                let key = match call.index {
                    Some(i) => i,
                    None if n == 1 => self.calls.last().map_or(0, |c| c.key),
                    None => position as u64,
                };
                self.push_call(key, call.id, call.function, offered, out);
            }
            // The legacy field: only when the server does not also send `tool_calls` (some
            // send both, with the same call).
            if !self.saw_tool_calls_field {
                if let Some(f) = delta.function_call {
                    self.push_call(LEGACY_KEY, None, Some(f), offered, out);
                }
            }
        }
        if let Some(reason) = choice.finish_reason.filter(|r| !r.is_empty()) {
            self.finish_reason = Some(reason);
        }
        Ok(())
    }

    fn push_call(
        &mut self,
        key: u64,
        id: Option<String>,
        function: Option<ChatFunction>,
        offered: &[ToolDefinition],
        out: &mut Vec<ModelEvent>,
    ) {
        let function = function.unwrap_or_default();
        let id = id.filter(|id| !id.is_empty());
        let fragment = function.arguments_text();
        let name = function.name.filter(|n| !n.trim().is_empty());
        // The call with this key; a different id under the same key is a new call (servers
        // that give every call index 0).
        let existing = self.calls.iter().rposition(|c| c.key == key);
        let index = match (existing, &id) {
            (Some(i), Some(id)) if self.calls[i].id != *id && self.calls[i].started => None,
            (found, _) => found,
        };
        let index = match index {
            Some(i) => i,
            None => {
                self.calls.push(PendingCall {
                    key,
                    id: id.clone().unwrap_or_else(|| new_id("call")),
                    name: String::new(),
                    arguments: String::new(),
                    started: false,
                });
                self.calls.len() - 1
            }
        };
        let call = &mut self.calls[index];
        if let Some(id) = id {
            if !call.started {
                call.id = id;
            }
        }
        if call.name.is_empty() {
            if let Some(name) = name {
                call.name = wire::sanitize_tool_name(&name, offered);
            }
        }
        if !call.started && !call.name.is_empty() {
            call.started = true;
            out.push(ModelEvent::ToolCallStart {
                id: call.id.clone(),
                name: call.name.clone(),
            });
            // Fragments that came before the name.
            if !call.arguments.is_empty() {
                out.push(ModelEvent::ToolCallDelta {
                    id: call.id.clone(),
                    arguments_fragment: call.arguments.clone(),
                });
            }
        }
        if !fragment.is_empty() {
            call.arguments.push_str(&fragment);
            if call.started {
                out.push(ModelEvent::ToolCallDelta {
                    id: call.id.clone(),
                    arguments_fragment: fragment,
                });
            }
        }
    }

    /// Whether the server said why it stopped.
    pub(crate) fn has_finished(&self) -> bool {
        self.finish_reason.is_some()
    }

    /// What was cut, for the error of a stream that ended early.
    pub(crate) fn truncation_error(&self, why: &str) -> ModelError {
        let partial = self
            .calls
            .iter()
            .map(|c| format!("{} ({} bytes of arguments)", c.name, c.arguments.len()))
            .collect::<Vec<_>>();
        let detail = if partial.is_empty() {
            format!(
                "after {} chunks and {} bytes of text",
                self.chunks,
                self.text.len()
            )
        } else {
            format!(
                "after {} chunks, in the middle of tool calls {}",
                self.chunks,
                partial.join(", ")
            )
        };
        ModelError::invalid_response(format!(
            "the stream {why} before the response was complete (no finish_reason), {detail}"
        ))
        .retryable(true)
    }

    /// The complete response. Calls are taken as they were keyed by the stream (their
    /// `index`), so two calls that a server gave the same id stay two calls.
    pub(crate) fn finish(self) -> Result<ModelResponse, ModelError> {
        let mut parts = Vec::with_capacity(1 + self.calls.len());
        if !self.text.is_empty() {
            parts.push(Part::text(self.text));
        }
        let has_calls = !self.calls.is_empty();
        for call in self.calls {
            if call.name.is_empty() {
                return Err(ModelError::invalid_response(format!(
                    "the stream sent a tool call ({}) without a name",
                    call.id
                )));
            }
            parts.push(Part::ToolCall(ToolCall::new(
                call.id,
                call.name,
                call.arguments,
            )));
        }
        let mut response = ModelResponse::new(
            Message::new(Role::Assistant, parts),
            self.usage.unwrap_or_default(),
            wire::finish_reason(self.finish_reason.as_deref(), has_calls),
        );
        response.id = self.id;
        response.model = self.model;
        Ok(response)
    }
}

impl Decoder for Assembler {
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
        self.push_data(data, &req.tools, out)?;
        Ok(Flow::Continue)
    }

    fn events(&self) -> usize {
        self.chunks
    }

    fn has_finished(&self) -> bool {
        self.has_finished()
    }

    fn truncation_error(&self, why: &str) -> ModelError {
        self.truncation_error(why)
    }

    fn finish(self) -> Result<ModelResponse, ModelError> {
        self.finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tinyagent::{ToolCall, model::FinishReason};

    fn feed(chunks: &[&str]) -> (Vec<ModelEvent>, Result<ModelResponse, ModelError>) {
        let mut a = Assembler::default();
        let mut out = Vec::new();
        for c in chunks {
            a.push_data(c, &[], &mut out).unwrap();
        }
        (out, a.finish())
    }

    #[test]
    fn arguments_arrive_in_pieces() {
        let (events, resp) = feed(&[
            r#"{"choices":[{"index":0,"delta":{"role":"assistant","content":null,"tool_calls":[{"index":0,"id":"c1","type":"function","function":{"name":"f","arguments":""}}]}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"a\":"}}]}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"1}"}}]}}]}"#,
            r#"{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}"#,
        ]);
        let resp = resp.unwrap();
        assert_eq!(
            resp.message.tool_calls().next().unwrap(),
            &ToolCall::new("c1", "f", r#"{"a":1}"#)
        );
        assert_eq!(resp.finish_reason, FinishReason::ToolCalls);
        assert_eq!(events.len(), 3);
    }

    #[test]
    fn same_index_different_id_is_a_new_call() {
        let (_, resp) = feed(&[
            r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"a","function":{"name":"f","arguments":"{}"}}]}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"b","function":{"name":"g","arguments":"{}"}}]}}]}"#,
            r#"{"choices":[{"delta":{},"finish_reason":"tool_calls"}]}"#,
        ]);
        let names: Vec<_> = resp
            .unwrap()
            .message
            .tool_calls()
            .map(|c| c.name.clone())
            .collect();
        assert_eq!(names, ["f", "g"]);
    }

    #[test]
    fn bad_chunks_are_errors() {
        let mut a = Assembler::default();
        let mut out = Vec::new();
        assert!(a.push_data("{not json", &[], &mut out).is_err());
        assert!(a.push_data(r#"{"choices": 5}"#, &[], &mut out).is_err());
        let e = a
            .push_data(
                r#"{"error":{"message":"overloaded","type":"server_error"}}"#,
                &[],
                &mut out,
            )
            .unwrap_err();
        assert!(e.message().contains("overloaded"));
    }
}
