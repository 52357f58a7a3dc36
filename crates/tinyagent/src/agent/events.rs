//! [`Event`]: what an agent run reports as it goes.

use std::time::Duration;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

use crate::error::ToolErrorKind;
use crate::message::{Message, ToolCall, ToolResult};
use crate::model::{FinishReason, Usage};

/// One thing that happened in an agent run, in the order it happened.
///
/// A run with tool calls reports, per step: [`TextDelta`](Self::TextDelta)s while the model
/// writes, [`Usage`](Self::Usage) and [`Message`](Self::Message) when its reply is complete,
/// then for each tool call a [`ToolCallStarted`](Self::ToolCallStarted) and a
/// [`ToolCallFinished`](Self::ToolCallFinished) (calls running at once interleave; each
/// finishes in its own time). The last event of a successful run is
/// [`Finished`](Self::Finished).
///
/// # JSON shape
///
/// Events serialize (serde) as one flat JSON object each, tagged by `type`; this shape is
/// stable, and the `tinyagent` command's `--json` prints it:
///
/// ```text
/// {"type":"text_delta","text":"Sunny"}
/// {"type":"reply_restarted","reason":"the stream was cut after 12 chunks"}
/// {"type":"usage","step":1,"input_tokens":80,"output_tokens":17,"finish_reason":"tool_calls"}
/// {"type":"message","message":{"id":"msg_…","role":"assistant","parts":[…]}}
/// {"type":"tool_call_started","id":"call_1","name":"get_weather","arguments":{"city":"Beijing"}}
/// {"type":"tool_progress","id":"call_1","progress":1.0,"total":3.0,"message":"fetching"}
/// {"type":"tool_call_finished","id":"call_1","name":"get_weather","is_error":false,
///  "content":"{…}","duration_ms":0.05,"error_kind":null}
/// {"type":"finished","answer":"…","steps":2,"input_tokens":160,"output_tokens":40}
/// ```
///
/// Token counts a provider did not report are left out (see [`Usage`]); `arguments` is the
/// JSON object or array the model sent, or its raw text when that is anything else (not
/// JSON, or a bare value); `error_kind` is a [`ToolErrorKind`] name or `null`.
///
/// ```
/// use tinyagent::{Event, ToolCall};
///
/// let call = ToolCall::new("call_1", "get_weather", r#"{"city":"Beijing"}"#);
/// let event = Event::ToolCallStarted { call };
/// let line = serde_json::to_string(&event).unwrap();
/// let expected = concat!(
///     r#"{"type":"tool_call_started","id":"call_1","name":"get_weather","#,
///     r#""arguments":{"city":"Beijing"}}"#,
/// );
/// assert_eq!(line, expected);
/// let back: Event = serde_json::from_str(&line).unwrap();
/// assert_eq!(back, event);
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Event {
    /// A piece of the model's text, as it streams.
    TextDelta(String),
    /// The model's reply of the current step restarts: the provider lost the stream after
    /// some of it had been shown and asks again. The [`TextDelta`](Self::TextDelta)s of this
    /// step shown so far are void; the new reply follows.
    ReplyRestarted {
        /// Why, for people.
        reason: String,
    },
    /// The history was compacted to fit the agent's
    /// [`ContextPolicy`](crate::agent::ContextPolicy) before a model call. The session keeps
    /// every message; a summary of the oldest turns is kept in its state.
    ContextCompacted {
        /// The history's tokens before, estimated.
        tokens_before: u64,
        /// The history's tokens after, estimated.
        tokens_after: u64,
        /// How many older tool outputs were cut to their head.
        trimmed_tool_outputs: usize,
        /// How many of the oldest messages a summary replaced.
        summarized_messages: usize,
    },
    /// Tokens used by one model step.
    Usage {
        /// The step, counted from 1.
        step: usize,
        /// Tokens used by this step.
        usage: Usage,
        /// Why the model stopped.
        finish_reason: FinishReason,
    },
    /// The model's complete reply of one step (its text and tool calls).
    Message(Message),
    /// A tool call is about to run (or to be refused: its result will say).
    ToolCallStarted {
        /// The call, as the model made it.
        call: ToolCall,
    },
    /// A running tool call reports progress (through
    /// [`ToolContext::progress`](crate::ToolContext::progress)).
    ToolProgress {
        /// The id of the call.
        call_id: String,
        /// How far it is (increasing).
        progress: f64,
        /// Of how much, when known.
        total: Option<f64>,
        /// What it is doing, for people.
        message: Option<String>,
    },
    /// A tool call is over.
    ToolCallFinished {
        /// The result the model will read; `result.is_error` says whether the call failed.
        result: ToolResult,
        /// How long the call took.
        duration: Duration,
        /// The kind of failure, when it failed.
        error_kind: Option<ToolErrorKind>,
    },
    /// The run is paused and over for now: tool calls wait for a decision from outside the
    /// run (see [`PausedRun`](crate::agent::PausedRun)); the calls of the step that did not
    /// wait have run. Resume it with the decisions.
    Paused {
        /// The calls that wait, in the model's order.
        pending: Vec<crate::agent::PendingCall>,
        /// Tokens used by the run so far.
        usage: Usage,
        /// Model steps taken so far.
        steps: usize,
    },
    /// The run is over: the model answered without asking for tools.
    Finished {
        /// The text of the model's last reply.
        answer: String,
        /// Tokens used by the whole run.
        usage: Usage,
        /// How many model steps the run took.
        steps: usize,
    },
}

/// The serialized shape of an [`Event`]: flat objects tagged by `type`.
#[derive(Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Repr {
    TextDelta {
        text: String,
    },
    ReplyRestarted {
        reason: String,
    },
    ContextCompacted {
        tokens_before: u64,
        tokens_after: u64,
        trimmed_tool_outputs: usize,
        summarized_messages: usize,
    },
    Usage {
        step: usize,
        #[serde(flatten)]
        usage: Usage,
        finish_reason: FinishReason,
    },
    Message {
        message: Message,
    },
    ToolCallStarted {
        id: String,
        name: String,
        arguments: Value,
    },
    ToolProgress {
        id: String,
        progress: f64,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        total: Option<f64>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        message: Option<String>,
    },
    ToolCallFinished {
        id: String,
        name: String,
        is_error: bool,
        content: String,
        duration_ms: f64,
        error_kind: Option<ToolErrorKind>,
    },
    Paused {
        pending: Vec<crate::agent::PendingCall>,
        steps: usize,
        #[serde(flatten)]
        usage: Usage,
    },
    Finished {
        answer: String,
        steps: usize,
        #[serde(flatten)]
        usage: Usage,
    },
}

/// A call's arguments as JSON: the object or array itself when they are one, else the text.
fn arguments_value(arguments: &str) -> Value {
    match serde_json::from_str::<Value>(arguments) {
        Ok(value @ (Value::Object(_) | Value::Array(_))) => value,
        _ => Value::String(arguments.to_owned()),
    }
}

fn arguments_text(value: Value) -> String {
    match value {
        Value::String(text) => text,
        other => other.to_string(),
    }
}

impl Serialize for Event {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let repr = match self.clone() {
            Event::TextDelta(text) => Repr::TextDelta { text },
            Event::ReplyRestarted { reason } => Repr::ReplyRestarted { reason },
            Event::ContextCompacted {
                tokens_before,
                tokens_after,
                trimmed_tool_outputs,
                summarized_messages,
            } => Repr::ContextCompacted {
                tokens_before,
                tokens_after,
                trimmed_tool_outputs,
                summarized_messages,
            },
            Event::Usage {
                step,
                usage,
                finish_reason,
            } => Repr::Usage {
                step,
                usage,
                finish_reason,
            },
            Event::Message(message) => Repr::Message { message },
            Event::ToolCallStarted { call } => Repr::ToolCallStarted {
                arguments: arguments_value(&call.arguments),
                id: call.id,
                name: call.name,
            },
            Event::ToolProgress {
                call_id,
                progress,
                total,
                message,
            } => Repr::ToolProgress {
                id: call_id,
                progress,
                total,
                message,
            },
            Event::ToolCallFinished {
                result,
                duration,
                error_kind,
            } => Repr::ToolCallFinished {
                id: result.call_id,
                name: result.name,
                is_error: result.is_error,
                content: result.content,
                duration_ms: duration.as_secs_f64() * 1000.0,
                error_kind,
            },
            Event::Paused {
                pending,
                usage,
                steps,
            } => Repr::Paused {
                pending,
                steps,
                usage,
            },
            Event::Finished {
                answer,
                usage,
                steps,
            } => Repr::Finished {
                answer,
                steps,
                usage,
            },
        };
        repr.serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for Event {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Ok(match Repr::deserialize(deserializer)? {
            Repr::TextDelta { text } => Event::TextDelta(text),
            Repr::ReplyRestarted { reason } => Event::ReplyRestarted { reason },
            Repr::ContextCompacted {
                tokens_before,
                tokens_after,
                trimmed_tool_outputs,
                summarized_messages,
            } => Event::ContextCompacted {
                tokens_before,
                tokens_after,
                trimmed_tool_outputs,
                summarized_messages,
            },
            Repr::Usage {
                step,
                usage,
                finish_reason,
            } => Event::Usage {
                step,
                usage,
                finish_reason,
            },
            Repr::Message { message } => Event::Message(message),
            Repr::ToolCallStarted {
                id,
                name,
                arguments,
            } => Event::ToolCallStarted {
                call: ToolCall::new(id, name, arguments_text(arguments)),
            },
            Repr::ToolProgress {
                id,
                progress,
                total,
                message,
            } => Event::ToolProgress {
                call_id: id,
                progress,
                total,
                message,
            },
            Repr::ToolCallFinished {
                id,
                name,
                is_error,
                content,
                duration_ms,
                error_kind,
            } => {
                let duration = Duration::try_from_secs_f64(duration_ms / 1000.0).map_err(|_| {
                    serde::de::Error::custom(format!(
                        "duration_ms must be a finite, non-negative number, not {duration_ms}"
                    ))
                })?;
                let result = if is_error {
                    ToolResult::error(id, name, content)
                } else {
                    ToolResult::ok(id, name, content)
                };
                Event::ToolCallFinished {
                    result,
                    duration,
                    error_kind,
                }
            }
            Repr::Paused {
                pending,
                steps,
                usage,
            } => Event::Paused {
                pending,
                usage,
                steps,
            },
            Repr::Finished {
                answer,
                steps,
                usage,
            } => Event::Finished {
                answer,
                usage,
                steps,
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::{Part, Role};
    use serde_json::json;

    fn round_trip(event: &Event) -> Value {
        let value = serde_json::to_value(event).unwrap();
        let back: Event = serde_json::from_value(value.clone()).unwrap();
        assert_eq!(&back, event, "{value}");
        value
    }

    #[test]
    fn every_event_round_trips_in_its_documented_shape() {
        assert_eq!(
            round_trip(&Event::TextDelta("北京".into())),
            json!({"type": "text_delta", "text": "北京"})
        );
        assert_eq!(
            round_trip(&Event::ReplyRestarted {
                reason: "cut".into()
            }),
            json!({"type": "reply_restarted", "reason": "cut"})
        );
        assert_eq!(
            round_trip(&Event::ContextCompacted {
                tokens_before: 9000,
                tokens_after: 3000,
                trimmed_tool_outputs: 4,
                summarized_messages: 12,
            }),
            json!({"type": "context_compacted", "tokens_before": 9000, "tokens_after": 3000,
                   "trimmed_tool_outputs": 4, "summarized_messages": 12})
        );
        assert_eq!(
            round_trip(&Event::Usage {
                step: 1,
                usage: Usage::new(80, 17).reasoning_tokens(5),
                finish_reason: FinishReason::ToolCalls,
            }),
            json!({"type": "usage", "step": 1, "input_tokens": 80, "output_tokens": 17,
                   "reasoning_tokens": 5, "finish_reason": "tool_calls"})
        );
        assert_eq!(
            round_trip(&Event::Usage {
                step: 2,
                usage: Usage::default(),
                finish_reason: FinishReason::Other("pause_turn".into()),
            }),
            json!({"type": "usage", "step": 2, "finish_reason": "pause_turn"})
        );
        let message = Message::new(
            Role::Assistant,
            vec![
                Part::text("好的"),
                ToolCall::new("c1", "get_weather", r#"{"city":"北京"}"#).into(),
            ],
        )
        .id("m1");
        assert_eq!(
            round_trip(&Event::Message(message))["message"]["parts"][1],
            json!({"type": "tool_call", "id": "c1", "name": "get_weather",
                   "arguments": "{\"city\":\"北京\"}"})
        );
        assert_eq!(
            round_trip(&Event::ToolCallStarted {
                call: ToolCall::new("c1", "get_weather", r#"{"city":"北京"}"#)
            }),
            json!({"type": "tool_call_started", "id": "c1", "name": "get_weather",
                   "arguments": {"city": "北京"}})
        );
        for raw in ["{not json", "42", "\"text\"", ""] {
            assert_eq!(
                round_trip(&Event::ToolCallStarted {
                    call: ToolCall::new("c2", "t", raw)
                })["arguments"],
                json!(raw),
                "arguments that are not an object or array stay text"
            );
        }
        assert_eq!(
            round_trip(&Event::ToolCallFinished {
                result: ToolResult::error("c1", "calculator", "除数不能为零"),
                duration: Duration::from_micros(1500),
                error_kind: Some(ToolErrorKind::InvalidInput),
            }),
            json!({"type": "tool_call_finished", "id": "c1", "name": "calculator",
                   "is_error": true, "content": "除数不能为零", "duration_ms": 1.5,
                   "error_kind": "invalid_input"})
        );
        assert_eq!(
            round_trip(&Event::Finished {
                answer: "晴".into(),
                usage: Usage::new(10, 2),
                steps: 2,
            }),
            json!({"type": "finished", "answer": "晴", "steps": 2,
                   "input_tokens": 10, "output_tokens": 2})
        );
    }

    #[test]
    fn bad_events_are_errors_not_panics() {
        for bad in [
            json!({"type": "tool_call_finished", "id": "c", "name": "t", "is_error": false,
                   "content": "", "duration_ms": -1.0, "error_kind": null}),
            json!({"type": "tool_call_finished", "id": "c", "name": "t", "is_error": false,
                   "content": "", "duration_ms": 1e300, "error_kind": null}),
            json!({"type": "no_such_event"}),
            json!({"type": "usage", "step": 1, "finish_reason": 3}),
            json!({"type": "text_delta"}),
        ] {
            assert!(
                serde_json::from_value::<Event>(bad.clone()).is_err(),
                "{bad}"
            );
        }
    }
}
