//! MCP in the trace: an agent's call of a remote MCP tool is a `tools/call` client span, and
//! the server's answer a `tools/call` server span continuing the same trace (its context sent
//! in the request's `_meta`), over streamable HTTP on loopback; both timed as MCP metrics.

mod common;

use std::collections::HashMap;

use serde_json::Value;
use tinyagent::testing::{ScriptedModel, reply};
use tinyagent::{AgentExt as _, LlmAgent, Session};
use tinyagent_mcp::{McpServer, McpToolset};
use tinyagent_otel::Telemetry;
use tracing_subscriber::prelude::*;

use common::{Receiver, broken, parse_prometheus, span, weather};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_remote_tool_call_is_one_trace_from_agent_to_server() {
    let receiver = Receiver::start().await;
    let telemetry = Telemetry::builder()
        .env(false)
        .endpoint(&receiver.http)
        .prometheus(true)
        .build()
        .unwrap();
    // The only test of this binary: the server's tasks run on every worker thread.
    tracing_subscriber::registry()
        .with(telemetry.layer())
        .init();

    let served = McpServer::new(vec![weather(), broken()])
        .serve_http("127.0.0.1:0")
        .await
        .unwrap();
    // The toolset holds the connection: it lives as long as the run.
    let toolset = McpToolset::http(served.url());
    let tools = toolset.tools().await.unwrap();
    let agent = LlmAgent::builder("remote")
        .model(ScriptedModel::new([
            reply::tool_calls([
                ("c1", "get_weather", r#"{"city":"Oslo"}"#),
                ("c2", "broken", "{}"),
            ]),
            reply::text("done"),
        ]))
        .tools(tools)
        .build()
        .unwrap();
    agent.ask(&Session::new(), "Weather?").await.unwrap();

    let text = telemetry.prometheus().unwrap().render();
    telemetry.flush();
    // One run: two model calls, two tool calls, each a client and a server span.
    let spans = receiver.spans(9).await;
    let by_id: HashMap<&str, &Value> = spans
        .iter()
        .map(|s| (s["span_id"].as_str().unwrap(), s))
        .collect();
    let trace = span(&spans, "invoke_agent remote")["trace_id"].clone();
    let of_kind = |name: &str, kind: &str| -> &Value {
        spans
            .iter()
            .find(|s| s["name"] == name && s["kind"] == kind)
            .unwrap_or_else(|| panic!("no {kind} span {name}: {spans:#?}"))
    };
    for (tool, failed) in [("get_weather", false), ("broken", true)] {
        let name = format!("tools/call {tool}");
        let client = of_kind(&name, "SPAN_KIND_CLIENT");
        let server = of_kind(&name, "SPAN_KIND_SERVER");
        assert_eq!(client["trace_id"], trace);
        assert_eq!(server["trace_id"], trace, "the server continued the trace");
        assert_eq!(server["parent_span_id"], client["span_id"]);
        let parent = by_id[client["parent_span_id"].as_str().unwrap()];
        assert_eq!(parent["name"], format!("execute_tool {tool}"));
        for s in [client, server] {
            let attributes = &s["attributes"];
            assert_eq!(attributes["mcp.method.name"], "tools/call");
            assert_eq!(attributes["gen_ai.tool.name"], tool);
            assert!(attributes["jsonrpc.request.id"].is_string(), "{s:#}");
        }
        if failed {
            assert_eq!(server["attributes"]["error.type"], "tool_error");
            assert_eq!(server["status"], "STATUS_CODE_ERROR");
            assert_eq!(client["status"], "STATUS_CODE_ERROR");
        } else {
            assert!(
                server["attributes"].get("error.type").is_none(),
                "{server:#}"
            );
        }
    }

    // MCP durations, on both sides, by tool.
    let samples = parse_prometheus(&text);
    for side in ["client", "server"] {
        let name = format!("mcp_{side}_operation_duration_seconds_count");
        let count: f64 = samples
            .iter()
            .filter(|s| {
                s["name"] == name.as_str() && s["labels"]["mcp_method_name"] == "tools/call"
            })
            .map(|s| s["value"].as_f64().unwrap())
            .sum();
        assert_eq!(count, 2.0, "{name}");
    }
}
