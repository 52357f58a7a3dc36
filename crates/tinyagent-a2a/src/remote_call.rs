//! One message sent to a remote A2A agent: its task and artifacts as they arrive, where the
//! task stands, and the cancellation owed when a call is dropped before the task ends.

use std::sync::Arc;

use a2a::{Message, StreamResponse, Task, TaskState};
use a2a_client::{A2AClient, Transport};

use crate::text::parts_text;

/// How long the cancellation of an abandoned task may take.
const CANCEL_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

pub(crate) fn state_words(state: TaskState) -> &'static str {
    match state {
        TaskState::Failed => "failed",
        TaskState::Rejected => "refused the task",
        TaskState::Canceled => "cancelled the task",
        TaskState::InputRequired => "asks for more input",
        TaskState::AuthRequired => "asks for authorization",
        _ => "stopped",
    }
}

/// Where a remote task stands.
pub(crate) enum Outcome {
    /// Still running; a note for the call's progress, if the update said something.
    Going(Option<String>),
    /// Done, with this answer.
    Answer(String),
    /// Over or waiting without an answer, with the agent's words.
    Stopped(TaskState, String),
}

/// One message sent to a remote agent: its task and artifacts as they arrive, and the
/// cancellation owed if the call is dropped before the task ends.
pub(crate) struct RemoteCall {
    client: Arc<A2AClient<Box<dyn Transport>>>,
    pub(crate) task_id: Option<String>,
    /// The remote context the task is in.
    pub(crate) context_id: Option<String>,
    pub(crate) artifacts: Vec<(String, String)>,
    armed: bool,
}

impl RemoteCall {
    pub(crate) fn new(client: Arc<A2AClient<Box<dyn Transport>>>) -> Self {
        Self {
            client,
            task_id: None,
            context_id: None,
            artifacts: Vec::new(),
            armed: true,
        }
    }

    pub(crate) fn disarm(&mut self) {
        self.armed = false;
    }

    fn artifact(&mut self, id: &str, text: String, append: bool) {
        match self.artifacts.iter_mut().find(|(a, _)| a == id) {
            Some((_, old)) if append => old.push_str(&text),
            Some((_, old)) => *old = text,
            None => self.artifacts.push((id.to_owned(), text)),
        }
    }

    pub(crate) fn answer_bytes(&self) -> usize {
        self.artifacts.iter().map(|(_, t)| t.len()).sum()
    }

    fn answer(&self) -> String {
        self.artifacts
            .iter()
            .map(|(_, t)| t.as_str())
            .filter(|t| !t.is_empty())
            .collect::<Vec<_>>()
            .join("\n")
    }

    fn settle(&self, state: TaskState, message: Option<&Message>) -> Outcome {
        let said = message.map(|m| parts_text(&m.parts)).unwrap_or_default();
        match state {
            TaskState::Completed => {
                let answer = self.answer();
                Outcome::Answer(if answer.is_empty() { said } else { answer })
            }
            TaskState::Failed
            | TaskState::Rejected
            | TaskState::Canceled
            | TaskState::InputRequired
            | TaskState::AuthRequired => Outcome::Stopped(state, said),
            _ => Outcome::Going((!said.is_empty()).then_some(said)),
        }
    }

    pub(crate) fn task(&mut self, task: Task) -> Outcome {
        self.task_id = Some(task.id.clone());
        self.context_id = Some(task.context_id.clone());
        for artifact in task.artifacts.iter().flatten() {
            self.artifact(&artifact.artifact_id, parts_text(&artifact.parts), false);
        }
        self.settle(task.status.state, task.status.message.as_ref())
    }

    pub(crate) fn event(&mut self, event: StreamResponse) -> Outcome {
        match event {
            StreamResponse::Message(m) => {
                self.context_id = m.context_id.clone().or(self.context_id.take());
                Outcome::Answer(parts_text(&m.parts))
            }
            StreamResponse::Task(task) => self.task(task),
            StreamResponse::StatusUpdate(update) => {
                self.task_id = Some(update.task_id.clone());
                self.context_id = Some(update.context_id.clone());
                self.settle(update.status.state, update.status.message.as_ref())
            }
            StreamResponse::ArtifactUpdate(update) => {
                self.task_id = Some(update.task_id.clone());
                self.context_id = Some(update.context_id.clone());
                let text = parts_text(&update.artifact.parts);
                self.artifact(
                    &update.artifact.artifact_id,
                    text,
                    update.append.unwrap_or(false),
                );
                Outcome::Going(None)
            }
        }
    }

    pub(crate) fn ended(&self) -> Outcome {
        Outcome::Going(None)
    }
}

impl Drop for RemoteCall {
    fn drop(&mut self) {
        let (true, Some(id)) = (self.armed, self.task_id.take()) else {
            return;
        };
        let client = self.client.clone();
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                let request = a2a::CancelTaskRequest {
                    id,
                    metadata: None,
                    tenant: None,
                };
                match tokio::time::timeout(CANCEL_TIMEOUT, client.cancel_task(&request)).await {
                    Ok(Ok(_)) => {}
                    Ok(Err(err)) => {
                        tracing::debug!(error = %err, "cancelling an abandoned remote task");
                    }
                    Err(_) => tracing::debug!("cancelling an abandoned remote task: no answer"),
                }
            });
        }
    }
}
