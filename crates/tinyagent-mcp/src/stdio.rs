//! MCP over standard input and output, both ends, as newline-delimited JSON-RPC.
//!
//! rmcp's own stdio transports skip a line that is not a JSON-RPC message without a word.
//! These do better: the server answers such a line with a JSON-RPC parse error (or an
//! invalid-request error), and the client notices a server that prints something other than
//! MCP on its standard output and can say so instead of waiting for a handshake that never
//! comes.

use std::collections::HashMap;
use std::process::Stdio;
use std::sync::{Arc, Mutex};

use futures::channel::mpsc;
use futures::{SinkExt as _, StreamExt as _};
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use serde_json::{Value, json};
use tokio::io::{AsyncWrite, AsyncWriteExt as _};
use tokio::process::{Child, Command};
use tokio::sync::watch;
use tokio_util::codec::{FramedRead, LinesCodec, LinesCodecError};

/// The longest line either end reads: 64 MiB.
pub(crate) const MAX_LINE_BYTES: usize = 64 * 1024 * 1024;

/// The longest piece of a bad line quoted in an error message.
const QUOTE_CHARS: usize = 120;

/// What the client end saw on the server's standard output, for error messages and for the
/// tool metadata rmcp's model types do not carry.
#[derive(Debug, Default)]
pub(crate) struct ChildOutput {
    /// The first line that was not a JSON-RPC message, while no valid message had come yet.
    pub garbage: watch::Sender<Option<String>>,
    /// `execution.taskSupport` of each listed tool, by remote name, as last listed.
    pub task_support: Mutex<HashMap<String, String>>,
}

impl ChildOutput {
    /// The tools whose `execution.taskSupport` is `required`.
    pub fn task_required(&self, name: &str) -> bool {
        self.task_support
            .lock()
            .map(|m| m.get(name).is_some_and(|s| s == "required"))
            .unwrap_or(false)
    }
}

/// A spawned server: the transport halves for rmcp, the child, and what its output showed.
pub(crate) struct ChildTransport {
    pub sink: mpsc::Sender<ClientJsonRpcMessage>,
    pub stream: mpsc::Receiver<ServerJsonRpcMessage>,
    pub child: Child,
    pub output: Arc<ChildOutput>,
}

/// Spawns `command` with piped standard input and output (standard error inherited) and
/// starts the tasks that write requests to it and read its messages.
pub(crate) fn spawn(mut command: Command) -> std::io::Result<ChildTransport> {
    command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true);
    let mut child = command.spawn()?;
    let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
        return Err(std::io::Error::other(
            "the child's standard streams are not piped",
        ));
    };
    let output = Arc::new(ChildOutput::default());

    let (sink, mut requests) = mpsc::channel::<ClientJsonRpcMessage>(32);
    tokio::spawn(async move {
        let mut stdin = stdin;
        while let Some(message) = requests.next().await {
            let Ok(line) = serde_json::to_string(&message) else {
                continue;
            };
            if write_line(&mut stdin, &line).await.is_err() {
                break;
            }
        }
    });

    let (mut forward, stream) = mpsc::channel::<ServerJsonRpcMessage>(32);
    let seen = Arc::clone(&output);
    tokio::spawn(async move {
        let mut lines = FramedRead::new(stdout, LinesCodec::new_with_max_length(MAX_LINE_BYTES));
        let mut valid_seen = false;
        while let Some(line) = lines.next().await {
            let line = match line {
                Ok(line) => line,
                Err(LinesCodecError::MaxLineLengthExceeded) => {
                    tracing::warn!(
                        "an MCP server wrote a line over {MAX_LINE_BYTES} bytes; skipped"
                    );
                    continue;
                }
                Err(LinesCodecError::Io(e)) => {
                    // Not UTF-8 (or a read error): garbage.
                    note_garbage(&seen, valid_seen, &format!("<unreadable output: {e}>"));
                    if e.kind() == std::io::ErrorKind::InvalidData {
                        continue;
                    }
                    break;
                }
            };
            let trimmed = line.trim();
            if trimmed.is_empty() {
                continue;
            }
            let message = serde_json::from_str::<Value>(trimmed)
                .ok()
                .and_then(|value| {
                    record_task_support(&seen, &value);
                    serde_json::from_value::<ServerJsonRpcMessage>(value).ok()
                });
            match message {
                Some(message) => {
                    valid_seen = true;
                    if forward.send(message).await.is_err() {
                        break;
                    }
                }
                None => note_garbage(&seen, valid_seen, trimmed),
            }
        }
    });

    Ok(ChildTransport {
        sink,
        stream,
        child,
        output,
    })
}

fn note_garbage(output: &ChildOutput, valid_seen: bool, line: &str) {
    let quoted = quote(line);
    if valid_seen {
        tracing::warn!(line = %quoted, "an MCP server wrote a line that is not MCP; skipped");
    } else {
        output.garbage.send_if_modified(|first| {
            if first.is_none() {
                *first = Some(quoted);
                true
            } else {
                false
            }
        });
    }
}

/// Keeps `execution.taskSupport` of the tools in a `tools/list` result (rmcp's `Tool` drops
/// `execution`).
fn record_task_support(output: &ChildOutput, value: &Value) {
    let Some(tools) = value
        .get("result")
        .and_then(|r| r.get("tools"))
        .and_then(Value::as_array)
    else {
        return;
    };
    let Ok(mut map) = output.task_support.lock() else {
        return;
    };
    for tool in tools {
        if let Some(name) = tool.get("name").and_then(Value::as_str) {
            let support = tool
                .pointer("/execution/taskSupport")
                .and_then(Value::as_str)
                .unwrap_or("forbidden");
            map.insert(name.to_owned(), support.to_owned());
        }
    }
}

/// `line` shortened for an error message, on one line.
pub(crate) fn quote(line: &str) -> String {
    let one_line: String = line
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    let mut chars = one_line.chars();
    let short: String = chars.by_ref().take(QUOTE_CHARS).collect();
    if chars.next().is_some() {
        format!("{short}…")
    } else {
        short
    }
}

async fn write_line(out: &mut (impl AsyncWrite + Unpin), line: &str) -> std::io::Result<()> {
    let mut buf = Vec::with_capacity(line.len() + 1);
    buf.extend_from_slice(line.as_bytes());
    buf.push(b'\n');
    out.write_all(&buf).await?;
    out.flush().await
}

/// The reply to a line that is not a JSON-RPC request: a parse error (-32700) for what is not
/// JSON, an invalid-request error (-32600) for JSON that is not a message, with the request's
/// id when it has one (JSON-RPC 2.0: `null` otherwise).
pub(crate) fn error_reply(line: &str) -> String {
    let (code, message, id) = match serde_json::from_str::<Value>(line) {
        Err(e) => (
            -32700,
            format!("Parse error: the message is not JSON ({e})"),
            Value::Null,
        ),
        Ok(value) => {
            let id = value
                .get("id")
                .filter(|id| id.is_string() || id.is_number())
                .cloned()
                .unwrap_or(Value::Null);
            (
                -32600,
                "Invalid Request: not a JSON-RPC 2.0 request, notification or response".to_owned(),
                id,
            )
        }
    };
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}}).to_string()
}

/// What the server end writes: rmcp's messages and the error replies the reader makes.
pub(crate) enum Out {
    Message(Box<ServerJsonRpcMessage>),
    Raw(String),
}

/// The server end over this process's standard input and output: the transport halves for
/// rmcp, and the writer task (join it to flush the last messages).
pub(crate) type ServerTransport = (
    futures::sink::With<
        mpsc::Sender<Out>,
        Out,
        ServerJsonRpcMessage,
        std::future::Ready<Result<Out, mpsc::SendError>>,
        fn(ServerJsonRpcMessage) -> std::future::Ready<Result<Out, mpsc::SendError>>,
    >,
    mpsc::Receiver<ClientJsonRpcMessage>,
    tokio::task::JoinHandle<()>,
);

/// How many bytes of queued answers the server end gathers into one write.
const WRITE_BATCH_BYTES: usize = 64 * 1024;

/// Appends `out` and a newline to `buf` (a message that cannot be serialised is left out).
fn push_line(buf: &mut Vec<u8>, out: Out) {
    match out {
        Out::Message(message) => {
            let start = buf.len();
            match serde_json::to_writer(&mut *buf, &message) {
                Ok(()) => buf.push(b'\n'),
                Err(_) => buf.truncate(start),
            }
        }
        Out::Raw(line) => {
            buf.extend_from_slice(line.as_bytes());
            buf.push(b'\n');
        }
    }
}

/// Serves the server end over `input` and `output`.
pub(crate) fn server_transport(
    input: impl tokio::io::AsyncRead + Unpin + Send + 'static,
    output: impl AsyncWrite + Unpin + Send + 'static,
) -> ServerTransport {
    let (out_tx, mut out_rx) = mpsc::channel::<Out>(32);
    let writer = tokio::spawn(async move {
        let mut output = output;
        let mut buf = Vec::with_capacity(8 * 1024);
        while let Some(out) = out_rx.next().await {
            // What else is already queued goes out in the same write (pipelined answers).
            buf.clear();
            push_line(&mut buf, out);
            while buf.len() < WRITE_BATCH_BYTES {
                match out_rx.try_recv() {
                    Ok(out) => push_line(&mut buf, out),
                    _ => break,
                }
            }
            if output.write_all(&buf).await.is_err() || output.flush().await.is_err() {
                break;
            }
        }
    });
    let (mut forward, requests) = mpsc::channel::<ClientJsonRpcMessage>(32);
    let mut replies = out_tx.clone();
    tokio::spawn(async move {
        let mut lines = FramedRead::new(input, LinesCodec::new_with_max_length(MAX_LINE_BYTES));
        while let Some(line) = lines.next().await {
            let line = match line {
                Ok(line) => line,
                Err(LinesCodecError::MaxLineLengthExceeded) => {
                    let reply = json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32600,
                        "message": format!("Invalid Request: the message is over {MAX_LINE_BYTES} bytes")}});
                    let _ = replies.send(Out::Raw(reply.to_string())).await;
                    continue;
                }
                Err(LinesCodecError::Io(e)) if e.kind() == std::io::ErrorKind::InvalidData => {
                    let reply = json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32700,
                        "message": "Parse error: the message is not UTF-8"}});
                    let _ = replies.send(Out::Raw(reply.to_string())).await;
                    continue;
                }
                Err(LinesCodecError::Io(_)) => break,
            };
            let trimmed = line.trim();
            if trimmed.is_empty() {
                continue;
            }
            match serde_json::from_str::<ClientJsonRpcMessage>(trimmed) {
                Ok(message) => {
                    if forward.send(message).await.is_err() {
                        break;
                    }
                }
                Err(_) => {
                    tracing::warn!(line = %quote(trimmed), "a line from the MCP client is not a JSON-RPC message");
                    if replies.send(Out::Raw(error_reply(trimmed))).await.is_err() {
                        break;
                    }
                }
            }
        }
    });
    let to_out: fn(ServerJsonRpcMessage) -> std::future::Ready<Result<Out, mpsc::SendError>> =
        |m| std::future::ready(Ok(Out::Message(Box::new(m))));
    (out_tx.with(to_out), requests, writer)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replies_to_bad_lines_follow_json_rpc() {
        let reply: Value = serde_json::from_str(&error_reply("hello")).unwrap();
        assert_eq!(reply["error"]["code"], -32700);
        assert_eq!(reply["id"], Value::Null);
        assert_eq!(reply["jsonrpc"], "2.0");
        let reply: Value = serde_json::from_str(&error_reply(r#"{"id": 7, "x": 1}"#)).unwrap();
        assert_eq!(reply["error"]["code"], -32600);
        assert_eq!(reply["id"], 7);
        let reply: Value = serde_json::from_str(&error_reply("[1, 2]")).unwrap();
        assert_eq!(reply["error"]["code"], -32600);
        assert_eq!(reply["id"], Value::Null);
    }

    #[test]
    fn quotes_are_short_and_on_one_line() {
        assert_eq!(quote("a\nb"), "a b");
        let long = quote(&"x".repeat(500));
        assert_eq!(long.chars().count(), QUOTE_CHARS + 1);
        assert!(long.ends_with('…'));
    }
}
