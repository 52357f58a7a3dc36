//! Helpers shared by the interop tests: the Python fixtures and bounded waits.

#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The pinned version of the MCP Python SDK the fixtures are written for.
pub const PYTHON_MCP: &str = "mcp==2.3.0";

pub fn fixture(name: &str) -> String {
    let path: PathBuf = [env!("CARGO_MANIFEST_DIR"), "tests", "fixtures", name]
        .iter()
        .collect();
    path.to_string_lossy().into_owned()
}

/// Fails the test, saying what to install, when python3 or the MCP SDK is missing.
pub fn require_python_mcp() {
    let out = Command::new("python3")
        .args(["-c", "import mcp, mcp.server.mcpserver, mcp.client.stdio"])
        .output();
    match out {
        Ok(out) if out.status.success() => {}
        Ok(out) => panic!(
            "the MCP Python SDK is missing or too old: run `python3 -m pip install {PYTHON_MCP}` \
             ({})",
            String::from_utf8_lossy(&out.stderr).trim()
        ),
        Err(e) => panic!(
            "python3 is needed for the MCP interop tests and could not be run ({e}); install it, \
             then `python3 -m pip install {PYTHON_MCP}`"
        ),
    }
}

/// The fixture server over streamable HTTP, killed on drop.
pub struct PythonHttpServer {
    child: Child,
    port: u16,
    pub url: String,
}

impl PythonHttpServer {
    /// Starts the server on a port it picks itself (no window in which another process could
    /// take a port chosen here).
    pub fn start() -> Self {
        Self::start_on(0)
    }

    /// The port the server listens on.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Starts the server on `port` (0: any free port) and waits, at most 30 s, until it
    /// says it listens.
    pub fn start_on(port: u16) -> Self {
        require_python_mcp();
        let mut child = Command::new("python3")
            .arg(fixture("fixture_server.py"))
            .args(["http", &port.to_string()])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start the Python fixture server");
        let stdout = child.stdout.take().expect("piped stdout");
        let line = first_line_within(stdout, Duration::from_secs(30));
        let bound = match line {
            Ok(line) => line
                .strip_prefix("listening on ")
                .and_then(|p| p.trim().parse::<u16>().ok()),
            Err(problem) => {
                let _ = child.kill();
                let status = child.wait();
                panic!("the Python fixture server (port {port}) {problem}; exit: {status:?}");
            }
        };
        let Some(bound) = bound else {
            let _ = child.kill();
            let _ = child.wait();
            panic!("the Python fixture server did not say `listening on PORT`");
        };
        assert!(port == 0 || bound == port, "asked for {port}, got {bound}");
        Self {
            child,
            port: bound,
            url: format!("http://127.0.0.1:{bound}/mcp"),
        }
    }
}

/// The first line `reader` gives, read on a thread so that a child that never writes fails
/// the test after `limit` instead of hanging it.
pub fn first_line_within(
    reader: impl std::io::Read + Send + 'static,
    limit: Duration,
) -> Result<String, String> {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut line = String::new();
        let result = BufReader::new(reader)
            .read_line(&mut line)
            .map(|n| (n, line));
        let _ = tx.send(result);
    });
    match rx.recv_timeout(limit) {
        Ok(Ok((0, _))) => Err("closed its output before saying it listens".to_owned()),
        Ok(Ok((_, line))) => Ok(line.trim_end().to_owned()),
        Ok(Err(e)) => Err(format!("could not be read from: {e}")),
        Err(_) => Err(format!("said nothing within {limit:?}")),
    }
}

impl Drop for PythonHttpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Polls `check` until it is true, for at most `limit`.
pub async fn eventually<F, Fut>(limit: Duration, mut check: F) -> bool
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = Instant::now() + limit;
    loop {
        if check().await {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

/// Serves `tools` over streamable HTTP on 127.0.0.1, runs the Python client `script` (a
/// fixture) with the endpoint's URL, and returns the JSON it printed; fails the test, with the
/// client's output, when it fails or takes more than 60 s.
pub async fn python_client_report(
    tools: Vec<std::sync::Arc<dyn tinyagent::Tool>>,
    script: &str,
) -> serde_json::Value {
    require_python_mcp();
    let handle = tinyagent_mcp::McpServer::new(tools)
        .serve_http("127.0.0.1:0")
        .await
        .expect("serve on loopback");
    let out = tokio::process::Command::new("python3")
        .arg(fixture(script))
        .arg(handle.url())
        .kill_on_drop(true)
        .output();
    let out = tokio::time::timeout(Duration::from_secs(60), out)
        .await
        .expect("the Python client finished within 60 s")
        .expect("run the Python client");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "the Python client {script} failed: {stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    handle.shutdown().await;
    serde_json::from_str(stdout.trim()).unwrap_or_else(|e| panic!("not JSON ({e}): {stdout}"))
}
