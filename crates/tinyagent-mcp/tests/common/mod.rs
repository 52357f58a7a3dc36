//! Helpers shared by the interop tests: the Python fixtures and free ports.

#![allow(dead_code)]

use std::net::{SocketAddr, TcpListener, TcpStream};
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

/// A port on 127.0.0.1 that was free a moment ago.
pub fn free_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
    listener.local_addr().expect("local addr").port()
}

/// The fixture server over streamable HTTP, killed on drop.
pub struct PythonHttpServer {
    child: Child,
    port: u16,
    pub url: String,
}

impl PythonHttpServer {
    pub fn start() -> Self {
        Self::start_on(free_port())
    }

    /// The port the server listens on.
    pub fn port(&self) -> u16 {
        self.port
    }

    pub fn start_on(port: u16) -> Self {
        require_python_mcp();
        let child = Command::new("python3")
            .arg(fixture("fixture_server.py"))
            .args(["http", &port.to_string()])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start the Python fixture server");
        let mut server = Self {
            child,
            port,
            url: format!("http://127.0.0.1:{port}/mcp"),
        };
        let addr = SocketAddr::from(([127, 0, 0, 1], port));
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_ok() {
                break;
            }
            if let Ok(Some(status)) = server.child.try_wait() {
                panic!("the Python fixture server exited early: {status}");
            }
            assert!(
                Instant::now() < deadline,
                "the Python fixture server did not listen on {addr} within 30 s"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        server
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
