//! MCP over a child process's standard input and output: the client end. It notices a server
//! that prints something other than MCP on its standard output (see `protocol::lines`).

use std::collections::HashMap;
use std::ffi::{OsStr, OsString};
use std::path::Path;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::channel::mpsc;
use futures::{SinkExt as _, StreamExt as _};
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::service::{ClientInitializeError, RunningService};
use rmcp::{RoleClient, ServiceExt as _};
use serde_json::Value;
use tinyagent::ToolError;
use tokio::io::{AsyncWrite, AsyncWriteExt as _};
use tokio::process::{Child, Command};
use tokio::sync::{oneshot, watch};
use tokio_util::codec::{FramedRead, LinesCodec, LinesCodecError};

use super::bridge::Bridge;
use super::errors::{connect_error, init_error_text};
use super::handler::ToolsetClient;
use crate::protocol::lines::{MAX_LINE_BYTES, quote};

/// How long a server that wrote something other than MCP on its standard output gets to
/// finish the handshake anyway before connecting fails, naming what it wrote.
pub(super) const GARBAGE_GRACE: Duration = Duration::from_secs(2);

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

async fn write_line(out: &mut (impl AsyncWrite + Unpin), line: &str) -> std::io::Result<()> {
    let mut buf = Vec::with_capacity(line.len() + 1);
    buf.extend_from_slice(line.as_bytes());
    buf.push(b'\n');
    out.write_all(&buf).await?;
    out.flush().await
}

/// A server started and connected over its standard input and output.
pub(super) struct ChildConnection {
    pub service: RunningService<RoleClient, ToolsetClient>,
    /// The server process (killed when dropped).
    pub child: Child,
    /// What the server process wrote.
    pub output: Arc<ChildOutput>,
}

/// The command that starts a server: `program` with its arguments, the variables set or
/// removed, and its working directory.
pub(super) fn command(
    program: &OsStr,
    args: &[OsString],
    envs: &[(OsString, Option<OsString>)],
    cwd: Option<&Path>,
) -> Command {
    let mut command = Command::new(program);
    command.args(args);
    for (key, value) in envs {
        match value {
            Some(value) => command.env(key, value),
            None => command.env_remove(key),
        };
    }
    if let Some(cwd) = cwd {
        command.current_dir(cwd);
    }
    command
}

/// Starts `command` and makes the MCP handshake with it as `client`, the server's messages
/// seen by `bridge` first; `ended` is told when they end. A server that writes something
/// other than MCP and does not finish the handshake within [`GARBAGE_GRACE`] fails, quoting
/// what it wrote; one whose handshake fails is given a moment to exit, to report how.
pub(super) async fn connect(
    label: &str,
    command: Command,
    client: ToolsetClient,
    bridge: &Arc<Bridge>,
    ended: oneshot::Sender<()>,
) -> Result<ChildConnection, ToolError> {
    let spawned = spawn(command).map_err(|e| {
        ToolError::unavailable(format!("MCP server `{label}` could not be started: {e}"))
            .with_source(e)
    })?;
    let ChildTransport {
        sink,
        stream,
        mut child,
        output,
    } = spawned;
    let bridge = Arc::clone(bridge);
    let stream = futures::StreamExt::inspect(stream, move |m| bridge.on_wire(m));
    let stream = futures::StreamExt::chain(stream, end_marker(ended));
    let served = handshake(client.serve((sink, stream)), &output)
        .await
        .map_err(|line| {
            connect_error(
                label,
                format!(
                    "it does not speak MCP on its standard output: it wrote `{line}` \
                     (an MCP server must write only JSON-RPC messages there; logs \
                     belong on standard error)"
                ),
            )
        })?;
    match served {
        Ok(service) => Ok(ChildConnection {
            service,
            child,
            output,
        }),
        Err(e) => {
            let text = handshake_failure(&e, &mut child, &output).await;
            Err(connect_error(label, text).with_source(e))
        }
    }
}

/// Runs the handshake `serve`, given [`GARBAGE_GRACE`] more once the server wrote something
/// other than MCP: its outcome, or (`Err`) that line when it did not finish in time.
async fn handshake<F: Future>(serve: F, output: &ChildOutput) -> Result<F::Output, String> {
    let mut garbage = output.garbage.subscribe();
    tokio::pin!(serve);
    tokio::select! {
        served = &mut serve => Ok(served),
        () = async { drop(garbage.wait_for(Option::is_some).await) } => {
            match tokio::time::timeout(GARBAGE_GRACE, &mut serve).await {
                Ok(served) => Ok(served),
                Err(_) => Err(output.garbage.borrow().clone().unwrap_or_default()),
            }
        }
    }
}

/// Why the handshake with a started server failed: how the process exited, if it did within
/// half a second (it is reaped meanwhile), and what it wrote that is not MCP.
async fn handshake_failure(
    error: &ClientInitializeError,
    child: &mut Child,
    output: &ChildOutput,
) -> String {
    let mut text = init_error_text(error);
    // Give the process a moment to be reaped, to report its exit.
    let status = tokio::time::timeout(Duration::from_millis(500), child.wait()).await;
    if let Ok(Ok(status)) = status {
        text = format!("the process exited ({status}) before the MCP handshake finished");
    }
    if let Some(line) = output.garbage.borrow().clone() {
        text.push_str(&format!(
            "; it wrote `{line}` on its standard output, which is not MCP"
        ));
    }
    text
}

/// A stream with no items that tells `ended` when it is polled: chained after a server's
/// messages, it says that they ended (the server closed the connection). When the connection
/// is dropped first, `ended` is dropped unsent.
fn end_marker<T>(ended: oneshot::Sender<()>) -> impl futures::Stream<Item = T> + Send + Unpin
where
    T: Send,
{
    let told = futures::future::lazy(move |_| ended.send(()));
    futures::StreamExt::filter_map(futures::stream::once(told), |_| std::future::ready(None))
}
