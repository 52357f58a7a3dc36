//! Connections are bounded: headers must arrive within the header timeout, at most so many
//! connections are open at once, and a client that stops reading is dropped — its run
//! cancelled, its session and concurrency slot freed.

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::{Dropped, PATIENCE, Running, agent, client};
use futures::stream::{self, BoxStream, StreamExt};
use serde_json::json;
use tinyagent::agent::OnBusy;
use tinyagent::testing::ScriptedModel;
use tinyagent::{Agent, AgentError, Event, Invocation};
use tinyagent_server::Server;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

fn idle_server() -> Server {
    Server::new().agent(agent("greeter", Arc::new(ScriptedModel::new([]))))
}

/// How many connections the test may open: 2,000, or fewer when the file descriptor limit
/// (both ends of each connection count) is lower.
fn connection_budget() -> usize {
    let soft = std::fs::read_to_string("/proc/self/limits")
        .ok()
        .and_then(|limits| {
            limits
                .lines()
                .find(|l| l.starts_with("Max open files"))
                .and_then(|l| l.split_whitespace().nth(3).map(str::to_owned))
        })
        .and_then(|n| n.parse::<usize>().ok())
        .unwrap_or(20_000);
    2000.min(soft.saturating_sub(256) / 2)
}

/// Reads until the server closes the connection; what it sent before closing.
async fn closed_by_server(socket: &mut TcpStream) -> String {
    let mut got = Vec::new();
    let read = tokio::time::timeout(PATIENCE, socket.read_to_end(&mut got))
        .await
        .expect("the server closes the connection");
    // A reset is a close too.
    let _ = read;
    String::from_utf8_lossy(&got).into_owned()
}

#[tokio::test]
async fn connections_that_never_finish_their_headers_are_closed_while_healthz_answers() {
    let server = Running::start(idle_server().header_timeout(Duration::from_secs(2))).await;
    let addr = server.base.trim_start_matches("http://").to_owned();
    let n = connection_budget();
    assert!(
        n >= 500,
        "the file descriptor limit is too low for this test"
    );
    let started = tokio::time::Instant::now();
    let mut stalled = Vec::with_capacity(n);
    for _ in 0..n {
        let mut socket = TcpStream::connect(&addr).await.unwrap();
        // Half a request line, and then nothing: no key is needed to do this.
        socket
            .write_all(b"GET /v1/sessions HTTP/1.1\r\nHost: ")
            .await
            .unwrap();
        stalled.push(socket);
    }
    // A new client is served while they hang.
    let health = client().get(server.url("/healthz")).send().await.unwrap();
    assert_eq!(health.status(), 200);
    let answered = started.elapsed();
    // And every one of them is closed, none answered with anything but an error.
    for socket in &mut stalled {
        let sent = closed_by_server(socket).await;
        assert!(
            sent.is_empty() || sent.starts_with("HTTP/1.1 408"),
            "a stalled connection got {sent:?}"
        );
    }
    assert!(
        started.elapsed() >= Duration::from_secs(2),
        "closed before the header timeout"
    );
    println!(
        "{n} stalled connections; /healthz answered after {answered:?}; all closed after {:?}",
        started.elapsed()
    );
}

#[tokio::test]
async fn one_connection_over_the_cap_is_503_and_a_new_one_is_served_once_slots_free() {
    let server = Running::start(
        idle_server()
            .max_connections(8)
            .header_timeout(Duration::from_secs(1)),
    )
    .await;
    let addr = server.base.trim_start_matches("http://").to_owned();
    let mut held = Vec::new();
    for _ in 0..8 {
        let mut socket = TcpStream::connect(&addr).await.unwrap();
        socket
            .write_all(b"GET /healthz HTTP/1.1\r\n")
            .await
            .unwrap();
        held.push(socket);
    }
    // Accepted in order: the ninth finds no slot.
    let mut ninth = TcpStream::connect(&addr).await.unwrap();
    ninth
        .write_all(format!("GET /healthz HTTP/1.1\r\nHost: {addr}\r\n\r\n").as_bytes())
        .await
        .unwrap();
    let refused = closed_by_server(&mut ninth).await;
    assert!(refused.starts_with("HTTP/1.1 503"), "{refused}");
    assert!(refused.contains("retry-after: 1"), "{refused}");
    assert!(
        refused.contains("\"code\":\"too_many_connections\""),
        "{refused}"
    );
    // The header timeout closes the eight, which frees their slots.
    for socket in &mut held {
        closed_by_server(socket).await;
    }
    let health = client().get(server.url("/healthz")).send().await.unwrap();
    assert_eq!(health.status(), 200);
}

/// An agent whose run reports text forever, 64 KiB at a time; `dropped` is set when its run is
/// dropped (cancelled).
struct Flood {
    dropped: Dropped,
}

struct SetOnDrop(Dropped);

impl Drop for SetOnDrop {
    fn drop(&mut self) {
        self.0.0.store(true, std::sync::atomic::Ordering::SeqCst);
    }
}

impl Agent for Flood {
    fn name(&self) -> &str {
        "flood"
    }

    fn description(&self) -> &str {
        "Talks forever"
    }

    fn run(&self, _inv: Invocation) -> BoxStream<'static, Result<Event, AgentError>> {
        self.dropped
            .0
            .store(false, std::sync::atomic::Ordering::SeqCst);
        let guard = SetOnDrop(self.dropped.clone());
        let chunk = "x".repeat(64 * 1024);
        stream::unfold(guard, move |guard| {
            let chunk = chunk.clone();
            async move {
                tokio::task::yield_now().await;
                Some((Ok(Event::TextDelta(chunk)), guard))
            }
        })
        .boxed()
    }
}

#[tokio::test]
async fn a_reader_that_stops_reading_is_dropped_its_run_cancelled_and_what_it_held_freed() {
    let dropped = Dropped::default();
    let server = Running::start(
        Server::new()
            .agent(Flood {
                dropped: dropped.clone(),
            })
            .write_timeout(Duration::from_millis(500))
            .max_concurrent_per_key(1)
            .on_busy(OnBusy::Fail),
    )
    .await;
    let addr: std::net::SocketAddr = server.base.trim_start_matches("http://").parse().unwrap();
    // A client with a small receive buffer that reads the headers and then nothing.
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.set_recv_buffer_size(4096).unwrap();
    let mut stalled = socket.connect(addr).await.unwrap();
    let body = json!({"input": "talk"}).to_string();
    let request = format!(
        "POST /v1/sessions/s1/messages HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    stalled.write_all(request.as_bytes()).await.unwrap();
    let mut head = [0u8; 64];
    let read = tokio::time::timeout(PATIENCE, stalled.read(&mut head))
        .await
        .expect("the stream starts")
        .unwrap();
    assert!(
        head[..read].starts_with(b"HTTP/1.1 200"),
        "{:?}",
        &head[..read]
    );
    // The server fills what buffers there are, then waits on the client for the write
    // timeout, then drops it: the run is cancelled.
    dropped.wait("the stalled reader's run is cancelled").await;
    // The session lock and the key's one slot are free: the same session answers again at
    // once (neither 409 nor 429).
    let mut again = client()
        .post(server.url("/v1/sessions/s1/messages"))
        .json(&json!({"input": "again"}))
        .send()
        .await
        .unwrap();
    assert_eq!(again.status(), 200);
    let chunk = again.chunk().await.unwrap().expect("the new run streams");
    assert!(!chunk.is_empty());
    drop(again);
    drop(stalled);
}

#[tokio::test]
async fn a_silent_session_stream_sends_its_headers_before_the_first_event() {
    // A model that never answers: the headers still go out (after the short grace), so a
    // proxy sees a live answer; heartbeats follow every 15 s.
    let model = common::GatedModel::new([]);
    let server = Running::start(Server::new().agent(agent("slow", model.clone()))).await;
    let response = tokio::time::timeout(
        PATIENCE,
        client()
            .post(server.url("/v1/sessions/s1/messages"))
            .json(&json!({"input": "hi"}))
            .send(),
    )
    .await
    .expect("the headers arrive while the model is still thinking")
    .unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["content-type"], "text/event-stream");
    model.open(0);
}
