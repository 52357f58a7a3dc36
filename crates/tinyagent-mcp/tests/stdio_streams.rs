//! `serve_stdio` over the standard streams an MCP client really gives a server: pipes (as
//! Python's and Rust's process APIs make them) and a socket pair (as Node's `child_process`
//! makes them), read and written on the reactor; many requests written at once are each
//! answered once, and the server ends cleanly when its input ends.

#![cfg(feature = "demo")]

use std::collections::HashSet;
use std::process::Stdio;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};

fn initialize() -> String {
    let message = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "raw", "version": "1"}}});
    format!(
        "{message}\n{}\n",
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"})
    )
}

fn add(id: u64) -> String {
    let message = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": "calculator", "arguments": {"operation": "add", "a": id, "b": 1}}});
    format!("{message}\n")
}

/// Writes the handshake and `calls` requests at once, and checks each answer: call `id`
/// answers `id + 1`, once.
async fn pipelined(
    mut input: impl AsyncWrite + Unpin + Send + 'static,
    output: impl AsyncRead + Unpin,
    calls: u64,
) -> impl AsyncWrite + Unpin {
    let writer = tokio::spawn(async move {
        let mut text = initialize();
        for id in 1..=calls {
            text.push_str(&add(id));
        }
        input.write_all(text.as_bytes()).await.unwrap();
        input.flush().await.unwrap();
        input
    });
    let mut lines = BufReader::new(output).lines();
    let mut answered = HashSet::new();
    let read = async {
        while answered.len() < calls as usize + 1 {
            let line = lines
                .next_line()
                .await
                .unwrap()
                .expect("an answer per request");
            let answer: Value = serde_json::from_str(&line).unwrap();
            let id = answer["id"].as_u64().expect("answers only");
            if id > 0 {
                let text = answer["result"]["content"][0]["text"].as_str().unwrap();
                assert!(text.contains(&format!("= {}.00", id + 1)), "{id}: {text}");
            }
            assert!(answered.insert(id), "{id} answered twice");
        }
    };
    tokio::time::timeout(Duration::from_secs(60), read)
        .await
        .expect("every request answered within 60 s");
    writer.await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_written_at_once_over_pipes_are_each_answered_once() {
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_serve_demo_tools"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let (stdin, stdout) = (child.stdin.take().unwrap(), child.stdout.take().unwrap());
    let stdin = pipelined(stdin, stdout, 2_000).await;
    drop(stdin);
    let status = tokio::time::timeout(Duration::from_secs(20), child.wait())
        .await
        .expect("the server ends when its input ends")
        .unwrap();
    assert!(status.success(), "{status}");
}

#[cfg(unix)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_socket_pair_as_standard_streams_is_served() {
    use std::os::fd::OwnedFd;

    let (ours, theirs) = std::os::unix::net::UnixStream::pair().unwrap();
    let theirs_out = theirs.try_clone().unwrap();
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_serve_demo_tools"))
        .stdin(Stdio::from(OwnedFd::from(theirs)))
        .stdout(Stdio::from(OwnedFd::from(theirs_out)))
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    ours.set_nonblocking(true).unwrap();
    let (read, write) = tokio::net::UnixStream::from_std(ours).unwrap().into_split();
    let mut write = pipelined(write, read, 500).await;
    // Closing our side ends the server's input.
    write.shutdown().await.unwrap();
    drop(write);
    let status = tokio::time::timeout(Duration::from_secs(20), child.wait())
        .await
        .expect("the server ends when its input ends")
        .unwrap();
    assert!(status.success(), "{status}");
}
