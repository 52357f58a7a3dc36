//! A task store with a bound: it keeps the newest tasks, forgetting the oldest finished ones
//! to make room, so a server's memory does not grow with every task ever sent.

use std::collections::{HashMap, VecDeque};
use std::sync::{Mutex, MutexGuard, PoisonError};

use a2a::{A2AError, ListTasksRequest, ListTasksResponse, Task, TaskId, TaskState};
use a2a_server::TaskStore;
use a2a_server::pagination::resolve_page_size;
use async_trait::async_trait;

/// How many tasks a store keeps by default (per tenant on `tinyagent serve`).
pub const DEFAULT_MAX_TASKS: usize = 1000;

/// How many bytes of tasks (their messages and artifacts, roughly) a store keeps.
pub(crate) const MAX_TASK_BYTES: usize = 32 << 20;

pub(crate) struct BoundedTaskStore {
    max: usize,
    max_bytes: usize,
    inner: Mutex<Inner>,
}

#[derive(Default)]
struct Inner {
    /// Each task, its version and its size.
    tasks: HashMap<TaskId, (Task, u64, usize)>,
    /// Task ids, oldest first.
    order: VecDeque<TaskId>,
    bytes: usize,
}

/// About how many bytes a task holds: its messages' and artifacts' parts.
fn weight(task: &Task) -> usize {
    let parts = |parts: &[a2a::Part]| -> usize {
        parts
            .iter()
            .map(|p| {
                64 + match &p.content {
                    a2a::PartContent::Text(t) | a2a::PartContent::Url(t) => t.len(),
                    a2a::PartContent::Raw(b) => b.len(),
                    a2a::PartContent::Data(v) => v.to_string().len(),
                }
            })
            .sum()
    };
    let messages: usize = task.history.iter().flatten().map(|m| parts(&m.parts)).sum();
    let artifacts: usize = task
        .artifacts
        .iter()
        .flatten()
        .map(|a| parts(&a.parts))
        .sum();
    let status = task.status.message.as_ref().map_or(0, |m| parts(&m.parts));
    256 + messages + artifacts + status
}

impl Inner {
    /// Forgets the oldest task at rest; false when every task is busy.
    fn evict_one(&mut self) -> bool {
        let Some(at) = self.order.iter().position(|id| {
            self.tasks
                .get(id)
                .is_none_or(|(t, _, _)| at_rest(&t.status.state))
        }) else {
            return false;
        };
        if let Some(id) = self.order.remove(at) {
            if let Some((_, _, size)) = self.tasks.remove(&id) {
                self.bytes -= size;
            }
        }
        true
    }
}

/// A task nothing will write to again unless a client sends to it: finished, or waiting.
fn at_rest(state: &TaskState) -> bool {
    state.is_terminal() || matches!(state, TaskState::InputRequired | TaskState::AuthRequired)
}

impl BoundedTaskStore {
    pub(crate) fn new(max: usize) -> Self {
        Self::with_bytes(max, MAX_TASK_BYTES)
    }

    fn with_bytes(max: usize, max_bytes: usize) -> Self {
        Self {
            max: max.max(1),
            max_bytes,
            inner: Mutex::default(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[async_trait]
impl TaskStore for BoundedTaskStore {
    async fn create(&self, task: Task) -> Result<u64, A2AError> {
        let mut inner = self.lock();
        if inner.tasks.contains_key(&task.id) {
            return Err(A2AError::invalid_request(format!(
                "task {} already exists",
                task.id
            )));
        }
        let size = weight(&task);
        while inner.tasks.len() >= self.max || inner.bytes + size > self.max_bytes {
            if inner.tasks.is_empty() {
                break;
            }
            if !inner.evict_one() {
                return Err(A2AError::unsupported_operation(format!(
                    "this server keeps at most {} tasks ({} MiB) for you and all of them are \
                     running; retry when one has finished",
                    self.max,
                    self.max_bytes >> 20
                )));
            }
        }
        inner.order.push_back(task.id.clone());
        inner.bytes += size;
        inner.tasks.insert(task.id.clone(), (task, 1, size));
        Ok(1)
    }

    async fn update(&self, task: Task) -> Result<u64, A2AError> {
        let mut inner = self.lock();
        let (stored, version, size) = inner
            .tasks
            .get_mut(&task.id)
            .ok_or_else(|| A2AError::task_not_found(&task.id))?;
        if stored.status.state.is_terminal() && stored.status.state != task.status.state {
            return Err(A2AError::invalid_request(format!(
                "task {} is over ({:?}) and cannot become {:?}",
                task.id, stored.status.state, task.status.state
            )));
        }
        let (old, new) = (*size, weight(&task));
        *version += 1;
        *stored = task;
        *size = new;
        let version = *version;
        inner.bytes = inner.bytes - old + new;
        // A task that grew past the budget makes room by forgetting older ones at rest.
        while inner.bytes > self.max_bytes && inner.evict_one() {}
        Ok(version)
    }

    async fn get(&self, task_id: &str) -> Result<Option<Task>, A2AError> {
        Ok(self.lock().tasks.get(task_id).map(|(t, _, _)| t.clone()))
    }

    async fn list(&self, req: &ListTasksRequest) -> Result<ListTasksResponse, A2AError> {
        let inner = self.lock();
        let matching: Vec<&Task> = inner
            .order
            .iter()
            .rev()
            .filter_map(|id| inner.tasks.get(id).map(|(t, _, _)| t))
            .filter(|t| req.context_id.as_ref().is_none_or(|c| t.context_id == *c))
            .filter(|t| req.status.as_ref().is_none_or(|s| t.status.state == *s))
            .filter(|t| {
                req.status_timestamp_after
                    .is_none_or(|after| t.status.timestamp.is_some_and(|at| at > after))
            })
            .collect();
        let page_size = resolve_page_size(req.page_size);
        let start = match &req.page_token {
            Some(token) if !token.is_empty() => token
                .parse::<usize>()
                .map_err(|_| A2AError::invalid_params("invalid page token"))?,
            _ => 0,
        }
        .min(matching.len());
        let end = start.saturating_add(page_size).min(matching.len());
        let include_artifacts = req.include_artifacts.unwrap_or(false);
        let tasks = matching[start..end]
            .iter()
            .map(|t| {
                let mut task = (*t).clone();
                if !include_artifacts {
                    task.artifacts = None;
                }
                task
            })
            .collect();
        Ok(ListTasksResponse {
            tasks,
            next_page_token: if end < matching.len() {
                end.to_string()
            } else {
                String::new()
            },
            page_size: i32::try_from(page_size).unwrap_or(i32::MAX),
            total_size: i32::try_from(matching.len()).unwrap_or(i32::MAX),
        })
    }

    async fn begin_cancel(&self, task_id: &str) -> Result<Task, A2AError> {
        let mut inner = self.lock();
        let (task, version, _) = inner
            .tasks
            .get_mut(task_id)
            .ok_or_else(|| A2AError::task_not_found(task_id))?;
        if task.status.state.is_terminal() {
            return Err(A2AError::task_not_cancelable(task_id));
        }
        *version += 1;
        task.status.state = TaskState::Canceled;
        task.status.timestamp = Some(chrono::Utc::now());
        Ok(task.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use a2a::TaskStatus;

    fn task(id: &str, state: TaskState) -> Task {
        Task {
            id: id.into(),
            context_id: "c".into(),
            status: TaskStatus {
                state,
                message: None,
                timestamp: None,
            },
            artifacts: None,
            history: None,
            metadata: None,
        }
    }

    fn all() -> ListTasksRequest {
        serde_json::from_str("{}").unwrap()
    }

    #[tokio::test]
    async fn the_oldest_finished_task_makes_room_and_running_ones_are_kept() {
        let store = BoundedTaskStore::new(2);
        store.create(task("a", TaskState::Working)).await.unwrap();
        store.create(task("b", TaskState::Completed)).await.unwrap();
        store.create(task("c", TaskState::Working)).await.unwrap();
        assert!(store.get("a").await.unwrap().is_some(), "a runs: kept");
        assert!(
            store.get("b").await.unwrap().is_none(),
            "b was the oldest at rest"
        );
        let err = store
            .create(task("d", TaskState::Submitted))
            .await
            .unwrap_err();
        assert!(err.to_string().contains("at most 2"), "{err}");
        store.update(task("a", TaskState::Failed)).await.unwrap();
        store.create(task("d", TaskState::Submitted)).await.unwrap();
        assert!(store.get("a").await.unwrap().is_none());
        let listed = store.list(&all()).await.unwrap();
        let ids: Vec<_> = listed.tasks.iter().map(|t| t.id.as_str()).collect();
        assert_eq!(ids, ["d", "c"], "newest first");
    }

    #[tokio::test]
    async fn the_bytes_kept_are_bounded_too() {
        let store = BoundedTaskStore::with_bytes(100, 2_200);
        let mut big = task("a", TaskState::Completed);
        big.history = Some(vec![a2a::Message::new(
            a2a::Role::User,
            vec![a2a::Part::text("x".repeat(1_500))],
        )]);
        store.create(big).await.unwrap();
        store.create(task("b", TaskState::Working)).await.unwrap();
        assert!(store.get("a").await.unwrap().is_some(), "under the budget");
        let mut bigger = task("c", TaskState::Submitted);
        bigger.history = Some(vec![a2a::Message::new(
            a2a::Role::User,
            vec![a2a::Part::text("y".repeat(1_000))],
        )]);
        store.create(bigger).await.unwrap();
        assert!(
            store.get("a").await.unwrap().is_none(),
            "forgotten to make room"
        );
        assert!(
            store.get("b").await.unwrap().is_some(),
            "a running task stays"
        );
    }

    #[tokio::test]
    async fn a_finished_task_stays_finished() {
        let store = BoundedTaskStore::new(4);
        store.create(task("a", TaskState::Completed)).await.unwrap();
        assert!(store.update(task("a", TaskState::Working)).await.is_err());
        assert!(store.begin_cancel("a").await.is_err());
        assert!(store.begin_cancel("nope").await.is_err());
    }
}
