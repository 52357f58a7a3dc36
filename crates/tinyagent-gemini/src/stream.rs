//! Assembling a streamed answer: each server-sent event is a whole `GenerateContentResponse`
//! holding the next parts (text in pieces, function calls whole), the last one the finish
//! reason and the usage. The stream ends when the connection closes.

use serde_json::Value;
use tinyagent::{Message, ModelError, ModelRequest, ModelResponse, Part, Role, model::ModelEvent};
use tinyagent_http::{Decoder, Flow};

use crate::wire;

/// The state of one streamed answer.
#[derive(Debug, Default)]
pub struct Assembler {
    parts: Vec<Part>,
    finish_reason: Option<String>,
    usage: Option<Value>,
    events: usize,
    /// The answer's `responseId` and `modelVersion`, from the first event that names them.
    id: Option<String>,
    model: Option<String>,
}

impl Assembler {
    fn push_part(&mut self, part: Part, out: &mut Vec<ModelEvent>) {
        match (part, self.parts.last_mut()) {
            (Part::Text { text }, Some(Part::Text { text: last })) => {
                last.push_str(&text);
                out.push(ModelEvent::TextDelta(text));
            }
            (
                Part::Reasoning {
                    text,
                    signature,
                    redacted: false,
                },
                Some(Part::Reasoning {
                    text: last,
                    signature: last_signature @ None,
                    redacted: false,
                }),
            ) if !text.is_empty() => {
                last.push_str(&text);
                *last_signature = signature;
            }
            (part, _) => {
                match &part {
                    Part::Text { text } => out.push(ModelEvent::TextDelta(text.clone())),
                    Part::ToolCall(call) => {
                        out.push(ModelEvent::ToolCallStart {
                            id: call.id.clone(),
                            name: call.name.clone(),
                        });
                        out.push(ModelEvent::ToolCallDelta {
                            id: call.id.clone(),
                            arguments_fragment: call.arguments.clone(),
                        });
                    }
                    _ => {}
                }
                self.parts.push(part);
            }
        }
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
        let value = tinyagent_http::parse_json(data.as_bytes(), "a stream event")?;
        if let Some(err) = value.get("error") {
            return Err(crate::error::error_in_body(err));
        }
        let known = [
            "candidates",
            "usageMetadata",
            "promptFeedback",
            "modelVersion",
        ];
        if !known.iter().any(|k| value.get(k).is_some()) {
            return Err(ModelError::invalid_response(format!(
                "a stream event is not a GenerateContentResponse (no candidates, usage or \
                 feedback): {}; check the base URL",
                tinyagent_http::snippet(data.as_bytes())
            )));
        }
        self.events += 1;
        if self.id.is_none() {
            self.id = tinyagent_http::field_text(value.get("responseId"));
        }
        if self.model.is_none() {
            self.model = tinyagent_http::field_text(value.get("modelVersion"));
        }
        if let Some(meta) = value.get("usageMetadata") {
            self.usage = Some(meta.clone());
        }
        let Some(candidate) = wire::first_candidate(&value)? else {
            return Ok(Flow::Continue);
        };
        if let Some(parts) = candidate
            .get("content")
            .and_then(|c| c.get("parts"))
            .and_then(Value::as_array)
        {
            for part in wire::candidate_parts(parts, &req.tools) {
                self.push_part(part, out);
            }
        }
        if let Some(reason) = candidate
            .get("finishReason")
            .and_then(Value::as_str)
            .filter(|r| !r.is_empty())
        {
            self.finish_reason = Some(reason.to_owned());
        }
        Ok(Flow::Continue)
    }

    fn events(&self) -> usize {
        self.events
    }

    fn has_finished(&self) -> bool {
        self.finish_reason.is_some()
    }

    fn truncation_error(&self, why: &str) -> ModelError {
        let text: usize = self
            .parts
            .iter()
            .filter_map(Part::as_text)
            .map(str::len)
            .sum();
        ModelError::invalid_response(format!(
            "the stream {why} before the answer was complete (no finishReason), after {} \
             events and {text} bytes of text",
            self.events
        ))
        .retryable(true)
    }

    fn finish(self) -> Result<ModelResponse, ModelError> {
        let has_calls = self.parts.iter().any(|p| matches!(p, Part::ToolCall(_)));
        let mut response = ModelResponse::new(
            Message::new(Role::Assistant, self.parts),
            self.usage.as_ref().map(wire::usage).unwrap_or_default(),
            wire::finish_reason(self.finish_reason.as_deref(), has_calls),
        );
        response.id = self.id;
        response.model = self.model;
        Ok(response)
    }
}
