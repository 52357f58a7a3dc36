//! Helpers for the providers' loopback tests (feature `testing`): a model's whole stream
//! within a bound, what it showed, replies served in order, a server that drips a body
//! forever, and the run of a spec validator script.

use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt;
use serde_json::Value;
use tinyagent::{Agent, Event};
use tinyagent_core::{Invocation, Model, ModelError, ModelRequest, Session, model::ModelEvent};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use wiremock::{Request, Respond, ResponseTemplate};

/// The longest a test waits for a model before it fails (a bound, not a measurement).
pub const BOUND: Duration = Duration::from_secs(60);

/// The head of a chunked `text/event-stream` response.
pub const SSE_HEAD: &str =
    "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n";

/// All items of `model`'s stream for `req`, within [`BOUND`]: the events, and the error that
/// ended it, if any. Panics when an item follows an error or the bound passes.
pub async fn stream_all(
    model: &dyn Model,
    req: &ModelRequest,
) -> (Vec<ModelEvent>, Option<ModelError>) {
    let run = async {
        let mut events = Vec::new();
        let mut stream = model.stream(req);
        while let Some(item) = stream.next().await {
            match item {
                Ok(e) => events.push(e),
                Err(e) => {
                    assert!(stream.next().await.is_none(), "nothing after an error");
                    return (events, Some(e));
                }
            }
        }
        (events, None)
    };
    tokio::time::timeout(BOUND, run)
        .await
        .expect("the stream did not end within the bound")
}

/// What one question to `agent` in `session` did, within [`BOUND`]: the tool calls made
/// (name and arguments), the tools' results and the answer. Panics on an error, a failed
/// call or arguments that are not JSON.
pub async fn ask_agent(
    agent: &dyn Agent,
    session: &Session,
    question: &str,
) -> (Vec<(String, Value)>, Vec<String>, String) {
    let mut events = agent.run(Invocation::new(session.clone(), question));
    let (mut calls, mut results, mut answer) = (Vec::new(), Vec::new(), None);
    let drive = async {
        while let Some(event) = events.next().await {
            match event.expect("no error") {
                Event::ToolCallStarted { call } => calls.push((
                    call.name.clone(),
                    serde_json::from_str(&call.arguments).expect("JSON arguments"),
                )),
                Event::ToolCallFinished { result, .. } => {
                    assert!(!result.is_error, "{result:?}");
                    results.push(result.content.clone());
                }
                Event::Finished { answer: a, .. } => answer = Some(a),
                _ => {}
            }
        }
    };
    tokio::time::timeout(BOUND, drive).await.expect("bounded");
    (calls, results, answer.expect("the run finished"))
}

/// The text deltas joined.
pub fn text_of(events: &[ModelEvent]) -> String {
    events
        .iter()
        .filter_map(|e| match e {
            ModelEvent::TextDelta(t) => Some(t.as_str()),
            _ => None,
        })
        .collect()
}

/// The reasons of the restart events.
pub fn restarts(events: &[ModelEvent]) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| match e {
            ModelEvent::Restart { reason } => Some(reason.clone()),
            _ => None,
        })
        .collect()
}

/// The text of the final response; panics when the stream did not end with one.
pub fn final_text(events: &[ModelEvent]) -> String {
    match events.last() {
        Some(ModelEvent::Done(resp)) => resp.message.text(),
        other => panic!("the stream must end with Done, ended with {other:?}"),
    }
}

/// Replies in order, one per request; the last one again once they are spent.
pub struct Sequence(Mutex<Vec<ResponseTemplate>>, AtomicUsize);

impl Sequence {
    /// These replies, in order (at least one).
    pub fn new(replies: Vec<ResponseTemplate>) -> Self {
        assert!(!replies.is_empty(), "a sequence of no replies");
        Self(Mutex::new(replies), AtomicUsize::new(0))
    }
}

impl Respond for Sequence {
    fn respond(&self, _: &Request) -> ResponseTemplate {
        let replies = self.0.lock().unwrap_or_else(|p| p.into_inner());
        let i = self.1.fetch_add(1, Ordering::SeqCst).min(replies.len() - 1);
        replies[i].clone()
    }
}

/// A server on 127.0.0.1 that answers every connection with `head`, then writes `chunk`
/// (chunked) every `every` until the client goes away; its base URL and a count of the
/// connections.
pub async fn dripping_server(
    head: &'static str,
    chunk: String,
    every: Duration,
) -> (String, Arc<AtomicUsize>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind 127.0.0.1");
    let addr = listener.local_addr().expect("an address");
    let connections = Arc::new(AtomicUsize::new(0));
    let counter = connections.clone();
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            counter.fetch_add(1, Ordering::SeqCst);
            // Each chunk goes out when written, not when the client's delayed ACK comes.
            let _ = socket.set_nodelay(true);
            let chunk = chunk.clone();
            tokio::spawn(async move {
                let mut buf = vec![0u8; 64 * 1024];
                let _ = socket.read(&mut buf).await;
                if socket.write_all(head.as_bytes()).await.is_err() {
                    return;
                }
                let framed = format!("{:x}\r\n{chunk}\r\n", chunk.len());
                loop {
                    if socket.write_all(framed.as_bytes()).await.is_err() {
                        return;
                    }
                    tokio::time::sleep(every).await;
                }
            });
        }
    });
    (format!("http://{addr}"), connections)
}

/// Runs the Python validator `script` with `args`; panics with its report when what it
/// checks (`what`) is invalid, and with `hint` when Python or a package is missing (exit
/// status 2).
pub fn run_validator(script: &Path, args: &[&Path], what: &str, hint: &str) {
    let out = Command::new("python3")
        .arg(script)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("could not run python3 ({e}); {hint}"));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    match out.status.code() {
        Some(0) => {}
        Some(2) => panic!("{hint}\n{stderr}"),
        _ => panic!("{what} are not valid:\n{stdout}\n{stderr}"),
    }
}
