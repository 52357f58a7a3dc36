//! MCP over standard input and output (or any byte streams): the server end. A line that is
//! not a JSON-RPC message is answered with a JSON-RPC error (see `protocol::lines`).

use futures::channel::mpsc;
use futures::{SinkExt as _, StreamExt as _};
use rmcp::ServiceExt as _;
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use serde_json::{Value, json};
use tokio::io::{AsyncWrite, AsyncWriteExt as _};
use tokio_util::codec::{FramedRead, LinesCodec, LinesCodecError};

use super::McpServer;
use super::errors::McpServeError;
use super::std_streams;
use crate::protocol::errors::chain_text;
use crate::protocol::lines::{MAX_LINE_BYTES, quote};

impl McpServer {
    /// Serves MCP over this process's standard input and output until the client closes the
    /// connection. Write logs to standard error only: standard output carries MCP. A line
    /// that is not a JSON-RPC message is answered with a JSON-RPC parse error (-32700) or
    /// invalid-request error (-32600) and the session goes on.
    ///
    /// When standard input and output are pipes or sockets (as an MCP client that starts
    /// this program makes them), they are switched to non-blocking mode and read and written
    /// by the runtime's reactor, with no thread hand-off per message, and put back in blocking
    /// mode when serving ends; needs a runtime with I/O enabled (`#[tokio::main]` enables it).
    /// A terminal or a file is read and written through tokio's standard streams.
    pub async fn serve_stdio(self) -> Result<(), McpServeError> {
        let (input, output) = std_streams::std_streams();
        let served = self.serve_io(input, output).await;
        std_streams::restore_blocking();
        served
    }

    /// Serves MCP over any byte streams, newline-delimited as on stdio (see
    /// [`serve_stdio`](Self::serve_stdio)), until `input` ends.
    pub async fn serve_io(
        self,
        input: impl tokio::io::AsyncRead + Unpin + Send + 'static,
        output: impl tokio::io::AsyncWrite + Unpin + Send + 'static,
    ) -> Result<(), McpServeError> {
        let (sink, stream, writer) = server_transport(input, output);
        // A session of its own: its subscriptions end with it, even while other handles of
        // this server live on.
        let running = self
            .new_session()
            .serve((sink, stream))
            .await
            .map_err(|e| McpServeError::Handshake(chain_text(&e)))?;
        let ended = running.waiting().await;
        // Let the writer send what is queued (the answer to the last request).
        let _ = tokio::time::timeout(std::time::Duration::from_secs(2), writer).await;
        ended.map_err(|e| McpServeError::Task(e.to_string()))?;
        Ok(())
    }
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
}
