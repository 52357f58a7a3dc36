//! One run of an agent as the events of an A2A task: text as it streams becomes the `answer`
//! artifact, tool calls and progress become `working` status updates carrying the event as a
//! data part, and the run's end becomes the task's final state.

use a2a::{
    Artifact, Part, StreamResponse, TaskArtifactUpdateEvent, TaskState, TaskStatus,
    TaskStatusUpdateEvent,
};
use serde_json::json;
use tinyagent::Event;

use crate::text::agent_message;

/// The id of the artifact that holds the agent's answer.
pub const ANSWER_ARTIFACT: &str = "answer";

/// The metadata key under which status updates carry the tinyagent event they report.
pub const EVENT_METADATA_KEY: &str = "tinyagent/event";

/// The task a run reports to, and what it has reported so far.
pub(crate) struct Turn {
    task_id: String,
    context_id: String,
    /// Text has been appended to the answer artifact since the step began.
    streamed: bool,
}

impl Turn {
    pub(crate) fn new(task_id: String, context_id: String) -> Self {
        Self {
            task_id,
            context_id,
            streamed: false,
        }
    }

    /// A status update; `text` becomes the status message.
    pub(crate) fn status(&self, state: TaskState, text: Option<String>) -> StreamResponse {
        let message =
            text.map(|t| agent_message(&self.task_id, &self.context_id, vec![Part::text(t)]));
        StreamResponse::StatusUpdate(TaskStatusUpdateEvent {
            task_id: self.task_id.clone(),
            context_id: self.context_id.clone(),
            status: TaskStatus {
                state,
                message,
                timestamp: Some(chrono::Utc::now()),
            },
            metadata: None,
        })
    }

    fn answer(&self, text: String, append: bool, last: bool) -> StreamResponse {
        StreamResponse::ArtifactUpdate(TaskArtifactUpdateEvent {
            task_id: self.task_id.clone(),
            context_id: self.context_id.clone(),
            artifact: Artifact {
                artifact_id: ANSWER_ARTIFACT.to_owned(),
                name: Some(ANSWER_ARTIFACT.to_owned()),
                description: None,
                parts: vec![Part::text(text)],
                metadata: None,
                extensions: None,
            },
            append: Some(append),
            last_chunk: Some(last),
            metadata: None,
        })
    }

    /// A `working` update carrying `event` as a data part (and in its metadata).
    fn progress(&self, event: &Event) -> StreamResponse {
        let value = serde_json::to_value(event).unwrap_or_else(|_| json!({}));
        let parts = vec![Part::data(value.clone())];
        StreamResponse::StatusUpdate(TaskStatusUpdateEvent {
            task_id: self.task_id.clone(),
            context_id: self.context_id.clone(),
            status: TaskStatus {
                state: TaskState::Working,
                message: Some(agent_message(&self.task_id, &self.context_id, parts)),
                timestamp: Some(chrono::Utc::now()),
            },
            metadata: Some([(EVENT_METADATA_KEY.to_owned(), value)].into()),
        })
    }

    /// What the task reports for one event of the run; `None` for events a client has no
    /// use for (usage per step, a step's complete message, compaction).
    pub(crate) fn event(&mut self, event: Event) -> Vec<StreamResponse> {
        match event {
            Event::TextDelta(text) if text.is_empty() => Vec::new(),
            Event::TextDelta(text) => {
                let append = self.streamed;
                self.streamed = true;
                vec![self.answer(text, append, false)]
            }
            // The text shown so far is void: the next delta replaces the artifact.
            Event::ReplyRestarted { .. } => {
                self.streamed = false;
                Vec::new()
            }
            Event::ToolCallStarted { .. }
            | Event::ToolProgress { .. }
            | Event::ToolCallFinished { .. } => {
                // A step that called tools is over; its text is not the answer.
                self.streamed = false;
                vec![self.progress(&event)]
            }
            Event::Paused { ref pending, .. } => {
                let calls: Vec<String> = pending
                    .iter()
                    .map(|p| format!("{} ({})", p.call.name, p.call.id))
                    .collect();
                vec![
                    self.progress(&event),
                    self.status(
                        TaskState::InputRequired,
                        Some(format!(
                            "the run is paused: {} wait for a decision. To go on, send this \
                             task a message with a data part {{\"decisions\": {{\"<call id>\": \
                             \"approve\"}}}} (or {{\"deny\": \"why\"}} for a call)",
                            calls.join(", ")
                        )),
                    ),
                ]
            }
            Event::Finished { answer, usage, .. } => {
                let done = self.status(TaskState::Completed, Some(answer.clone()));
                let mut done_meta = done;
                if let StreamResponse::StatusUpdate(update) = &mut done_meta {
                    update.metadata = serde_json::to_value(usage)
                        .ok()
                        .map(|u| [("tinyagent/usage".to_owned(), u)].into());
                }
                vec![self.answer(answer, false, true), done_meta]
            }
            _ => Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tinyagent::{ToolCall, Usage};

    fn kind(event: &StreamResponse) -> String {
        match event {
            StreamResponse::StatusUpdate(u) => format!("status:{:?}", u.status.state),
            StreamResponse::ArtifactUpdate(a) => format!(
                "artifact:{}:{}:{}",
                crate::text::parts_text(&a.artifact.parts),
                a.append.unwrap_or(false),
                a.last_chunk.unwrap_or(false)
            ),
            StreamResponse::Task(_) => "task".into(),
            StreamResponse::Message(_) => "message".into(),
        }
    }

    #[test]
    fn a_run_becomes_artifact_chunks_progress_and_a_final_state() {
        let mut turn = Turn::new("t".into(), "c".into());
        let call = ToolCall::new("call_1", "get_weather", r#"{"city":"北京"}"#);
        let events = [
            Event::TextDelta("Let me ".into()),
            Event::TextDelta("check.".into()),
            Event::ToolCallStarted { call },
            Event::TextDelta("晴".into()),
            Event::TextDelta("朗".into()),
            Event::Finished {
                answer: "晴朗".into(),
                usage: Usage::default(),
                steps: 2,
            },
        ];
        let out: Vec<String> = events
            .into_iter()
            .flat_map(|e| turn.event(e))
            .map(|e| kind(&e))
            .collect();
        assert_eq!(
            out,
            [
                "artifact:Let me :false:false",
                "artifact:check.:true:false",
                "status:Working",
                "artifact:晴:false:false",
                "artifact:朗:true:false",
                "artifact:晴朗:false:true",
                "status:Completed",
            ]
        );
    }

    #[test]
    fn a_tool_event_travels_as_a_data_part() {
        let mut turn = Turn::new("t".into(), "c".into());
        let call = ToolCall::new("call_1", "calculator", r#"{"a":7,"b":8}"#);
        let out = turn.event(Event::ToolCallStarted { call });
        let StreamResponse::StatusUpdate(update) = &out[0] else {
            panic!("{out:?}")
        };
        let message = update.status.message.as_ref().unwrap();
        let a2a::PartContent::Data(data) = &message.parts[0].content else {
            panic!("{message:?}")
        };
        assert_eq!(data["type"], "tool_call_started");
        assert_eq!(data["name"], "calculator");
        assert_eq!(data["arguments"]["b"], 8);
        assert_eq!(update.metadata.as_ref().unwrap()[EVENT_METADATA_KEY], *data);
    }
}
