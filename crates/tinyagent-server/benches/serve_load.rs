//! Load on the server over loopback, with models that answer at once (model time excluded).
//!
//! - `serve_load/{memory,sqlite}/{1,100,1000}`: that many conversations at once, each posting
//!   one message to its own session through the session API (`POST /v1/sessions/{id}/messages`,
//!   server-sent events read to the end) over real TCP connections; criterion reports the time
//!   per round and the throughput (conversations answered per second). Every request's latency
//!   is recorded, and p50/p99 are printed at the end with requests per second.
//! - memory per open conversation: N answers held in flight at once (their model call parked),
//!   the growth of the live heap (a counting global allocator) divided by N, and of the
//!   resident memory (RSS, coarse: freed memory is reused) for N = 1,000 and 10,000
//!   through the router in process (the whole HTTP stack above the socket: routing, auth,
//!   limits, the session lock and load, the agent run, the event stream), and for 4,000 over
//!   TCP (each also a socket and a hyper connection; the machine's 20,000 file descriptors
//!   bound N, as every connection has two ends in this process).
//!
//! `cargo bench -p tinyagent-server --bench serve_load` (add `-- --quick` for a short run).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::http::Request;
use criterion::{BenchmarkId, Criterion, Throughput};
use futures::StreamExt;
use stats_alloc::{INSTRUMENTED_SYSTEM, StatsAlloc};
use tinyagent::testing::reply;
use tinyagent::{
    LlmAgent, MemoryStore, Model, ModelError, ModelRequest, ModelResponse, SessionStore,
};
use tinyagent_server::Server;
use tinyagent_store::SqliteStore;
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
        "{kind:>6} {n:>6} open conversations {how}: heap {:>6.1} KiB each (+{:.1} MiB), RSS {:>6.1} KiB each",
        heap as f64 / n as f64 / 1024.0,
        heap as f64 / 1048576.0,
        rss as f64 / n as f64 / 1024.0,
    )
}

/// Answers every request at once with the same short text.
struct AtOnce;

impl Model for AtOnce {
    fn name(&self) -> &str {
        "instant"
    }

    fn generate<'a>(
        &'a self,
        _req: &'a ModelRequest,
    ) -> tinyagent::BoxFuture<'a, Result<ModelResponse, ModelError>> {
        Box::pin(async { Ok(reply::text("ok")) })
    }
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
        .build()
        .expect("agent")
}

async fn store(kind: &str, dir: &std::path::Path) -> Arc<dyn SessionStore> {
    match kind {
        "memory" => Arc::new(MemoryStore::new()),
        _ => Arc::new(
            SqliteStore::open(dir.join(format!("{}.db", tinyagent::new_id("bench"))))
                .await
                .expect("sqlite"),
        ),
    }
}

fn server(model: impl Model + 'static, store: Arc<dyn SessionStore>) -> Server {
    Server::new()
        .agent(agent(model))
        .shared_store(store)
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

/// One conversation's turn: posts a message and reads the event stream to its end.
async fn turn(http: &reqwest::Client, base: &str, session: &str) -> Duration {
    let started = Instant::now();
    let response = http
        .post(format!("{base}/v1/sessions/{session}/messages"))
        .header("content-type", "application/json")
        .body(r#"{"input":"hello"}"#)
        .send()
        .await
        .expect("post");
    assert_eq!(response.status(), 200);
    let mut body = response.bytes_stream();
    let mut finished = false;
    while let Some(chunk) = body.next().await {
        let chunk = chunk.expect("stream");
        if chunk.windows(15).any(|w| w == b"event: finished") {
            finished = true;
        }
    }
    assert!(finished, "the answer did not finish");
    started.elapsed()
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let at = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[at.min(sorted.len() - 1)]
}

fn load(c: &mut Criterion, rt: &Runtime, dir: &std::path::Path, report: &mut Vec<String>) {
    let mut group = c.benchmark_group("serve_load");
    group.sample_size(10);
    group.warm_up_time(Duration::from_millis(500));
    group.measurement_time(Duration::from_secs(3));
    for kind in ["memory", "sqlite"] {
        let base = rt.block_on(async { listen(server(AtOnce, store(kind, dir).await)).await });
        let http = reqwest::Client::builder()
            .pool_max_idle_per_host(2000)
            .build()
            .unwrap();
        for n in [1usize, 100, 1000] {
            let latencies: Arc<std::sync::Mutex<Vec<Duration>>> = Arc::default();
            let requests = Arc::new(AtomicUsize::new(0));
            let busy = Arc::new(std::sync::Mutex::new(Duration::ZERO));
            group.throughput(Throughput::Elements(n as u64));
            group.bench_with_input(BenchmarkId::new(kind, n), &n, |b, &n| {
                b.iter_custom(|iters| {
                    rt.block_on(async {
                        let started = Instant::now();
                        for _ in 0..iters {
                            let round = (0..n).map(|_| {
                                let http = http.clone();
                                let base = base.clone();
                                tokio::spawn(async move {
                                    let session = tinyagent::new_id("ses");
                                    turn(&http, &base, &session).await
                                })
                            });
                            let took = futures::future::join_all(round).await;
                            let mut all = latencies.lock().unwrap();
                            all.extend(took.into_iter().map(Result::unwrap));
                            requests.fetch_add(n, Ordering::Relaxed);
                        }
                        let elapsed = started.elapsed();
                        *busy.lock().unwrap() += elapsed;
                        elapsed
                    })
                });
            });
            let mut all = latencies.lock().unwrap().clone();
            all.sort();
            let total = requests.load(Ordering::Relaxed);
            let seconds = busy.lock().unwrap().as_secs_f64();
            report.push(format!(
                "{kind:>6} {n:>5} conversations: {:>8.0} req/s  p50 {:>8.2} ms  p99 {:>8.2} ms  ({total} requests)",
                total as f64 / seconds,
                percentile(&all, 0.50).as_secs_f64() * 1000.0,
                percentile(&all, 0.99).as_secs_f64() * 1000.0,
            ));
        }
    }
    group.finish();
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

/// RSS growth per in-flight conversation, through the router in process.
async fn memory_in_process(kind: &str, n: usize, dir: &std::path::Path) -> String {
    let model = Arc::new(Parked {
        waiting: AtomicUsize::new(0),
        gate: Semaphore::new(0),
    });
    let router = server(model.clone(), store(kind, dir).await).router();
    // Warm up: one conversation through, so lazy statics and pools exist before measuring.
    model.gate.add_permits(1);
    let warm = router.clone().oneshot(post_request("warm")).await.unwrap();
    let _ = axum::body::to_bytes(warm.into_body(), usize::MAX)
        .await
        .unwrap();
    let before_waiting = model.waiting.load(Ordering::SeqCst);
    let before = rss().unwrap_or(0);
    let heap_before = heap();
    let tasks: Vec<_> = (0..n)
        .map(|i| {
            let router = router.clone();
            tokio::spawn(async move {
                let response = router
                    .oneshot(post_request(&format!("ses_{i}")))
                    .await
                    .unwrap();
                axum::body::to_bytes(response.into_body(), usize::MAX)
                    .await
                    .unwrap()
            })
        })
        .collect();
    wait_for(&model.waiting, before_waiting + n).await;
    let during = rss().unwrap_or(0);
    let heap_during = heap();
    model.gate.add_permits(n);
    let mut finished = 0;
    for task in tasks {
        let body = task.await.unwrap();
        if body.windows(15).any(|w| w == b"event: finished") {
            finished += 1;
        }
    }
    assert_eq!(finished, n);
    memory_line(
        kind,
        n,
        "in process",
        heap_during - heap_before,
        during.saturating_sub(before),
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
async fn memory_over_tcp(kind: &str, n: usize, dir: &std::path::Path) -> String {
    let model = Arc::new(Parked {
        waiting: AtomicUsize::new(0),
        gate: Semaphore::new(0),
    });
    let base = listen(server(model.clone(), store(kind, dir).await)).await;
    let addr = base.trim_start_matches("http://").to_owned();
    let before = rss().unwrap_or(0);
    let heap_before = heap();
    let mut sockets = Vec::with_capacity(n);
    for i in 0..n {
        let mut socket = tokio::net::TcpStream::connect(&addr).await.unwrap();
        let body = r#"{"input":"hello"}"#;
        let request = format!(
            "POST /v1/sessions/tcp_{i}/messages HTTP/1.1\r\nHost: bench\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
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
    for mut socket in sockets {
        let mut text = Vec::new();
        socket.read_to_end(&mut text).await.unwrap();
        if text.windows(15).any(|w| w == b"event: finished") {
            finished += 1;
        }
    }
    assert_eq!(finished, n);
    memory_line(
        kind,
        n,
        "over TCP  ",
        heap_during - heap_before,
        during.saturating_sub(before),
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
    // Memory first, in a process that has not yet grown its heap for the load runs.
    for kind in ["memory", "sqlite"] {
        for n in [1000, 10_000] {
            report.push(rt.block_on(memory_in_process(kind, n, dir.path())));
        }
        report.push(rt.block_on(memory_over_tcp(kind, 4000, dir.path())));
    }
    load(&mut criterion, &rt, dir.path(), &mut report);
    criterion.final_summary();
    println!("\nserve_load summary (2 worker threads, model time excluded):");
    for line in report {
        println!("  {line}");
    }
}
