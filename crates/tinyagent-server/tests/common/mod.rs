//! What the server tests share: a model and a tool that wait to be let through, a server on an
//! ephemeral loopback port, and a reader of server-sent events.
#![allow(dead_code)]

pub mod priced;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use serde_json::{Value, json};
use tinyagent::testing::ScriptedModel;
use tinyagent::{LlmAgent, Model, ModelError, ModelRequest, ModelResponse, Tool, ToolError};
use tinyagent_server::Server;
use tokio::sync::{Notify, Semaphore, oneshot};

/// How long a test waits for something that should happen before it fails.
pub const PATIENCE: Duration = Duration::from_secs(20);

/// A scripted model whose replies each wait for a pass: [`GatedModel::open`] lets replies
/// through, so a test holds a run in flight as long as it needs.
pub struct GatedModel {
    pub script: ScriptedModel,
    gate: Semaphore,
    /// Notified whenever a request arrives (and waits at the gate).
    pub arrived: Notify,
}

impl GatedModel {
    pub fn new(replies: impl IntoIterator<Item = ModelResponse>) -> Arc<Self> {
        Arc::new(Self {
            script: ScriptedModel::new(replies),
            gate: Semaphore::new(0),
            arrived: Notify::new(),
        })
    }

    /// Lets `n` more replies through.
    pub fn open(&self, n: usize) {
        self.gate.add_permits(n);
    }
}

impl Model for GatedModel {
    fn name(&self) -> &str {
        "gated"
    }

    fn generate<'a>(
        &'a self,
        req: &'a ModelRequest,
    ) -> tinyagent::BoxFuture<'a, Result<ModelResponse, ModelError>> {
        Box::pin(async move {
            self.arrived.notify_one();
            self.gate
                .acquire()
                .await
                .map_err(|_| ModelError::other("gate closed"))?
                .forget();
            self.script.generate(req).await
        })
    }
}

/// The `add` tool of the tests: `{"a": number, "b": number}` → their sum.
pub fn add_tool() -> Arc<dyn Tool> {
    tinyagent::tools::new_tool(
        "add",
        "Adds two numbers",
        json!({"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}}, "required": ["a", "b"]}),
        |_ctx, input: String| async move {
            let v: Value = serde_json::from_str(&input)?;
            let sum = v["a"].as_f64().unwrap_or(0.0) + v["b"].as_f64().unwrap_or(0.0);
            Ok::<_, ToolError>(sum.to_string())
        },
    )
}

/// Set when the future of a [`stuck_tool`] call is dropped (the call cancelled).
#[derive(Clone, Default)]
pub struct Dropped(pub Arc<AtomicBool>);

impl Dropped {
    pub fn get(&self) -> bool {
        self.0.load(Ordering::SeqCst)
    }

    /// Waits until the flag is set, failing the test after [`PATIENCE`].
    pub async fn wait(&self, what: &str) {
        let until = tokio::time::Instant::now() + PATIENCE;
        while !self.get() {
            assert!(
                tokio::time::Instant::now() < until,
                "{what} within {PATIENCE:?}"
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
}

struct SetOnDrop(Dropped);

impl Drop for SetOnDrop {
    fn drop(&mut self) {
        self.0.0.store(true, Ordering::SeqCst);
    }
}

/// A tool `wait` whose calls never end; `dropped` is set when a call's future is dropped.
pub fn stuck_tool(dropped: Dropped) -> Arc<dyn Tool> {
    tinyagent::tools::new_tool(
        "wait",
        "Waits forever",
        json!({"type": "object", "properties": {}}),
        move |_ctx, _input: String| {
            let guard = SetOnDrop(dropped.clone());
            async move {
                let _guard = guard;
                std::future::pending::<()>().await;
                Ok::<_, ToolError>(String::new())
            }
        },
    )
}

/// An agent named `name` on `model`, with the `add` tool.
pub fn agent(name: &str, model: impl Model + 'static) -> LlmAgent {
    LlmAgent::builder(name)
        .description(format!("The {name} agent"))
        .model(model)
        .tool(add_tool())
        .build()
        .expect("agent")
}

/// A server running on 127.0.0.1, port chosen by the system.
pub struct Running {
    pub base: String,
    shutdown: Option<oneshot::Sender<()>>,
    pub task: tokio::task::JoinHandle<Result<(), tinyagent_server::ServeError>>,
}

impl Running {
    pub async fn start(server: Server) -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind 127.0.0.1:0");
        let base = format!("http://{}", listener.local_addr().unwrap());
        let (tx, rx) = oneshot::channel::<()>();
        let task = tokio::spawn(server.serve(listener, async move {
            let _ = rx.await;
        }));
        Self {
            base,
            shutdown: Some(tx),
            task,
        }
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// Tells the server to shut down (it drains), without waiting.
    pub fn shut_down(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
    }
}

pub fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .timeout(PATIENCE)
        .build()
        .expect("client")
}

/// One server-sent event: its `event:` name, if any, and its data.
#[derive(Debug, Clone, PartialEq)]
pub struct Frame {
    pub event: Option<String>,
    pub data: String,
}

impl Frame {
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.data)
            .unwrap_or_else(|err| panic!("frame data is not JSON ({err}): {}", self.data))
    }
}

/// Splits a complete `text/event-stream` body into its events.
pub fn frames(body: &str) -> Vec<Frame> {
    body.split("\n\n")
        .filter(|block| !block.trim().is_empty() && !block.starts_with(':'))
        .map(|block| {
            let mut event = None;
            let mut data: Vec<&str> = Vec::new();
            for line in block.lines() {
                if let Some(name) = line.strip_prefix("event: ") {
                    event = Some(name.to_owned());
                } else if let Some(d) = line.strip_prefix("data: ") {
                    data.push(d);
                } else if line.starts_with(':') {
                    // A comment (the server's heartbeat).
                } else {
                    panic!("unexpected line in an event stream: {line:?}");
                }
            }
            Frame {
                event,
                data: data.join("\n"),
            }
        })
        .collect()
}

/// Reads a streamed response until a frame matches, returning the frames so far (the
/// response stays open).
pub async fn read_until(
    response: &mut reqwest::Response,
    buffer: &mut String,
    done: impl Fn(&Frame) -> bool,
) -> Vec<Frame> {
    loop {
        if let Some(end) = buffer.rfind("\n\n") {
            let got = frames(&buffer[..end + 2]);
            if got.iter().any(&done) {
                return got;
            }
        }
        let chunk = tokio::time::timeout(PATIENCE, response.chunk())
            .await
            .expect("the stream stalled")
            .expect("the stream failed")
            .unwrap_or_else(|| panic!("the stream ended before the expected frame: {buffer}"));
        buffer.push_str(std::str::from_utf8(&chunk).expect("utf-8"));
    }
}

/// A chat completion request body.
pub fn chat(model: &str, question: &str, stream: bool) -> Value {
    json!({
        "model": model,
        "messages": [{"role": "user", "content": question}],
        "stream": stream,
    })
}

/// The URL in `var` (exported by `scripts/services.sh env`), or `None` when the tests are told
/// to skip service tests (TINYAGENT_SKIP_SERVICE_TESTS=1); panics with the way to start the
/// servers otherwise.
pub fn service_url(var: &str, server: &str) -> Option<String> {
    match std::env::var(var) {
        Ok(url) if !url.is_empty() => Some(url),
        _ if std::env::var("TINYAGENT_SKIP_SERVICE_TESTS").is_ok_and(|v| v == "1") => {
            eprintln!("skipped: {var} is not set and TINYAGENT_SKIP_SERVICE_TESTS=1");
            None
        }
        _ => panic!(
            "{var} is not set: this test needs a {server} server. Run the tests with \
             `bash scripts/test.sh`, or start the servers with `bash scripts/services.sh start` \
             and `eval \"$(bash scripts/services.sh env)\"` (set TINYAGENT_SKIP_SERVICE_TESTS=1 \
             to skip such tests)"
        ),
    }
}

/// A PostgreSQL store at `TINYAGENT_TEST_POSTGRES_URL` (see [`service_url`]).
pub async fn postgres() -> Option<tinyagent_store::PostgresStore> {
    let url = service_url("TINYAGENT_TEST_POSTGRES_URL", "PostgreSQL")?;
    Some(
        tinyagent_store::PostgresStore::connect(&url)
            .await
            .unwrap_or_else(|err| {
                panic!("cannot use the PostgreSQL of TINYAGENT_TEST_POSTGRES_URL ({url}): {err}")
            }),
    )
}

/// A Redis store at `TINYAGENT_TEST_REDIS_URL` (see [`service_url`]).
pub async fn redis() -> Option<tinyagent_store::RedisStore> {
    let url = service_url("TINYAGENT_TEST_REDIS_URL", "Redis")?;
    Some(
        tinyagent_store::RedisStore::connect(&url)
            .await
            .unwrap_or_else(|err| {
                panic!("cannot use the Redis of TINYAGENT_TEST_REDIS_URL ({url}): {err}")
            }),
    )
}

/// The session once `ready` holds for it (a write in the background may still be on its way),
/// failing the test after [`PATIENCE`].
pub async fn stored_when(
    store: &dyn tinyagent::store::SessionStore,
    id: &str,
    ready: impl Fn(&tinyagent::store::StoredSession) -> bool,
) -> tinyagent::store::StoredSession {
    let until = tokio::time::Instant::now() + PATIENCE;
    loop {
        if let Some(session) = store.load(id).await.unwrap() {
            if ready(&session) {
                return session;
            }
        }
        assert!(
            tokio::time::Instant::now() < until,
            "session {id} never got there"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Runs `tests/{script}` with python3 and `env`, after checking that `modules` import (a clear
/// message names `scripts/requirements-test.txt` otherwise); panics with the script's output
/// unless it succeeds, and gives its standard output (printed too).
pub async fn python(script: &str, modules: &str, env: Vec<(&'static str, String)>) -> String {
    let check = std::process::Command::new("python3")
        .args(["-c", &format!("import {modules}")])
        .output();
    match check {
        Ok(out) if out.status.success() => {}
        Ok(out) => panic!(
            "Python packages are missing: run `bash scripts/setup.sh --test` (it installs the \
             pinned scripts/requirements-test.txt and the chromium package): {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ),
        Err(e) => panic!("python3 is needed for {script} and could not be run: {e}"),
    }
    let path = format!("{}/tests/{script}", env!("CARGO_MANIFEST_DIR"));
    let out = tokio::task::spawn_blocking(move || {
        std::process::Command::new("python3")
            .arg(path)
            .envs(env)
            .env_remove("OPENAI_API_KEY")
            .env_remove("OPENAI_BASE_URL")
            .output()
            .expect("run python3")
    })
    .await
    .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{script} failed:\n{stdout}\n{stderr}");
    println!("{stdout}");
    stdout
}
