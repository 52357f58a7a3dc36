//! OAuth 2.1 against a loopback authorization server: discovery, dynamic client registration,
//! the authorization-code flow with PKCE (the challenge checked by the server), the token sent
//! to the MCP endpoint, reuse of stored tokens, and the errors a user sees.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::{Form, Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use base64::Engine as _;
use serde_json::{Value, json};
use sha2::Digest as _;
use tinyagent::{ToolContext, ToolErrorKind};
use tinyagent_mcp::{McpOAuth, McpServer, McpToolset};

/// What the authorization server saw and issued.
#[derive(Default)]
struct Auth {
    base: String,
    deny: bool,
    clients: HashMap<String, Value>,
    codes: HashMap<String, (String, String)>,
    tokens: Vec<String>,
    authorizations: usize,
    refused_requests: usize,
}

type Shared = Arc<Mutex<Auth>>;

async fn resource_metadata(State(auth): State<Shared>) -> Json<Value> {
    let base = auth.lock().unwrap().base.clone();
    Json(json!({
        "resource": format!("{base}/mcp"),
        "authorization_servers": [base],
        "scopes_supported": ["tools"],
        "bearer_methods_supported": ["header"],
    }))
}

async fn server_metadata(State(auth): State<Shared>) -> Json<Value> {
    let base = auth.lock().unwrap().base.clone();
    Json(json!({
        "issuer": base,
        "authorization_endpoint": format!("{base}/authorize"),
        "token_endpoint": format!("{base}/token"),
        "registration_endpoint": format!("{base}/register"),
        "response_types_supported": ["code"],
        "grant_types_supported": ["authorization_code", "refresh_token"],
        "code_challenge_methods_supported": ["S256"],
        "token_endpoint_auth_methods_supported": ["none"],
        "scopes_supported": ["tools"],
    }))
}

async fn register(State(auth): State<Shared>, Json(body): Json<Value>) -> Response {
    let mut auth = auth.lock().unwrap();
    let id = format!("client-{}", auth.clients.len() + 1);
    let mut client = body.clone();
    client["client_id"] = json!(id);
    client["token_endpoint_auth_method"] = json!("none");
    auth.clients.insert(id, client.clone());
    (StatusCode::CREATED, Json(client)).into_response()
}

async fn authorize(
    State(auth): State<Shared>,
    Query(q): Query<HashMap<String, String>>,
) -> Response {
    let mut auth = auth.lock().unwrap();
    let client = q
        .get("client_id")
        .and_then(|id| auth.clients.get(id))
        .cloned();
    let redirect = q.get("redirect_uri").cloned().unwrap_or_default();
    let state = q.get("state").cloned().unwrap_or_default();
    let registered = client
        .as_ref()
        .and_then(|c| c["redirect_uris"].as_array().cloned())
        .unwrap_or_default();
    if client.is_none()
        || !registered.iter().any(|r| r == &json!(redirect))
        || q.get("response_type").map(String::as_str) != Some("code")
        || q.get("code_challenge_method").map(String::as_str) != Some("S256")
    {
        return (StatusCode::BAD_REQUEST, "bad authorization request").into_response();
    }
    auth.authorizations += 1;
    let location = if auth.deny {
        format!("{redirect}?error=access_denied&error_description=the+user+said+no&state={state}")
    } else {
        let code = format!("code-{}", auth.authorizations);
        let challenge = q.get("code_challenge").cloned().unwrap_or_default();
        auth.codes
            .insert(code.clone(), (challenge, redirect.clone()));
        format!("{redirect}?code={code}&state={state}")
    };
    (StatusCode::FOUND, [(header::LOCATION, location)]).into_response()
}

async fn token(State(auth): State<Shared>, Form(form): Form<HashMap<String, String>>) -> Response {
    let mut auth = auth.lock().unwrap();
    let bad = |what: &str| {
        (
            StatusCode::BAD_REQUEST,
            Json(json!({"error": "invalid_grant", "error_description": what})),
        )
            .into_response()
    };
    if form.get("grant_type").map(String::as_str) != Some("authorization_code") {
        return bad("unsupported grant");
    }
    let Some((challenge, redirect)) = form.get("code").and_then(|c| auth.codes.remove(c)) else {
        return bad("unknown or used code");
    };
    let verifier = form.get("code_verifier").cloned().unwrap_or_default();
    let computed = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .encode(sha2::Sha256::digest(verifier.as_bytes()));
    if computed != challenge {
        return bad("PKCE verifier does not match the challenge");
    }
    if form.get("redirect_uri") != Some(&redirect) {
        return bad("redirect_uri differs from the authorization request's");
    }
    let access = format!("access-{}", auth.tokens.len() + 1);
    auth.tokens.push(access.clone());
    Json(json!({
        "access_token": access,
        "token_type": "Bearer",
        "expires_in": 3600,
        "refresh_token": format!("refresh-{}", auth.tokens.len()),
        "scope": "tools",
    }))
    .into_response()
}

/// Refuses MCP requests without an issued token, with the challenge the MCP spec describes.
async fn require_token(
    State(auth): State<Shared>,
    headers: HeaderMap,
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    let presented = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::to_owned);
    let base = {
        let mut auth = auth.lock().unwrap();
        if presented.is_some_and(|t| auth.tokens.contains(&t)) {
            None
        } else {
            auth.refused_requests += 1;
            Some(auth.base.clone())
        }
    };
    match base {
        None => next.run(request).await,
        Some(base) => (
            StatusCode::UNAUTHORIZED,
            [(
                header::WWW_AUTHENTICATE,
                format!(
                    "Bearer resource_metadata=\"{base}/.well-known/oauth-protected-resource\", scope=\"tools\""
                ),
            )],
        )
            .into_response(),
    }
}

/// Starts the authorization server and the protected MCP endpoint (the demo tools) on one
/// loopback port.
async fn start(deny: bool) -> (String, Shared) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let auth: Shared = Arc::new(Mutex::new(Auth {
        base: base.clone(),
        deny,
        ..Auth::default()
    }));
    let mcp = Router::new()
        .nest_service(
            "/mcp",
            McpServer::new(tinyagent_demo::all_tools()).http_service(),
        )
        .layer(axum::middleware::from_fn_with_state(
            auth.clone(),
            require_token,
        ));
    let app = Router::new()
        .route(
            "/.well-known/oauth-protected-resource",
            get(resource_metadata),
        )
        .route(
            "/.well-known/oauth-protected-resource/mcp",
            get(resource_metadata),
        )
        .route(
            "/.well-known/oauth-authorization-server",
            get(server_metadata),
        )
        .route("/register", post(register))
        .route("/authorize", get(authorize))
        .route("/token", post(token))
        .with_state(auth.clone())
        .merge(mcp);
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (format!("{base}/mcp"), auth)
}

/// Plays the user's browser: visits the authorization URL and follows its redirect to the
/// loopback listener, as a browser would.
fn browser(url: &str) {
    let url = url.to_owned();
    tokio::spawn(async move {
        let client = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .unwrap();
        let response = client.get(&url).send().await.unwrap();
        assert_eq!(response.status(), 302, "the authorization server redirects");
        let location = response.headers()[header::LOCATION]
            .to_str()
            .unwrap()
            .to_owned();
        let page = client.get(&location).send().await.unwrap();
        assert_eq!(page.status(), 200);
        assert!(
            page.text()
                .await
                .unwrap()
                .contains("You can close this tab")
        );
    });
}

fn temp_file(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("tinyagent-oauth-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir.join("credentials.json")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_loopback_flow_authorizes_once_and_the_token_is_reused() {
    let (url, auth) = start(false).await;
    let file = temp_file("reuse");
    let oauth = McpOAuth::loopback(browser).credentials_file(&file);

    let toolset = McpToolset::http(&url).oauth(oauth.clone());
    let tools = toolset.tools().await.expect("authorized and listed");
    let calculator = tools.iter().find(|t| t.name() == "calculator").unwrap();
    let out = calculator
        .handle(
            &ToolContext::default(),
            r#"{"operation":"multiply","a":7,"b":8}"#,
        )
        .await
        .expect("a call with the token");
    assert!(out.contains("56"), "{out}");
    {
        let auth = auth.lock().unwrap();
        assert_eq!(auth.authorizations, 1);
        assert_eq!(auth.tokens.len(), 1);
        let client = auth.clients.values().next().unwrap();
        assert_eq!(client["client_name"], "tinyagent");
        let redirect = client["redirect_uris"][0].as_str().unwrap();
        assert!(
            redirect.starts_with("http://127.0.0.1:") && redirect.ends_with("/callback"),
            "{redirect}"
        );
    }

    // The tokens are in the file, readable by the owner only.
    let stored: Value = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
    assert_eq!(stored["client_id"], "client-1");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&file).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }

    // A new toolset (a new process, as far as it knows) reuses them: nobody is asked again.
    let again = McpToolset::http(&url)
        .oauth(McpOAuth::loopback(|_| panic!("asked again")).credentials_file(&file));
    assert_eq!(again.tools().await.unwrap().len(), tools.len());
    assert_eq!(auth.lock().unwrap().authorizations, 1);
    assert!(!format!("{again:?}").contains("access-1"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_custom_flow_gets_the_url_and_returns_the_redirect() {
    let (url, auth) = start(false).await;
    let seen = Arc::new(Mutex::new(None));
    let record = seen.clone();
    let oauth = McpOAuth::custom("http://127.0.0.1:9/oauth/done", move |authorization_url| {
        let record = record.clone();
        async move {
            *record.lock().unwrap() = Some(authorization_url.clone());
            let client = reqwest::Client::builder()
                .redirect(reqwest::redirect::Policy::none())
                .build()
                .unwrap();
            let response = client.get(&authorization_url).send().await.unwrap();
            Ok(response.headers()[header::LOCATION]
                .to_str()
                .unwrap()
                .to_owned())
        }
    })
    .client_name("support-bot")
    .scopes(["tools"]);
    let tools = McpToolset::http(&url).oauth(oauth).tools().await.unwrap();
    assert!(!tools.is_empty());
    let authorization_url = seen.lock().unwrap().clone().unwrap();
    assert!(
        authorization_url.contains("code_challenge_method=S256"),
        "{authorization_url}"
    );
    assert!(
        authorization_url.contains("scope=tools"),
        "{authorization_url}"
    );
    let auth = auth.lock().unwrap();
    assert_eq!(
        auth.clients.values().next().unwrap()["client_name"],
        "support-bot"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_authorization_says_what_the_server_answered() {
    let (url, _auth) = start(true).await;
    let err = McpToolset::http(&url)
        .oauth(McpOAuth::loopback(browser))
        .tools()
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ToolErrorKind::Denied, "{err}");
    assert!(
        err.message()
            .contains("the authorization server refused access: access_denied (the user said no)"),
        "{err}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nobody_authorizing_ends_with_a_timeout_that_says_what_to_do() {
    let (url, _auth) = start(false).await;
    let err = McpToolset::http(&url)
        .oauth(McpOAuth::loopback(|_| {}).authorization_timeout(Duration::from_millis(300)))
        .tools()
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ToolErrorKind::TimedOut, "{err}");
    assert!(err.message().contains("open the URL shown"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_oauth_a_protected_server_says_credentials_are_needed() {
    let (url, auth) = start(false).await;
    let err = McpToolset::http(&url).tools().await.unwrap_err();
    assert_eq!(err.kind(), ToolErrorKind::Denied, "{err}");
    assert!(err.message().contains("401 Unauthorized"), "{err}");
    assert!(err.message().contains("use OAuth"), "{err}");
    assert!(auth.lock().unwrap().refused_requests >= 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_without_authorization_is_used_without_asking() {
    let server = McpServer::new(tinyagent_demo::all_tools())
        .serve_http("127.0.0.1:0")
        .await
        .unwrap();
    let tools = McpToolset::http(server.url())
        .oauth(McpOAuth::loopback(|_| panic!("asked for an open server")))
        .tools()
        .await
        .expect("no authorization needed");
    assert_eq!(tools.len(), tinyagent_demo::all_tools().len());
    server.shutdown().await;
}
