//! Load on the server over loopback (model time excluded).
//!
//! - `serve_load/{openai,scripted}/{memory,sqlite,postgres,redis}/{1,100,1000}`: that many
//!   conversations at once, each posting one message to its own session through the session API
//!   (`POST /v1/sessions/{id}/messages`, server-sent events read to the end) over real TCP
//!   connections. Every turn is two model calls and one tool call: the model asks for
//!   `get_weather`, the tool answers, the model answers. With `openai`, the model is the real
//!   `tinyagent-openai` provider talking to a loopback Chat Completions server started here,
//!   which streams OpenAI's recorded wire format (the provider's test fixtures
//!   `stream_tool_call.sse`, then `stream_text.sse`) at once; with `scripted`, an in-process
//!   model gives the same answers without HTTP, isolating the server. Criterion reports the time
//!   per round and the throughput (conversations answered per second); every request's latency
//!   is recorded, and p50/p99 are printed at the end with requests per second.
//! - memory per open conversation: N answers held in flight at once (their model call parked),
//!   the growth of the live heap (a counting global allocator) divided by N, and of the
//!   resident memory (RSS, coarse: freed memory is reused), for N = 10,000 through the router
//!   in process (the whole HTTP stack above the socket: routing, auth, limits, the session lock
//!   and load, the agent run, the event stream) with the scripted model; for 4,000 through the
//!   router with the OpenAI provider, the loopback model server holding each request (this also
//!   counts the model server's side of each connection, so it is an upper bound); and for 4,000
//!   over TCP (each also a socket and a hyper connection; the machine's 20,000 file descriptors
//!   bound N, as every connection has two ends in this process).
//!
//! PostgreSQL and Redis are used when `TINYAGENT_TEST_POSTGRES_URL` / `TINYAGENT_TEST_REDIS_URL`
//! are set (`bash scripts/services.sh start; eval "$(bash scripts/services.sh env)"`), and
//! skipped with a note otherwise.
//!
//! `cargo bench -p tinyagent-server --bench serve_load` (add `-- --quick` for a short run). A
//! filter (`-- scripted/memory`) runs the load benchmarks it names and skips the memory counts,
//! which run only without a filter or with `open_conversations`.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::http::Request;
use criterion::{BenchmarkId, Criterion, SamplingMode, Throughput};
use futures::StreamExt;
use stats_alloc::{INSTRUMENTED_SYSTEM, StatsAlloc};
use tinyagent::schemars::JsonSchema;
use tinyagent::testing::reply;
use tinyagent::{
    LlmAgent, Model, ModelError, ModelRequest, ModelResponse, Role, ToolError,
    store::{MemoryStore, SessionStore},
    tools,
};
use tinyagent_openai::HttpConfig;
use tinyagent_openai::{OpenAiConfig, OpenAiModel};
use tinyagent_server::Server;
use tinyagent_store::{PostgresStore, RedisStore, SqliteStore};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::runtime::Runtime;
use tokio::sync::Semaphore;
use tower::ServiceExt;

#[global_allocator]
static GLOBAL: &StatsAlloc<std::alloc::System> = &INSTRUMENTED_SYSTEM;

/// The bytes live on the heap now.
fn heap() -> i64 {
    let stats = GLOBAL.stats();
    stats.bytes_allocated as i64 - stats.bytes_deallocated as i64 + stats.bytes_reallocated as i64
}

/// What N open conversations added: heap bytes and RSS bytes.
fn memory_line(kind: &str, n: usize, how: &str, heap: i64, rss: u64) -> String {
    format!(
        "{kind:>8} {n:>6} open conversations {how}: heap {:>6.1} KiB each (+{:.1} MiB), RSS {:>6.1} KiB each",
        heap as f64 / n as f64 / 1024.0,
        heap as f64 / 1048576.0,
        rss as f64 / n as f64 / 1024.0,
    )
}

/// The stores measured; PostgreSQL and Redis only when their URL is set.
const STORES: [&str; 4] = ["memory", "sqlite", "postgres", "redis"];

/// The turn every conversation has: a tool call, then an answer from its result.
const TOOL_CALL_SSE: &str =
    include_str!("../../tinyagent-openai/tests/fixtures/stream_tool_call.sse");
const ANSWER_SSE: &str = include_str!("../../tinyagent-openai/tests/fixtures/stream_text.sse");
const TOOL_CALL_JSON: &str =
    include_str!("../../tinyagent-openai/tests/fixtures/chat_tool_call.json");
const ANSWER_JSON: &str = include_str!("../../tinyagent-openai/tests/fixtures/chat_default.json");

/// Whether the request's last message is a tool's result (so the model answers now).
fn after_tool(messages: &[tinyagent::Message]) -> bool {
    messages.last().is_some_and(|m| m.role == Role::Tool)
}

/// Answers at once in process, as the loopback server does over HTTP: a call to `get_weather`,
/// then, once the tool has answered, a short text.
struct Scripted;

impl Model for Scripted {
    fn name(&self) -> &str {
        "scripted"
    }

    fn generate<'a>(
        &'a self,
        req: &'a ModelRequest,
    ) -> tinyagent::BoxFuture<'a, Result<ModelResponse, ModelError>> {
        Box::pin(async move {
            Ok(if after_tool(&req.messages) {
                reply::text("Hello! How can I assist you today?")
            } else {
                reply::tool_call("call_abc123", "get_weather", r#"{"city":"北京"}"#)
            })
        })
    }
}

/// A Chat Completions server on 127.0.0.1 answering every call at once from OpenAI's recorded
/// wire format: a `get_weather` call first, the answer once the request carries a tool result.
/// With a gate, every call waits for a permit first (counted in `waiting`).
/// Returns its base URL (`…/v1`).
async fn model_server(gate: Option<Arc<Parked>>) -> String {
    use axum::http::{StatusCode, header};
    use axum::response::IntoResponse;

    async fn completions(
        axum::extract::State(gate): axum::extract::State<Option<Arc<Parked>>>,
        body: axum::body::Bytes,
    ) -> axum::response::Response {
        if let Some(gate) = gate {
            gate.waiting.fetch_add(1, Ordering::SeqCst);
            match gate.gate.acquire().await {
                Ok(permit) => permit.forget(),
                Err(_) => return (StatusCode::SERVICE_UNAVAILABLE, "closed").into_response(),
            }
        }
        let Ok(request) = serde_json::from_slice::<serde_json::Value>(&body) else {
            return (StatusCode::BAD_REQUEST, "malformed JSON").into_response();
        };
        let answer = request["messages"]
            .as_array()
            .and_then(|m| m.last())
            .is_some_and(|m| m["role"] == "tool");
        if request["stream"] == true {
            let sse = if answer { ANSWER_SSE } else { TOOL_CALL_SSE };
            ([(header::CONTENT_TYPE, "text/event-stream")], sse).into_response()
        } else {
            let json = if answer { ANSWER_JSON } else { TOOL_CALL_JSON };
            ([(header::CONTENT_TYPE, "application/json")], json).into_response()
        }
    }

    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}/v1", listener.local_addr().unwrap());
    let app = axum::Router::new()
        .route("/v1/chat/completions", axum::routing::post(completions))
        .with_state(gate);
    // Each event goes out when written, as from a real API's servers (no Nagle delay).
    let listener = axum::serve::ListenerExt::tap_io(listener, |tcp| {
        let _ = tcp.set_nodelay(true);
    });
    tokio::spawn(async move { axum::serve(listener, app).await });
    base
}

#[derive(serde::Deserialize, JsonSchema)]
#[schemars(crate = "tinyagent::schemars")]
struct WeatherInput {
    /// The city
    city: String,
}

fn weather() -> impl tinyagent::tools::IntoTool {
    tools::new_func(
        "get_weather",
        "The weather in a city",
        |i: WeatherInput| async move { Ok::<_, ToolError>(format!("{}: sunny, 21 °C", i.city)) },
    )
    .read_only()
}

/// Holds every request until released, counting the requests waiting.
struct Parked {
    waiting: AtomicUsize,
    gate: Semaphore,
}

impl Model for Parked {
    fn name(&self) -> &str {
        "parked"
    }

    fn generate<'a>(
        &'a self,
        _req: &'a ModelRequest,
    ) -> tinyagent::BoxFuture<'a, Result<ModelResponse, ModelError>> {
        Box::pin(async move {
            self.waiting.fetch_add(1, Ordering::SeqCst);
            self.gate
                .acquire()
                .await
                .map_err(|_| ModelError::other("closed"))?
                .forget();
            Ok(reply::text("ok"))
        })
    }
}

fn agent(model: impl Model + 'static) -> LlmAgent {
    LlmAgent::builder("bench")
        .model(model)
        .tool(weather())
        .build()
        .expect("agent")
}

/// A fresh store of this kind, or `None` (with a note printed) when its server is not configured.
async fn store(kind: &str, dir: &std::path::Path) -> Option<Arc<dyn SessionStore>> {
    let from_env = |var: &str| {
        let url = std::env::var(var).ok().filter(|u| !u.is_empty());
        if url.is_none() {
            println!(
                "serve_load: {kind} skipped: {var} is unset \
                 (`bash scripts/services.sh start; eval \"$(bash scripts/services.sh env)\"`)"
            );
        }
        url
    };
    Some(match kind {
        "memory" => Arc::new(MemoryStore::new()),
        "sqlite" => Arc::new(
            SqliteStore::open(dir.join(format!("{}.db", tinyagent::store::new_id("bench"))))
                .await
                .expect("sqlite"),
        ),
        "postgres" => {
            let url = from_env("TINYAGENT_TEST_POSTGRES_URL")?;
            Arc::new(
                PostgresStore::connect(&url)
                    .await
                    .unwrap_or_else(|e| panic!("cannot use the PostgreSQL at {url}: {e}")),
            )
        }
        "redis" => {
            let url = from_env("TINYAGENT_TEST_REDIS_URL")?;
            Arc::new(
                RedisStore::connect(&url)
                    .await
                    .unwrap_or_else(|e| panic!("cannot use the Redis at {url}: {e}")),
            )
        }
        other => panic!("unknown store {other}"),
    })
}

fn server(model: impl Model + 'static, store: Arc<dyn SessionStore>) -> Server {
    Server::new()
        .agent(agent(model))
        .store(store)
        .max_concurrent_per_key(100_000)
        .request_timeout(None)
}

/// Serves on 127.0.0.1, returning the base URL.
async fn listen(server: Server) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(server.serve(listener, std::future::pending()));
    base
}

/// One conversation's turn: posts a message and reads the event stream to its end. An error
/// says what went wrong (a status, a stream that did not finish, a tool that did not run).
async fn turn(http: &reqwest::Client, base: &str, session: &str) -> Result<Duration, String> {
    let started = Instant::now();
    let response = http
        .post(format!("{base}/v1/sessions/{session}/messages"))
        .header("content-type", "application/json")
        .body(r#"{"input":"hello"}"#)
        .send()
        .await
        .map_err(|e| format!("post: {e}"))?;
    if response.status() != 200 {
        return Err(format!("status {}", response.status()));
    }
    let mut body = response.bytes_stream();
    let mut text = Vec::new();
    while let Some(chunk) = body.next().await {
        text.extend_from_slice(&chunk.map_err(|e| format!("stream: {e}"))?);
    }
    let elapsed = started.elapsed();
    if !text.windows(15).any(|w| w == b"event: finished") {
        return Err(format!("did not finish: {}", last_event(&text)));
    }
    if !text.windows(9).any(|w| w == b"sunny, 21") {
        return Err(format!(
            "the tool did not run: {}",
            String::from_utf8_lossy(&text)
        ));
    }
    Ok(elapsed)
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let at = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[at.min(sorted.len() - 1)]
}

/// The model a load run uses: `openai` (the provider over HTTP to the loopback server) or
/// `scripted` (in process).
fn model(kind: &str, openai_base: &str) -> Box<dyn FnOnce(Arc<dyn SessionStore>) -> Server> {
    match kind {
        "openai" => {
            let config = OpenAiConfig::new("gpt-4o-mini")
                .base_url(openai_base)
                .max_retries(0);
            let model = OpenAiModel::new(config).expect("openai model");
            Box::new(move |store| server(model, store))
        }
        _ => Box::new(|store| server(Scripted, store)),
    }
}

fn load(c: &mut Criterion, rt: &Runtime, dir: &std::path::Path, report: &mut Vec<String>) {
    let openai_base = rt.block_on(model_server(None));
    let mut group = c.benchmark_group("serve_load");
    group.sample_size(10);
    // The same number of rounds in every sample: a round of 1,000 conversations takes long.
    group.sampling_mode(SamplingMode::Flat);
    group.warm_up_time(Duration::from_millis(500));
    group.measurement_time(Duration::from_secs(2));
    for model_kind in ["openai", "scripted"] {
        for kind in STORES {
            let Some(base) = rt.block_on(async {
                let store = store(kind, dir).await?;
                Some(listen(model(model_kind, &openai_base)(store)).await)
            }) else {
                continue;
            };
            let http = reqwest::Client::builder()
                .pool_max_idle_per_host(2000)
                .build()
                .unwrap();
            for n in [1usize, 100, 1000] {
                let latencies: Arc<std::sync::Mutex<Vec<Duration>>> = Arc::default();
                let errors: Arc<std::sync::Mutex<Vec<String>>> = Arc::default();
                let requests = Arc::new(AtomicUsize::new(0));
                let busy = Arc::new(std::sync::Mutex::new(Duration::ZERO));
                // Allocations while rounds run (client and server together, one process).
                let allocated = Arc::new(std::sync::Mutex::new((0usize, 0usize)));
                group.throughput(Throughput::Elements(n as u64));
                let id = BenchmarkId::new(format!("{model_kind}/{kind}"), n);
                group.bench_with_input(id, &n, |b, &n| {
                    b.iter_custom(|iters| {
                        rt.block_on(async {
                            let started = Instant::now();
                            let before = GLOBAL.stats();
                            for _ in 0..iters {
                                let round = (0..n).map(|_| {
                                    let http = http.clone();
                                    let base = base.clone();
                                    tokio::spawn(async move {
                                        let session = tinyagent::store::new_id("ses");
                                        turn(&http, &base, &session).await
                                    })
                                });
                                let took = futures::future::join_all(round).await;
                                let mut all = latencies.lock().unwrap();
                                for result in took {
                                    match result.unwrap() {
                                        Ok(latency) => all.push(latency),
                                        Err(e) => errors.lock().unwrap().push(e),
                                    }
                                }
                                requests.fetch_add(n, Ordering::Relaxed);
                            }
                            let elapsed = started.elapsed();
                            let after = GLOBAL.stats();
                            let mut counts = allocated.lock().unwrap();
                            counts.0 += after.allocations - before.allocations;
                            counts.1 += after.bytes_allocated - before.bytes_allocated;
                            *busy.lock().unwrap() += elapsed;
                            elapsed
                        })
                    });
                });
                let mut all = latencies.lock().unwrap().clone();
                all.sort();
                let errors = errors.lock().unwrap();
                let failed = match errors.first() {
                    Some(e) => format!(" [{} failed, e.g. {e}]", errors.len()),
                    None => String::new(),
                };
                let total = requests.load(Ordering::Relaxed);
                if total == 0 && errors.is_empty() {
                    continue; // not selected by the command line's filter
                }
                let seconds = busy.lock().unwrap().as_secs_f64();
                let (allocations, bytes) = *allocated.lock().unwrap();
                report.push(format!(
                    "{model_kind:>8} {kind:>8} {n:>5} conversations: {:>8.0} req/s  p50 {:>8.2} ms  p99 {:>8.2} ms  {:>6.0} allocations {:>6.1} KiB per request  ({total} requests){failed}",
                    total as f64 / seconds,
                    percentile(&all, 0.50).as_secs_f64() * 1000.0,
                    percentile(&all, 0.99).as_secs_f64() * 1000.0,
                    allocations as f64 / total.max(1) as f64,
                    bytes as f64 / total.max(1) as f64 / 1024.0,
                ));
            }
        }
    }
    group.finish();
}

/// Nothing when every answer finished; else how many did not, with the last event of one.
fn failure_note(failed: usize, example: Option<impl AsRef<[u8]>>) -> String {
    match example {
        Some(example) if failed > 0 => format!(
            " [{failed} did not finish, e.g. {}]",
            last_event(example.as_ref())
        ),
        _ => String::new(),
    }
}

/// The last `data:` line of an event stream (the whole text if it has none).
fn last_event(text: &[u8]) -> String {
    let text = String::from_utf8_lossy(text);
    text.lines()
        .rfind(|l| l.starts_with("data:"))
        .unwrap_or(&text)
        .to_owned()
}

/// The process's resident memory, in bytes (Linux).
fn rss() -> Option<u64> {
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: u64 = statm.split_whitespace().nth(1)?.parse().ok()?;
    Some(pages * 4096)
}

async fn wait_for(count: &AtomicUsize, n: usize) {
    let until = Instant::now() + Duration::from_secs(600);
    while count.load(Ordering::SeqCst) < n {
        assert!(
            Instant::now() < until,
            "only {} of {n} runs reached the model",
            count.load(Ordering::SeqCst)
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Heap and RSS growth per in-flight conversation, through the router in process: with the
/// scripted model parked, or with the OpenAI provider whose request the loopback model server
/// holds (then the growth also has the model server's side of each connection in it).
async fn memory_in_process(
    kind: &str,
    n: usize,
    dir: &std::path::Path,
    openai: bool,
) -> Option<String> {
    let store = store(kind, dir).await?;
    let model = Arc::new(Parked {
        waiting: AtomicUsize::new(0),
        gate: Semaphore::new(0),
    });
    let router = if openai {
        let base = model_server(Some(model.clone())).await;
        let config = OpenAiConfig::new("gpt-4o-mini")
            .base_url(base)
            .max_retries(0);
        server(OpenAiModel::new(config).expect("openai model"), store).router()
    } else {
        server(model.clone(), store).router()
    };
    // Over the provider, a turn is two model calls (the tool call, then the answer).
    let calls = if openai { 2 } else { 1 };
    let run = tinyagent::store::new_id("mem");
    // Warm up: one conversation through, so lazy statics and pools exist before measuring.
    model.gate.add_permits(calls);
    let warm = router
        .clone()
        .oneshot(post_request(&format!("{run}_warm")))
        .await
        .unwrap();
    let _ = axum::body::to_bytes(warm.into_body(), usize::MAX)
        .await
        .unwrap();
    let before_waiting = model.waiting.load(Ordering::SeqCst);
    let before = rss().unwrap_or(0);
    let heap_before = heap();
    let tasks: Vec<_> = (0..n)
        .map(|i| {
            let router = router.clone();
            let session = format!("{run}_{i}");
            tokio::spawn(async move {
                let response = router.oneshot(post_request(&session)).await.unwrap();
                axum::body::to_bytes(response.into_body(), usize::MAX)
                    .await
                    .unwrap()
            })
        })
        .collect();
    wait_for(&model.waiting, before_waiting + n).await;
    let during = rss().unwrap_or(0);
    let heap_during = heap();
    model.gate.add_permits(n * calls);
    let mut finished = 0;
    let mut unfinished = None;
    for task in tasks {
        let body = task.await.unwrap();
        if body.windows(15).any(|w| w == b"event: finished") {
            finished += 1;
        } else {
            unfinished.get_or_insert(body);
        }
    }
    let failed = failure_note(n - finished, unfinished);
    Some(
        memory_line(
            kind,
            n,
            if openai {
                "in process, openai"
            } else {
                "in process        "
            },
            heap_during - heap_before,
            during.saturating_sub(before),
        ) + &failed,
    )
}

fn post_request(session: &str) -> Request<Body> {
    Request::post(format!("/v1/sessions/{session}/messages"))
        .header("content-type", "application/json")
        .body(Body::from(r#"{"input":"hello"}"#))
        .unwrap()
}

/// RSS growth per in-flight conversation over TCP: raw sockets as clients (a few hundred bytes
/// each on the client side), the server's hyper connections and everything above them.
async fn memory_over_tcp(kind: &str, n: usize, dir: &std::path::Path) -> Option<String> {
    let store = store(kind, dir).await?;
    let run = tinyagent::store::new_id("tcp");
    let model = Arc::new(Parked {
        waiting: AtomicUsize::new(0),
        gate: Semaphore::new(0),
    });
    let base = listen(server(model.clone(), store)).await;
    let addr = base.trim_start_matches("http://").to_owned();
    let before = rss().unwrap_or(0);
    let heap_before = heap();
    let mut sockets = Vec::with_capacity(n);
    for i in 0..n {
        let mut socket = tokio::net::TcpStream::connect(&addr).await.unwrap();
        let body = r#"{"input":"hello"}"#;
        let request = format!(
            "POST /v1/sessions/{run}_{i}/messages HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        );
        socket.write_all(request.as_bytes()).await.unwrap();
        sockets.push(socket);
    }
    wait_for(&model.waiting, n).await;
    let during = rss().unwrap_or(0);
    let heap_during = heap();
    model.gate.add_permits(n);
    let mut finished = 0;
    let mut unfinished = None;
    for mut socket in sockets {
        let mut text = Vec::new();
        socket.read_to_end(&mut text).await.unwrap();
        if text.windows(15).any(|w| w == b"event: finished") {
            finished += 1;
        } else {
            unfinished.get_or_insert(text);
        }
    }
    let failed = failure_note(n - finished, unfinished);
    Some(
        memory_line(
            kind,
            n,
            "over TCP          ",
            heap_during - heap_before,
            during.saturating_sub(before),
        ) + &failed,
    )
}

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut criterion = Criterion::default().configure_from_args();
    let mut report = Vec::new();
    // A filter names load benchmarks; the memory counts are `open_conversations`.
    let filter = std::env::args()
        .skip(1)
        .find(|a| !a.starts_with('-'))
        .filter(|f| !"open_conversations".contains(f.as_str()));
    // Memory first, in a process that has not yet grown its heap for the load runs.
    // The runs with the provider last: their connections' teardown (two ends in this
    // process) would be counted in a following run's heap.
    for openai in [false, true].into_iter().filter(|_| filter.is_none()) {
        for kind in STORES {
            let lines = if openai {
                // 4,000: each also holds a connection to the model server, two descriptors here.
                vec![rt.block_on(memory_in_process(kind, 4000, dir.path(), true))]
            } else {
                vec![
                    rt.block_on(memory_in_process(kind, 10_000, dir.path(), false)),
                    rt.block_on(memory_over_tcp(kind, 4000, dir.path())),
                ]
            };
            for line in lines.into_iter().flatten() {
                println!("serve_load: {line}");
                report.push(line);
            }
            // Let closed connections and finished tasks go before the next count.
            rt.block_on(async { tokio::time::sleep(Duration::from_secs(2)).await });
        }
    }
    load(&mut criterion, &rt, dir.path(), &mut report);
    criterion.final_summary();
    println!("\nserve_load summary (2 worker threads, model time excluded):");
    for line in report {
        println!("  {line}");
    }
}
