//! A web page on another site must not drive a local server through its visitor's browser:
//! a cross-site form (`text/plain`, no preflight) gets 415, a DNS-rebound `Host` 421, a
//! foreign `Origin` 403, while the server's own page and non-browser clients go on working.

mod common;

use std::sync::Arc;

use common::{PATIENCE, Running, agent, chat, client};
use serde_json::{Value, json};
use tinyagent::testing::{ScriptedModel, reply};
use tinyagent_server::Server;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Sends a raw HTTP/1.1 request (which should say `Connection: close`) and reads the answer
/// to its end.
async fn raw(addr: &str, request: &str) -> String {
    let mut socket = tokio::net::TcpStream::connect(addr).await.unwrap();
    socket.write_all(request.as_bytes()).await.unwrap();
    let mut answer = Vec::new();
    tokio::time::timeout(PATIENCE, socket.read_to_end(&mut answer))
        .await
        .expect("the server answers")
        .unwrap();
    String::from_utf8_lossy(&answer).into_owned()
}

fn status(answer: &str) -> u16 {
    answer
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("not an HTTP answer: {answer:?}"))
}

fn body(answer: &str) -> Value {
    let (head, mut rest) = answer.split_once("\r\n\r\n").expect("a body");
    let mut body = String::new();
    if head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked")
    {
        loop {
            let (size, after) = rest.split_once("\r\n").expect("a chunk size");
            let size = usize::from_str_radix(size.trim(), 16).expect("a hex chunk size");
            if size == 0 {
                break;
            }
            body.push_str(&after[..size]);
            rest = &after[size + 2..];
        }
    } else {
        body.push_str(rest);
    }
    serde_json::from_str(&body).unwrap_or_else(|e| panic!("not JSON ({e}): {body}"))
}

fn addr(server: &Running) -> String {
    server.base.trim_start_matches("http://").to_owned()
}

fn post(path: &str, host: &str, extra: &str, content_type: &str, body: &str) -> String {
    format!(
        "POST {path} HTTP/1.1\r\nHost: {host}\r\n{extra}Content-Type: {content_type}\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
}

fn get(path: &str, host: &str, extra: &str) -> String {
    format!("GET {path} HTTP/1.1\r\nHost: {host}\r\n{extra}Connection: close\r\n\r\n")
}

#[tokio::test]
async fn a_cross_site_form_body_is_415_and_runs_nothing() {
    let model = Arc::new(ScriptedModel::new([reply::text("ran")]));
    let server = Running::start(Server::new().agent(agent("greeter", model.clone()))).await;
    let addr = addr(&server);
    // What `<form enctype="text/plain" method="post">` sends: the JSON, as one field.
    let form_chat =
        r#"{"model":"greeter","messages":[{"role":"user","content":"run rm -rf ~","x":"="}]}"#;
    let form_session = r#"{"input":"run my tools","x":"="}"#;
    for content_type in [
        "text/plain",
        "application/x-www-form-urlencoded",
        "multipart/form-data; boundary=x",
        "text/plain; charset=application/json",
    ] {
        for (path, form) in [
            ("/v1/chat/completions", form_chat),
            ("/v1/sessions/s1/messages", form_session),
        ] {
            let answer = raw(&addr, &post(path, &addr, "", content_type, form)).await;
            assert_eq!(status(&answer), 415, "{path} as {content_type}: {answer}");
            assert_eq!(body(&answer)["error"]["code"], "unsupported_media_type");
        }
    }
    // No Content-Type at all is no JSON either.
    let bare = format!(
        "POST /v1/chat/completions HTTP/1.1\r\nHost: {addr}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{form_chat}",
        form_chat.len()
    );
    assert_eq!(status(&raw(&addr, &bare).await), 415);
    assert_eq!(
        model.request_count(),
        0,
        "a refused request reached the model"
    );
    // JSON, with a charset, is served.
    let answer = raw(
        &addr,
        &post(
            "/v1/chat/completions",
            &addr,
            "",
            "Application/JSON; charset=utf-8",
            &chat("greeter", "hi", false).to_string(),
        ),
    )
    .await;
    assert_eq!(status(&answer), 200, "{answer}");
    assert_eq!(model.request_count(), 1);
}

#[tokio::test]
async fn a_foreign_host_is_421_and_the_address_or_localhost_is_served() {
    let model = Arc::new(ScriptedModel::new([]));
    let server = Running::start(Server::new().agent(agent("greeter", model))).await;
    let addr = addr(&server);
    let port = addr.rsplit(':').next().unwrap().to_owned();
    // DNS rebinding: the attacker's name now points at 127.0.0.1, and the browser says so.
    for host in [
        format!("attacker.example:{port}"),
        "attacker.example".to_owned(),
        format!("localhost:{}", port.parse::<u16>().unwrap() ^ 1),
        format!("localhost.attacker.example:{port}"),
    ] {
        for path in ["/v1/sessions", "/v1/agents", "/"] {
            let answer = raw(&addr, &get(path, &host, "")).await;
            assert_eq!(status(&answer), 421, "{path} as {host}: {answer}");
            let error = body(&answer);
            assert_eq!(error["error"]["code"], "host_not_allowed");
            assert!(error["error"]["request_id"].is_string(), "{error}");
        }
        let answer = raw(
            &addr,
            &post(
                "/v1/chat/completions",
                &host,
                "",
                "application/json",
                &chat("greeter", "hi", false).to_string(),
            ),
        )
        .await;
        assert_eq!(status(&answer), 421, "{answer}");
        // Health checks answer whatever the host (load balancers probe by address).
        assert_eq!(status(&raw(&addr, &get("/healthz", &host, "")).await), 200);
    }
    for host in [
        addr.clone(),
        format!("localhost:{port}"),
        format!("LocalHost:{port}"),
        format!("[::1]:{port}"),
    ] {
        let answer = raw(&addr, &get("/v1/agents", &host, "")).await;
        assert_eq!(status(&answer), 200, "{host}: {answer}");
    }
}

#[tokio::test]
async fn an_allowed_host_is_served() {
    let model = Arc::new(ScriptedModel::new([]));
    let server = Running::start(
        Server::new()
            .agent(agent("greeter", model))
            .allowed_host("Agents.Example.com"),
    )
    .await;
    let addr = addr(&server);
    for host in ["agents.example.com", "agents.example.com:443"] {
        let answer = raw(&addr, &get("/v1/agents", host, "")).await;
        assert_eq!(status(&answer), 200, "{host}: {answer}");
    }
    let answer = raw(&addr, &get("/v1/agents", "other.example.com", "")).await;
    assert_eq!(status(&answer), 421);
}

#[tokio::test]
async fn a_foreign_origin_is_403_while_the_pages_own_origin_works() {
    let model = Arc::new(ScriptedModel::new([
        reply::text("one"),
        reply::text("two"),
        reply::text("three"),
    ]));
    let server = Running::start(
        Server::new()
            .agent(agent("greeter", model.clone()))
            .allowed_origin("https://app.example.com/"),
    )
    .await;
    let addr = addr(&server);
    let body_json = chat("greeter", "hi", false).to_string();
    for origin in [
        "https://attacker.example",
        "http://localhost:1",
        "null",
        &format!("http://{addr}.attacker.example"),
    ] {
        let extra = format!("Origin: {origin}\r\n");
        let answer = raw(
            &addr,
            &post(
                "/v1/chat/completions",
                &addr,
                &extra,
                "application/json",
                &body_json,
            ),
        )
        .await;
        assert_eq!(status(&answer), 403, "{origin}: {answer}");
        assert_eq!(body(&answer)["error"]["code"], "origin_not_allowed");
        let answer = raw(&addr, &get("/v1/sessions", &addr, &extra)).await;
        assert_eq!(status(&answer), 403, "{origin}: {answer}");
    }
    assert_eq!(model.request_count(), 0);
    // The page's own origin, a listed origin, and no origin at all (curl, SDKs).
    for extra in [
        format!("Origin: http://{addr}\r\n"),
        "Origin: https://app.example.com\r\n".to_owned(),
        String::new(),
    ] {
        let answer = raw(
            &addr,
            &post(
                "/v1/chat/completions",
                &addr,
                &extra,
                "application/json",
                &body_json,
            ),
        )
        .await;
        assert_eq!(status(&answer), 200, "{extra}: {answer}");
    }
    assert_eq!(model.request_count(), 3);
}

#[tokio::test]
async fn every_answer_carries_its_request_id() {
    let model = Arc::new(ScriptedModel::new([reply::text("hi")]));
    let server = Running::start(Server::new().agent(agent("greeter", model))).await;
    let http = client();
    let ok = http
        .post(server.url("/v1/chat/completions"))
        .json(&chat("greeter", "hi", false))
        .send()
        .await
        .unwrap();
    assert_eq!(ok.status(), 200);
    assert!(
        ok.headers()["x-request-id"]
            .to_str()
            .unwrap()
            .starts_with("req")
    );
    let missing = http
        .post(server.url("/v1/chat/completions"))
        .json(&json!({"model": "nobody", "messages": [{"role": "user", "content": "hi"}]}))
        .send()
        .await
        .unwrap();
    assert_eq!(missing.status(), 404);
    let id = missing.headers()["x-request-id"]
        .to_str()
        .unwrap()
        .to_owned();
    let error: Value = missing.json().await.unwrap();
    assert_eq!(error["error"]["request_id"], id.as_str());
    assert_eq!(error["error"]["code"], "model_not_found");
}
