//! Assembling a streamed message from its events: `message_start`, then for each content
//! block `content_block_start`, `content_block_delta`s (`text_delta`, `input_json_delta`,
//! `thinking_delta`, `signature_delta`) and `content_block_stop`, then `message_delta`
//! (stop reason, usage) and `message_stop`; `ping`s anywhere; an `error` event ends it.

use serde_json::Value;
use tinyagent::{
    Message, ModelError, ModelRequest, ModelResponse, Part, Role, ToolCall, model::ModelEvent,
    store::new_id,
};
use tinyagent_http::{Decoder, Flow, snippet};

use crate::wire::{self, WireMessage, WireUsage};

/// A content block being received.
#[derive(Debug)]
enum Block {
    Text(String),
    Thinking {
        text: String,
        signature: Option<String>,
    },
    Redacted(String),
    ToolUse {
        id: String,
        name: String,
        /// The `input_json_delta` fragments so far.
        json: String,
        /// The `input` of `content_block_start`, used when no fragment follows.
        start_input: Option<Value>,
    },
    /// A block tinyagent has no part for (a server tool's block).
    Other,
}

/// The state of one streamed message.
#[derive(Debug, Default)]
pub struct Assembler {
    /// The blocks, by their `index`.
    blocks: Vec<(u64, Block)>,
    stop_reason: Option<String>,
    usage: WireUsage,
    /// The message's id and model, from `message_start`.
    id: Option<String>,
    model: Option<String>,
    events: usize,
}

fn field<'v>(value: &'v Value, name: &str) -> Option<&'v str> {
    value.get(name).and_then(Value::as_str)
}

impl Assembler {
    fn block(&mut self, index: u64) -> Option<&mut Block> {
        self.blocks
            .iter_mut()
            .rev()
            .find(|(i, _)| *i == index)
            .map(|(_, b)| b)
    }

    fn start_block(
        &mut self,
        index: u64,
        block: &Value,
        req: &ModelRequest,
        out: &mut Vec<ModelEvent>,
    ) {
        let block = match field(block, "type") {
            Some("text") => {
                let text = field(block, "text").unwrap_or_default().to_owned();
                if !text.is_empty() {
                    out.push(ModelEvent::TextDelta(text.clone()));
                }
                Block::Text(text)
            }
            Some("thinking") => Block::Thinking {
                text: field(block, "thinking").unwrap_or_default().to_owned(),
                signature: field(block, "signature")
                    .filter(|s| !s.is_empty())
                    .map(str::to_owned),
            },
            Some("redacted_thinking") => {
                Block::Redacted(field(block, "data").unwrap_or_default().to_owned())
            }
            Some("tool_use") => {
                let id = field(block, "id")
                    .filter(|id| !id.is_empty())
                    .map_or_else(|| new_id("toolu"), str::to_owned);
                let name = wire::tool_name(field(block, "name").unwrap_or_default(), &req.tools);
                out.push(ModelEvent::ToolCallStart {
                    id: id.clone(),
                    name: name.clone(),
                });
                let start_input = block
                    .get("input")
                    .filter(|v| v.as_object().is_some_and(|o| !o.is_empty()))
                    .cloned();
                Block::ToolUse {
                    id,
                    name,
                    json: String::new(),
                    start_input,
                }
            }
            _ => Block::Other,
        };
        self.blocks.push((index, block));
    }

    fn delta(
        &mut self,
        index: u64,
        delta: &Value,
        out: &mut Vec<ModelEvent>,
    ) -> Result<(), ModelError> {
        let kind = field(delta, "type").unwrap_or_default().to_owned();
        let Some(block) = self.block(index) else {
            return Err(ModelError::invalid_response(format!(
                "a content_block_delta for block {index}, which never started: {}",
                snippet(delta.to_string().as_bytes())
            )));
        };
        match (kind.as_str(), block) {
            ("text_delta", Block::Text(text)) => {
                let piece = field(delta, "text").unwrap_or_default();
                if !piece.is_empty() {
                    text.push_str(piece);
                    out.push(ModelEvent::TextDelta(piece.to_owned()));
                }
            }
            ("input_json_delta", Block::ToolUse { id, json, .. }) => {
                let piece = field(delta, "partial_json").unwrap_or_default();
                if !piece.is_empty() {
                    json.push_str(piece);
                    out.push(ModelEvent::ToolCallDelta {
                        id: id.clone(),
                        arguments_fragment: piece.to_owned(),
                    });
                }
            }
            ("thinking_delta", Block::Thinking { text, .. }) => {
                text.push_str(field(delta, "thinking").unwrap_or_default());
            }
            ("signature_delta", Block::Thinking { signature, .. }) => {
                let piece = field(delta, "signature").unwrap_or_default();
                signature.get_or_insert_with(String::new).push_str(piece);
            }
            // Citations, and deltas of blocks tinyagent does not keep.
            (_, Block::Other) | ("citations_delta", _) => {}
            (kind, _) => {
                return Err(ModelError::invalid_response(format!(
                    "a {kind:?} delta for a block of another type (block {index})"
                )));
            }
        }
        Ok(())
    }

    /// What was cut, for the error of a stream that ended early.
    fn cut_detail(&self) -> String {
        let calls: Vec<String> = self
            .blocks
            .iter()
            .filter_map(|(_, b)| match b {
                Block::ToolUse { name, json, .. } => {
                    Some(format!("{name} ({} bytes of input)", json.len()))
                }
                _ => None,
            })
            .collect();
        if calls.is_empty() {
            let text: usize = self
                .blocks
                .iter()
                .map(|(_, b)| match b {
                    Block::Text(t) => t.len(),
                    _ => 0,
                })
                .sum();
            format!("after {} events and {text} bytes of text", self.events)
        } else {
            format!(
                "after {} events, in the middle of tool calls {}",
                self.events,
                calls.join(", ")
            )
        }
    }
}

impl Decoder for Assembler {
    fn push(
        &mut self,
        event: &str,
        data: &str,
        req: &ModelRequest,
        out: &mut Vec<ModelEvent>,
    ) -> Result<Flow, ModelError> {
        let value = tinyagent_http::parse_json(data.as_bytes(), "a stream event")?;
        let kind = field(&value, "type").unwrap_or(event).to_owned();
        let index = || {
            value.get("index").and_then(Value::as_u64).ok_or_else(|| {
                ModelError::invalid_response(format!(
                    "a {kind} event without an index: {}",
                    snippet(data.as_bytes())
                ))
            })
        };
        match kind.as_str() {
            "ping" => return Ok(Flow::Continue),
            "error" => return Err(crate::error::error_event(&value)),
            _ => {}
        }
        self.events += 1;
        match kind.as_str() {
            "message_start" => {
                let start = value.get("message");
                self.id = tinyagent_http::field_text(start.and_then(|m| m.get("id")));
                self.model = tinyagent_http::field_text(start.and_then(|m| m.get("model")));
                let message: WireMessage = value
                    .get("message")
                    .cloned()
                    .map(serde_json::from_value)
                    .transpose()
                    .ok()
                    .flatten()
                    .unwrap_or_default();
                if let Some(usage) = message.usage {
                    self.usage = self.usage.merge(usage);
                }
            }
            "content_block_start" => {
                let index = index()?;
                let block = value.get("content_block").cloned().unwrap_or(Value::Null);
                self.start_block(index, &block, req, out);
            }
            "content_block_delta" => {
                let index = index()?;
                let delta = value.get("delta").cloned().unwrap_or(Value::Null);
                self.delta(index, &delta, out)?;
            }
            "content_block_stop" => {
                let index = index()?;
                if let Some(Block::ToolUse {
                    id,
                    json,
                    start_input: Some(input),
                    ..
                }) = self.block(index)
                {
                    // An input that came whole with the start, without fragments.
                    if json.is_empty() {
                        *json = input.to_string();
                        out.push(ModelEvent::ToolCallDelta {
                            id: id.clone(),
                            arguments_fragment: json.clone(),
                        });
                    }
                }
            }
            "message_delta" => {
                if let Some(reason) = value
                    .get("delta")
                    .and_then(|d| field(d, "stop_reason"))
                    .filter(|r| !r.is_empty())
                {
                    self.stop_reason = Some(reason.to_owned());
                }
                if let Some(usage) = value
                    .get("usage")
                    .cloned()
                    .and_then(|u| serde_json::from_value::<WireUsage>(u).ok())
                {
                    self.usage = self.usage.merge(usage);
                }
            }
            "message_stop" => return Ok(Flow::Done),
            // Event types added to the API later.
            _ => {}
        }
        Ok(Flow::Continue)
    }

    fn events(&self) -> usize {
        self.events
    }

    fn has_finished(&self) -> bool {
        self.stop_reason.is_some()
    }

    fn truncation_error(&self, why: &str) -> ModelError {
        ModelError::invalid_response(format!(
            "the stream {why} before the message was complete (no stop_reason), {}",
            self.cut_detail()
        ))
        .retryable(true)
    }

    fn finish(self) -> Result<ModelResponse, ModelError> {
        let mut parts = Vec::with_capacity(self.blocks.len());
        for (_, block) in self.blocks {
            match block {
                Block::Text(text) if !text.is_empty() => parts.push(Part::text(text)),
                Block::Thinking { text, signature } => {
                    parts.push(Part::reasoning(text, signature));
                }
                Block::Redacted(data) => parts.push(Part::Reasoning {
                    text: data,
                    signature: None,
                    redacted: true,
                }),
                Block::ToolUse { id, name, json, .. } => {
                    if name.is_empty() {
                        return Err(ModelError::invalid_response(format!(
                            "the stream sent a tool_use block ({id}) without a name"
                        )));
                    }
                    let arguments = if json.trim().is_empty() {
                        "{}".to_owned()
                    } else {
                        json
                    };
                    parts.push(Part::ToolCall(ToolCall::new(id, name, arguments)));
                }
                _ => {}
            }
        }
        let has_calls = parts.iter().any(|p| matches!(p, Part::ToolCall(_)));
        let mut response = ModelResponse::new(
            Message::new(Role::Assistant, parts),
            self.usage.into(),
            wire::finish_reason(self.stop_reason.as_deref(), has_calls),
        );
        response.id = self.id;
        response.model = self.model;
        Ok(response)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tinyagent::model::FinishReason;

    fn feed(events: &[&str]) -> (Vec<ModelEvent>, Vec<Flow>, Assembler) {
        let req = ModelRequest::new(vec![]);
        let mut a = Assembler::default();
        let mut out = Vec::new();
        let mut flows = Vec::new();
        for e in events {
            flows.push(a.push("", e, &req, &mut out).unwrap());
        }
        (out, flows, a)
    }

    #[test]
    fn thinking_and_a_tool_call_are_assembled() {
        let (events, flows, a) = feed(&[
            r#"{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","content":[],"model":"m","stop_reason":null,"usage":{"input_tokens":10,"output_tokens":1,"cache_read_input_tokens":4}}}"#,
            r#"{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"","signature":""}}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"查天气"}}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"EqQB"}}"#,
            r#"{"type":"content_block_stop","index":0}"#,
            r#"{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_1","name":"get_weather","input":{}}}"#,
            r#"{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"city\":"}}"#,
            r#"{"type":"ping"}"#,
            r#"{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"\"北京\"}"}}"#,
            r#"{"type":"content_block_stop","index":1}"#,
            r#"{"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":30}}"#,
            r#"{"type":"message_stop"}"#,
        ]);
        assert_eq!(flows.last(), Some(&Flow::Done));
        assert_eq!(events.len(), 3, "{events:?}");
        let resp = a.finish().unwrap();
        assert_eq!(resp.finish_reason, FinishReason::ToolCalls);
        assert_eq!(
            resp.message.parts,
            vec![
                Part::reasoning("查天气", Some("EqQB".into())),
                Part::ToolCall(ToolCall::new(
                    "toolu_1",
                    "get_weather",
                    r#"{"city":"北京"}"#
                )),
            ]
        );
        assert_eq!(resp.usage.input_tokens, Some(14));
        assert_eq!(resp.usage.output_tokens, Some(30));
    }

    #[test]
    fn bad_events_are_errors() {
        let req = ModelRequest::new(vec![]);
        let mut a = Assembler::default();
        let mut out = Vec::new();
        assert!(a.push("", "{not json", &req, &mut out).is_err());
        assert!(
            a.push("", r#"{"type":"content_block_delta","index":7,"delta":{"type":"text_delta","text":"x"}}"#, &req, &mut out)
                .is_err()
        );
        assert!(
            a.push(
                "",
                r#"{"type":"content_block_start","content_block":{"type":"text","text":""}}"#,
                &req,
                &mut out
            )
            .is_err()
        );
        let e = a
            .push(
                "error",
                r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
                &req,
                &mut out,
            )
            .unwrap_err();
        assert!(e.is_retryable());
        assert!(out.is_empty());
    }
}
