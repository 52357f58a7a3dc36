//! Tool calls that wait for the client on MCP 2026-07-28 and later, where a server may not
//! send requests of its own: a tool's sampling or elicitation request ends the `tools/call`
//! with an input-required result, and the call waits on the server (its future kept running)
//! until the client retries with the answers and the `requestState` it was given.
//!
//! The state is an opaque, unguessable handle to the waiting call (128 bits); nothing
//! the client echoes is trusted beyond finding that call. A call nobody resumes is dropped
//! after [`WAIT_LIMIT`], and at most [`MAX_WAITING`] calls wait at once.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use rmcp::ErrorData;
use rmcp::model::{
    CallToolResponse, CallToolResult, InputRequest, InputRequiredResult, InputResponses,
};
use serde_json::Value;
use tinyagent::ToolError;
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// How long a call waits for the client to retry with its answers before it is dropped.
pub(crate) const WAIT_LIMIT: Duration = Duration::from_secs(10 * 60);

/// How many calls may wait for their clients at once; a tool asking beyond that gets an error.
pub(crate) const MAX_WAITING: usize = 1024;

/// One question of a running tool to the client, and where its answer goes.
pub(crate) struct Question {
    request: InputRequest,
    answer: oneshot::Sender<Value>,
}

/// A tool's way of asking the client (the [`ToolHost`](tinyagent::host::ToolHost)'s end).
#[derive(Clone)]
pub(crate) struct Asker(mpsc::UnboundedSender<Question>);

impl Asker {
    /// Asks the client `request` and waits for its answer (the result object of the request).
    pub(crate) async fn ask(&self, request: InputRequest) -> Result<Value, ToolError> {
        let (answer, answered) = oneshot::channel();
        let gone = || {
            ToolError::unavailable(
                "the MCP client did not answer: the call was dropped before it retried",
            )
            .retryable(false)
        };
        self.0
            .send(Question { request, answer })
            .map_err(|_| gone())?;
        answered.await.map_err(|_| gone())
    }
}

/// A call in flight: the task running the tool, the questions it may still ask, and those it
/// asked that wait for an answer (by the key the client answers them under).
pub(crate) struct Call {
    tool: String,
    task: JoinHandle<Result<CallToolResult, ErrorData>>,
    questions: mpsc::UnboundedReceiver<Question>,
    asked: BTreeMap<String, Question>,
    next_key: u64,
}

impl Call {
    /// Starts `run` (the tool call, given the asker it should use) on a task of its own.
    pub(crate) fn start<F>(tool: &str, run: impl FnOnce(Asker) -> F) -> Self
    where
        F: Future<Output = Result<CallToolResult, ErrorData>> + Send + 'static,
    {
        let (tx, questions) = mpsc::unbounded_channel();
        Self {
            tool: tool.to_owned(),
            task: tokio::spawn(run(Asker(tx))),
            questions,
            asked: BTreeMap::new(),
            next_key: 0,
        }
    }

    fn take_question(&mut self, question: Question) {
        self.next_key += 1;
        let kind = match &question.request {
            InputRequest::CreateMessage(_) => "sampling",
            InputRequest::Elicitation(_) => "elicitation",
            _ => "input",
        };
        self.asked
            .insert(format!("{kind}-{}", self.next_key), question);
    }

    /// Hands the client's answers to the questions they answer; the others stay asked.
    fn answer(&mut self, answers: InputResponses) {
        for (key, value) in answers {
            if let Some(question) = self.asked.remove(&key) {
                // The tool may have stopped waiting (a timeout of its own); nothing to do then.
                let _ = question.answer.send(value);
            }
        }
    }
}

impl Drop for Call {
    fn drop(&mut self) {
        // A call nobody will resume stops running.
        self.task.abort();
    }
}

/// The calls waiting for their clients, by `requestState`.
#[derive(Clone, Default)]
pub(crate) struct Waiting(Arc<Mutex<HashMap<String, Parked>>>);

struct Parked {
    call: Call,
    expiry: JoinHandle<()>,
}

impl Waiting {
    /// The call a retry's `requestState` names, answered with its `inputResponses`.
    pub(crate) fn resume(
        &self,
        state: &str,
        tool: &str,
        answers: Option<InputResponses>,
    ) -> Result<Call, ErrorData> {
        let parked = {
            let mut waiting = self.0.lock().unwrap_or_else(PoisonError::into_inner);
            match waiting.get(state) {
                Some(parked) if parked.call.tool != tool => {
                    return Err(ErrorData::invalid_params(
                        format!(
                            "the requestState belongs to a call to `{}`, not `{tool}`",
                            parked.call.tool
                        ),
                        None,
                    ));
                }
                _ => waiting.remove(state),
            }
        };
        let Some(Parked { mut call, expiry }) = parked else {
            return Err(ErrorData::invalid_params(
                "unknown or expired requestState: the call it named has finished, was dropped \
                 after waiting too long, or never existed; call the tool again without it",
                None,
            ));
        };
        expiry.abort();
        call.answer(answers.unwrap_or_default());
        Ok(call)
    }

    /// Runs `call` until it finishes (its result) or asks the client something (an
    /// input-required result; the call waits here for the retry). `cancelled` drops it.
    pub(crate) async fn drive(
        &self,
        mut call: Call,
        cancelled: CancellationToken,
    ) -> Result<CallToolResponse, ErrorData> {
        loop {
            if !call.asked.is_empty() {
                // Questions unanswered by the last retry are asked again, with any new ones.
                while let Ok(question) = call.questions.try_recv() {
                    call.take_question(question);
                }
                return self.ask(call);
            }
            tokio::select! {
                biased;
                finished = &mut call.task => {
                    return match finished {
                        Ok(result) => result.map(CallToolResponse::Complete),
                        Err(e) => Err(ErrorData::internal_error(
                            format!("the call to `{}` stopped: {e}", call.tool),
                            None,
                        )),
                    };
                }
                Some(question) = call.questions.recv() => {
                    call.take_question(question);
                    // A tool asking several things at once asks them in one result.
                    tokio::task::yield_now().await;
                }
                () = cancelled.cancelled() => {
                    return Err(ErrorData::internal_error(
                        format!("the call to `{}` was cancelled", call.tool),
                        None,
                    ));
                }
            }
        }
    }

    /// Parks `call` and answers with its questions.
    fn ask(&self, call: Call) -> Result<CallToolResponse, ErrorData> {
        let requests: BTreeMap<String, InputRequest> = call
            .asked
            .iter()
            .map(|(key, q)| (key.clone(), q.request.clone()))
            .collect();
        let state = self.park(call)?;
        Ok(CallToolResponse::InputRequired(InputRequiredResult::new(
            Some(requests),
            Some(state),
        )))
    }

    /// Keeps `call` until it is resumed or [`WAIT_LIMIT`] passes; its `requestState`.
    fn park(&self, call: Call) -> Result<String, ErrorData> {
        let mut waiting = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if waiting.len() >= MAX_WAITING {
            return Err(ErrorData::internal_error(
                format!(
                    "too many calls are waiting for their clients' answers ({MAX_WAITING}); \
                     the call to `{}` was dropped, try again later",
                    call.tool
                ),
                None,
            ));
        }
        let state = request_state();
        let this = self.clone();
        let key = state.clone();
        let expiry = tokio::spawn(async move {
            tokio::time::sleep(WAIT_LIMIT).await;
            let dropped = this
                .0
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .remove(&key);
            if let Some(parked) = dropped {
                tracing::info!(tool = %parked.call.tool,
                    "a call waited too long for its client's answers; dropped");
            }
        });
        waiting.insert(state.clone(), Parked { call, expiry });
        Ok(state)
    }

    /// How many calls wait.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).len()
    }
}

/// 128 unpredictable bits: two ids from the process-keyed generator.
fn request_state() -> String {
    let a = tinyagent::store::new_id("w");
    let b = tinyagent::store::new_id("w");
    format!("{}{}", &a[2..], &b[2..])
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmcp::model::{ElicitRequest, ElicitRequestParams};
    use serde_json::json;

    fn elicitation(message: &str) -> InputRequest {
        let params: ElicitRequestParams = serde_json::from_value(json!({
            "mode": "form", "message": message,
            "requestedSchema": {"type": "object", "properties": {}}
        }))
        .unwrap();
        InputRequest::Elicitation(ElicitRequest::new(params))
    }

    fn asking_twice() -> Call {
        Call::start("ask", |asker| async move {
            let first = asker.ask(elicitation("one?")).await.unwrap();
            let second = asker.ask(elicitation("two?")).await.unwrap();
            Ok(CallToolResult::success(vec![
                rmcp::model::ContentBlock::text(format!("{first} {second}")),
            ]))
        })
    }

    fn input_required(response: CallToolResponse) -> InputRequiredResult {
        match response {
            CallToolResponse::InputRequired(r) => r,
            _ => panic!("expected an input-required result"),
        }
    }

    #[tokio::test]
    async fn a_call_asks_waits_and_finishes_over_two_retries() {
        let waiting = Waiting::default();
        let ct = CancellationToken::new();
        let first = input_required(waiting.drive(asking_twice(), ct.clone()).await.unwrap());
        let keys: Vec<_> = first.input_requests.unwrap().into_keys().collect();
        assert_eq!(keys, ["elicitation-1"]);
        let state = first.request_state.unwrap();
        assert_eq!(state.len(), 32);
        assert_eq!(waiting.len(), 1);

        // Another tool's name, or no answers, leaves the call waiting.
        assert!(waiting.resume(&state, "other", None).is_err());
        let call = waiting.resume(&state, "ask", None).unwrap();
        let again = input_required(waiting.drive(call, ct.clone()).await.unwrap());
        assert_eq!(
            again
                .input_requests
                .as_ref()
                .unwrap()
                .keys()
                .collect::<Vec<_>>(),
            ["elicitation-1"],
            "an unanswered question is asked again"
        );
        let state = again.request_state.unwrap();

        let call = waiting
            .resume(
                &state,
                "ask",
                Some(BTreeMap::from([("elicitation-1".into(), json!(1))])),
            )
            .unwrap();
        let second = input_required(waiting.drive(call, ct.clone()).await.unwrap());
        assert_eq!(
            second
                .input_requests
                .unwrap()
                .into_keys()
                .collect::<Vec<_>>(),
            ["elicitation-2"]
        );
        let state = second.request_state.unwrap();
        let call = waiting
            .resume(
                &state,
                "ask",
                Some(BTreeMap::from([("elicitation-2".into(), json!(2))])),
            )
            .unwrap();
        let CallToolResponse::Complete(done) = waiting.drive(call, ct).await.unwrap() else {
            panic!("expected the call's result");
        };
        assert_eq!(done.content[0].as_text().unwrap().text, "1 2");
        assert_eq!(waiting.len(), 0);
        let Err(stale) = waiting.resume(&state, "ask", None) else {
            panic!("a finished call cannot be resumed");
        };
        assert!(stale.message.contains("unknown or expired requestState"));
    }

    #[tokio::test(start_paused = true)]
    async fn a_call_nobody_resumes_is_dropped_after_the_wait_limit() {
        let waiting = Waiting::default();
        let (dropped_tx, dropped) = oneshot::channel::<()>();
        let call = Call::start("ask", |asker| async move {
            let _guard = DropSignal(Some(dropped_tx));
            let _ = asker.ask(elicitation("one?")).await;
            Ok(CallToolResult::success(vec![]))
        });
        let first = input_required(waiting.drive(call, CancellationToken::new()).await.unwrap());
        tokio::time::sleep(WAIT_LIMIT + Duration::from_secs(1)).await;
        assert_eq!(waiting.len(), 0);
        // The tool's future was dropped, not left running.
        let signal = tokio::time::timeout(Duration::from_secs(1), dropped).await;
        assert!(matches!(signal, Ok(Err(_))), "the tool still runs");
        let state = first.request_state.unwrap();
        assert!(waiting.resume(&state, "ask", None).is_err());
    }

    struct DropSignal(Option<oneshot::Sender<()>>);
    impl Drop for DropSignal {
        fn drop(&mut self) {
            self.0.take();
        }
    }
}
