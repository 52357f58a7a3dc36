//! The page at `/` in a real browser: `tests/page*.py` drive Debian's chromium with Playwright
//! (both installed by `scripts/setup.sh --test`) against the server on loopback; and the
//! headers that keep the page from being framed or turned against its origin.

mod common;

use std::collections::HashMap;
use std::sync::Arc;

use common::{Running, agent};
use tinyagent::testing::{ScriptedModel, reply};
use tinyagent::tools::middleware::{Approval, ApprovalLayer, approval_fn};
use tinyagent_server::Server;

/// Runs a Playwright script against `server`.
async fn drive(script: &str, server: &Running, key: &str) -> String {
    let env = vec![
        ("TINYAGENT_BASE_URL", server.base.clone()),
        ("TINYAGENT_KEY", key.to_owned()),
    ];
    common::python(script, "playwright.sync_api", env).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_admin_key_opens_and_goes_on_with_another_keys_session_on_the_page() {
    let model = Arc::new(ScriptedModel::new([
        reply::text("answer 1"),
        reply::text("answer 2"),
    ]));
    let store = tinyagent::store::MemoryStore::new();
    let server = Running::start(
        Server::new()
            .agent(agent("calc", model.clone()))
            .store(store.clone())
            .named_api_key("alice", "sk-alice")
            .named_admin_key("ops", "sk-ops"),
    )
    .await;
    let first = common::client()
        .post(server.url("/v1/sessions/alice-chat/messages"))
        .bearer_auth("sk-alice")
        .json(&serde_json::json!({"input": "7 + 8?"}))
        .send()
        .await
        .unwrap();
    assert!(first.text().await.unwrap().contains("answer 1"));
    let stdout = drive("page_admin.py", &server, "sk-ops").await;
    assert!(stdout.contains("page admin: ok"), "{stdout}");
    // The admin's message went on with alice's session, as hers.
    use tinyagent::store::SessionStore;
    let key = tinyagent_server::store_key("alice", "alice-chat");
    let alices = store.load(&key).await.unwrap().unwrap();
    assert_eq!(alices.messages.len(), 4);
    assert_eq!(alices.messages[2].text(), "and then?");
    assert_eq!(alices.owner, "alice");
}

/// The CSP source of the inline `<tag>` element of `html`, worked out here on its own.
fn hash_of(html: &str, tag: &str) -> String {
    use base64::Engine;
    use sha2::Digest;
    let inner = html
        .split_once(&format!("<{tag}>"))
        .and_then(|(_, rest)| rest.split_once(&format!("</{tag}>")))
        .unwrap()
        .0;
    let digest = sha2::Sha256::digest(inner.as_bytes());
    format!(
        "'sha256-{}'",
        base64::engine::general_purpose::STANDARD.encode(digest)
    )
}

/// The directives of a `Content-Security-Policy`, by name.
fn directives(policy: &str) -> HashMap<String, Vec<String>> {
    policy
        .split(';')
        .filter_map(|d| {
            let mut words = d.split_whitespace();
            let name = words.next()?.to_owned();
            Some((name, words.map(str::to_owned).collect()))
        })
        .collect()
}

/// Another site, on another origin (another port): a page framing the server's page and one
/// of its own, noting when each has loaded.
async fn framing_site(victim: &str) -> String {
    let page = format!(
        "<!doctype html><title>a lure</title><script>window.loaded = {{}};</script>\
         <p>Click the blue button for a prize!</p>\
         <iframe id=\"victim\" src=\"{victim}/\" onload=\"window.loaded.victim = true\"></iframe>\
         <iframe id=\"control\" src=\"/inner\" onload=\"window.loaded.control = true\"></iframe>"
    );
    let app = axum::Router::new()
        .route(
            "/",
            axum::routing::get(move || async move { axum::response::Html(page) }),
        )
        .route(
            "/inner",
            axum::routing::get(|| async {
                axum::response::Html("<p id=\"inner\">the framing site's own page</p>")
            }),
        );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    base
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_page_cannot_be_framed_and_allows_only_its_own_script_and_style() {
    let server = Running::start(
        Server::new()
            .agent(agent("calc", Arc::new(ScriptedModel::new([]))))
            .api_key("sk-browser"),
    )
    .await;
    let page = common::client().get(server.url("/")).send().await.unwrap();
    assert_eq!(page.status(), 200);
    let headers = page.headers().clone();
    let html = page.text().await.unwrap();
    assert_eq!(headers["x-frame-options"], "DENY");
    assert_eq!(headers["x-content-type-options"], "nosniff");
    assert_eq!(headers["referrer-policy"], "no-referrer");
    let policy = headers["content-security-policy"].to_str().unwrap();
    let csp = directives(policy);
    let words = |name: &str| csp.get(name).cloned().unwrap_or_default();
    assert_eq!(words("default-src"), ["'none'"], "{policy}");
    assert_eq!(words("frame-ancestors"), ["'none'"], "{policy}");
    assert_eq!(words("base-uri"), ["'none'"], "{policy}");
    assert_eq!(words("form-action"), ["'none'"], "{policy}");
    assert_eq!(words("connect-src"), ["'self'"], "{policy}");
    // The inline script and style, each by its hash: nothing else runs or styles the page.
    assert_eq!(words("script-src"), [hash_of(&html, "script")], "{policy}");
    assert_eq!(words("style-src"), [hash_of(&html, "style")], "{policy}");
    for loose in [
        "'unsafe-inline'",
        "'unsafe-eval'",
        "'unsafe-hashes'",
        "*",
        "data:",
        "http:",
    ] {
        assert!(!policy.contains(loose), "{loose} in {policy}");
    }
    // The API's answers may not be framed nor run anything either.
    let api = common::client()
        .get(server.url("/v1/agents"))
        .bearer_auth("sk-browser")
        .send()
        .await
        .unwrap();
    assert_eq!(
        api.headers()["content-security-policy"],
        "default-src 'none'; frame-ancestors 'none'"
    );
    assert_eq!(api.headers()["x-content-type-options"], "nosniff");
    assert_eq!(api.headers()["x-frame-options"], "DENY");

    // In the real browser: framed by another origin, the page is refused.
    let framing = framing_site(&server.base).await;
    let env = vec![
        ("TINYAGENT_BASE_URL", server.base.clone()),
        ("TINYAGENT_FRAMING_URL", framing),
    ];
    let stdout = common::python("page_frame.py", "playwright.sync_api", env).await;
    assert!(stdout.contains("page frame: ok"), "{stdout}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_page_chats_shows_tool_calls_and_reopens_sessions() {
    let model = Arc::new(ScriptedModel::new([
        reply::tool_call("call_1", "add", r#"{"a": 7, "b": 8}"#),
        reply::text("7 + 8 = 15"),
    ]));
    let server = Running::start(
        Server::new()
            .agent(agent("calc", model.clone()))
            .api_key("sk-browser"),
    )
    .await;
    let stdout = drive("page.py", &server, "sk-browser").await;
    assert!(stdout.contains("page: ok"), "{stdout}");
    assert_eq!(model.request_count(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_page_shows_a_paused_call_and_approves_it() {
    let model = Arc::new(ScriptedModel::new([
        reply::tool_call("call_1", "add", r#"{"a": 2, "b": 3}"#),
        reply::text("2 + 3 = 5"),
    ]));
    let calc = tinyagent::LlmAgent::builder("calc")
        .description("The calc agent")
        .model(model.clone())
        .tool(common::add_tool())
        .middleware([ApprovalLayer::new(approval_fn(|_| async {
            Approval::defer("adding needs approval")
        }))
        .into()])
        .build()
        .unwrap();
    let server = Running::start(Server::new().agent(calc).api_key("sk-browser")).await;
    let stdout = drive("page_approval.py", &server, "sk-browser").await;
    assert!(stdout.contains("page approval: ok"), "{stdout}");
    assert_eq!(model.request_count(), 2);
}
