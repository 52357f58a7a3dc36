//! OAuth 2.1 for MCP servers over HTTP: the authorization-code flow with PKCE, as the MCP
//! specification asks of clients, on rmcp's implementation (metadata discovery, dynamic client
//! registration, token exchange and refresh).

use std::fmt;
use std::future::Future;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use rmcp::transport::auth::{
    AuthError, AuthorizationManager, AuthorizationRequest, CredentialStore,
    InMemoryCredentialStore, OAuthState, StoredCredentials,
};
use tinyagent::{BoxFuture, ToolError};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// How long [`McpOAuth::loopback`] waits for the user to finish authorizing in the browser.
pub const DEFAULT_AUTHORIZATION_TIMEOUT: Duration = Duration::from_secs(300);

/// The path of the loopback redirect URI.
const CALLBACK_PATH: &str = "/callback";

type Authorizer =
    Arc<dyn Fn(String) -> BoxFuture<'static, Result<String, ToolError>> + Send + Sync>;
type Opener = Arc<dyn Fn(&str) + Send + Sync>;

/// How the user authorizes: in a browser that comes back to a loopback listener, or through a
/// function of the application's own.
#[derive(Clone)]
enum Flow {
    Loopback {
        open: Opener,
        timeout: Duration,
    },
    Custom {
        redirect_uri: String,
        authorize: Authorizer,
    },
}

/// OAuth 2.1 authorization for an MCP server over HTTP (the authorization-code flow with
/// PKCE), given to [`McpToolset::oauth`](crate::McpToolset::oauth).
///
/// When the toolset first connects and holds no token, it discovers the server's
/// authorization server (`/.well-known/oauth-protected-resource`, then the authorization
/// server's metadata), registers as a client when the server allows dynamic registration (or
/// uses [`client_id`](Self::client_id)), and sends the user to the authorization URL. The
/// tokens it gets are kept for later connections and refreshed when they expire; with
/// [`credentials_file`](Self::credentials_file) they survive the process.
///
/// Two ways for the user to authorize:
///
/// - [`McpOAuth::loopback`]: for programs on the user's machine (the CLI's `--mcp-oauth`). A
///   listener on `127.0.0.1` receives the browser's redirect; `open` shows the user the
///   authorization URL (print it, or start a browser).
/// - [`McpOAuth::custom`]: for applications that run the browser part themselves (a web app
///   with its own redirect route): a function gets the authorization URL and returns the URL
///   the browser was redirected to.
///
/// ```no_run
/// use tinyagent_mcp::{McpOAuth, McpToolset};
///
/// let toolset = McpToolset::http("https://mcp.example.com/mcp").oauth(
///     McpOAuth::loopback(|url| eprintln!("Open this URL to authorize: {url}"))
///         .scopes(["tools:read"])
///         .credentials_file("/home/me/.config/my-app/mcp-example.json"),
/// );
/// ```
#[derive(Clone)]
pub struct McpOAuth {
    flow: Flow,
    client_name: String,
    client_id: Option<String>,
    client_secret: Option<Arc<str>>,
    scopes: Vec<String>,
    store: Store,
}

impl fmt::Debug for McpOAuth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let flow = match &self.flow {
            Flow::Loopback { timeout, .. } => format!("loopback (waits {timeout:?})"),
            Flow::Custom { redirect_uri, .. } => format!("custom (redirect to {redirect_uri})"),
        };
        f.debug_struct("McpOAuth")
            .field("flow", &flow)
            .field("client_name", &self.client_name)
            .field("client_id", &self.client_id)
            .field("client_secret", &self.client_secret.as_ref().map(|_| "***"))
            .field("scopes", &self.scopes)
            .field("store", &self.store)
            .finish()
    }
}

impl McpOAuth {
    /// Authorization in the user's browser, redirected back to a listener on `127.0.0.1` (a
    /// free port, path `/callback`). `open` gets the authorization URL to show the user.
    pub fn loopback(open: impl Fn(&str) + Send + Sync + 'static) -> Self {
        Self::with_flow(Flow::Loopback {
            open: Arc::new(open),
            timeout: DEFAULT_AUTHORIZATION_TIMEOUT,
        })
    }

    /// Authorization run by the application: `authorize` gets the authorization URL, has the
    /// user visit it, and returns the full URL the browser was redirected to (on
    /// `redirect_uri`, with `code` and `state` in its query).
    pub fn custom<F, Fut>(redirect_uri: impl Into<String>, authorize: F) -> Self
    where
        F: Fn(String) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<String, ToolError>> + Send + 'static,
    {
        Self::with_flow(Flow::Custom {
            redirect_uri: redirect_uri.into(),
            authorize: Arc::new(move |url| Box::pin(authorize(url))),
        })
    }

    fn with_flow(flow: Flow) -> Self {
        Self {
            flow,
            client_name: "tinyagent".to_owned(),
            client_id: None,
            client_secret: None,
            scopes: Vec::new(),
            store: Store::Memory(InMemoryCredentialStore::new()),
        }
    }

    /// The client name shown to the user when the client registers itself (`tinyagent` by
    /// default).
    pub fn client_name(mut self, name: impl Into<String>) -> Self {
        self.client_name = name.into();
        self
    }

    /// A client registered beforehand with the authorization server, instead of dynamic
    /// registration.
    pub fn client_id(mut self, client_id: impl Into<String>) -> Self {
        self.client_id = Some(client_id.into());
        self
    }

    /// The secret of a confidential pre-registered client. Never printed or logged.
    pub fn client_secret(mut self, secret: impl Into<String>) -> Self {
        self.client_secret = Some(Arc::from(secret.into()));
        self
    }

    /// The scopes to ask for (by default what the server's metadata suggests).
    pub fn scopes<S: Into<String>>(mut self, scopes: impl IntoIterator<Item = S>) -> Self {
        self.scopes = scopes.into_iter().map(Into::into).collect();
        self
    }

    /// How long [`McpOAuth::loopback`] waits for the browser's redirect (5 minutes by default).
    pub fn authorization_timeout(mut self, timeout: Duration) -> Self {
        if let Flow::Loopback { timeout: t, .. } = &mut self.flow {
            *t = timeout;
        }
        self
    }

    /// Keeps the client registration and tokens in a JSON file (created with owner-only
    /// permissions), so that the next process reuses them instead of asking the user again.
    pub fn credentials_file(mut self, path: impl Into<PathBuf>) -> Self {
        self.store = Store::File(Arc::new(path.into()));
        self
    }

    /// An authorization manager for `url` with the stored token, when there is one.
    pub(crate) async fn stored(
        &self,
        url: &str,
        label: &str,
    ) -> Result<Option<AuthorizationManager>, ToolError> {
        let mut manager = self.manager(url, label).await?;
        let found = manager
            .initialize_from_store()
            .await
            .map_err(|e| oauth_failed(label, "reading the stored credentials", e))?;
        if found {
            tracing::debug!(server = %label, "MCP OAuth: using stored credentials");
        }
        Ok(found.then_some(manager))
    }

    async fn manager(&self, url: &str, label: &str) -> Result<AuthorizationManager, ToolError> {
        let mut manager = AuthorizationManager::new(url)
            .await
            .map_err(|e| oauth_failed(label, "preparing the client", e))?;
        manager.set_credential_store(self.store.clone());
        Ok(manager)
    }

    /// An authorization manager for `url` holding a new token, which the user authorizes now.
    pub(crate) async fn authorize(
        &self,
        url: &str,
        label: &str,
    ) -> Result<AuthorizationManager, ToolError> {
        let failed = |what: &str, e: AuthError| oauth_failed(label, what, e);
        let manager = self.manager(url, label).await?;
        tracing::info!(server = %label, "MCP OAuth: the server requires authorization");
        let (redirect_uri, listener) = match &self.flow {
            Flow::Loopback { .. } => {
                let listener = TcpListener::bind("127.0.0.1:0").await.map_err(|e| {
                    ToolError::unavailable(format!(
                        "MCP server `{label}`: cannot listen on 127.0.0.1 for the OAuth redirect: {e}"
                    ))
                })?;
                let port = listener.local_addr().map(|a| a.port()).unwrap_or_default();
                (
                    format!("http://127.0.0.1:{port}{CALLBACK_PATH}"),
                    Some(listener),
                )
            }
            Flow::Custom { redirect_uri, .. } => (redirect_uri.clone(), None),
        };
        let mut request =
            AuthorizationRequest::new(redirect_uri.clone()).with_client_name(&self.client_name);
        if !self.scopes.is_empty() {
            request = request.with_scopes(self.scopes.iter().cloned());
        }
        if let Some(id) = &self.client_id {
            request = request.with_preregistered_client(id);
        }
        if let Some(secret) = &self.client_secret {
            request = request.with_client_secret(secret.as_ref());
        }
        let mut state = OAuthState::Unauthorized(manager);
        state
            .start_authorization(request)
            .await
            .map_err(|e| failed("discovering the authorization server", e))?;
        let authorization_url = state
            .get_authorization_url()
            .await
            .map_err(|e| failed("building the authorization URL", e))?;
        let callback = match (&self.flow, listener) {
            (Flow::Loopback { open, timeout }, Some(listener)) => {
                open(&authorization_url);
                tokio::time::timeout(*timeout, receive_callback(listener))
                    .await
                    .map_err(|_| {
                        ToolError::timed_out(format!(
                            "MCP server `{label}`: nobody finished the OAuth authorization within \
                             {} s (open the URL shown, sign in, and allow access)",
                            timeout.as_secs()
                        ))
                    })?
                    .map_err(|e| {
                        ToolError::unavailable(format!(
                            "MCP server `{label}`: the OAuth redirect could not be received: {e}"
                        ))
                    })?
            }
            (Flow::Custom { authorize, .. }, _) => authorize(authorization_url).await?,
            (Flow::Loopback { .. }, None) => unreachable!("the loopback flow binds a listener"),
        };
        if let Some(error) = query_value(&callback, "error") {
            let detail = query_value(&callback, "error_description")
                .map(|d| format!(" ({d})"))
                .unwrap_or_default();
            return Err(ToolError::denied(format!(
                "MCP server `{label}`: the authorization server refused access: {error}{detail}"
            )));
        }
        state
            .handle_callback_url(&callback)
            .await
            .map_err(|e| failed("exchanging the authorization code for a token", e))?;
        match state {
            OAuthState::Authorized(manager) => {
                tracing::info!(server = %label, "MCP OAuth: authorized");
                Ok(manager)
            }
            _ => Err(ToolError::denied(format!(
                "MCP server `{label}`: OAuth authorization did not complete"
            ))),
        }
    }
}

fn oauth_failed(label: &str, what: &str, e: AuthError) -> ToolError {
    ToolError::denied(format!(
        "MCP server `{label}`: OAuth authorization failed while {what}: {}",
        describe(&e)
    ))
    .with_source(e)
}

/// Text for an OAuth error without library type names.
fn describe(e: &AuthError) -> String {
    let text = e.to_string();
    let text = text.strip_prefix("OAuth ").unwrap_or(&text).to_owned();
    let mut chars = text.chars();
    match chars.next() {
        Some(first) => first.to_lowercase().chain(chars).collect(),
        None => text,
    }
}

/// The value of `name` in a URL's query, percent-decoded.
fn query_value(url: &str, name: &str) -> Option<String> {
    let parsed = reqwest::Url::parse(url).ok()?;
    parsed
        .query_pairs()
        .find(|(key, _)| key == name)
        .map(|(_, value)| value.into_owned())
}

/// Waits for the browser's request on the loopback listener, answers it with a short page, and
/// returns the full redirect URL. Requests for other paths (a favicon) get a 404 and the wait
/// goes on.
async fn receive_callback(listener: TcpListener) -> std::io::Result<String> {
    let port = listener.local_addr()?.port();
    loop {
        let (mut stream, _) = listener.accept().await?;
        // One small answer per connection; no write should wait on Nagle's algorithm.
        let _ = stream.set_nodelay(true);
        let mut buf = Vec::with_capacity(2048);
        let mut chunk = [0u8; 1024];
        // The request line is all that is needed; stop at the end of the headers or at 16 KiB.
        while !buf.windows(4).any(|w| w == b"\r\n\r\n") && buf.len() < 16 * 1024 {
            let n = stream.read(&mut chunk).await?;
            if n == 0 {
                break;
            }
            buf.extend_from_slice(&chunk[..n]);
        }
        let head = String::from_utf8_lossy(&buf);
        let target = head
            .lines()
            .next()
            .and_then(|line| line.strip_prefix("GET "))
            .and_then(|rest| rest.split(' ').next())
            .unwrap_or("");
        if !target.starts_with(CALLBACK_PATH) {
            let _ = stream
                .write_all(
                    b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\nconnection: close\r\n\r\n",
                )
                .await;
            continue;
        }
        let page = "<!doctype html><meta charset=utf-8><title>tinyagent</title>\
                    <p>Authorization received. You can close this tab.</p>";
        let response = format!(
            "HTTP/1.1 200 OK\r\ncontent-type: text/html; charset=utf-8\r\ncontent-length: {}\r\n\
             connection: close\r\n\r\n{page}",
            page.len()
        );
        let _ = stream.write_all(response.as_bytes()).await;
        let _ = stream.shutdown().await;
        return Ok(format!("http://127.0.0.1:{port}{target}"));
    }
}

/// Where tokens are kept between connections.
#[derive(Clone)]
enum Store {
    Memory(InMemoryCredentialStore),
    File(Arc<PathBuf>),
}

impl fmt::Debug for Store {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Memory(_) => f.write_str("in memory"),
            Self::File(path) => write!(f, "file {}", path.display()),
        }
    }
}

fn store_error(path: &std::path::Path, e: impl fmt::Display) -> AuthError {
    AuthError::InternalError(format!("credentials file {}: {e}", path.display()))
}

#[async_trait::async_trait]
impl CredentialStore for Store {
    async fn load(&self) -> Result<Option<StoredCredentials>, AuthError> {
        match self {
            Self::Memory(store) => store.load().await,
            Self::File(path) => match tokio::fs::read(path.as_path()).await {
                Ok(bytes) => serde_json::from_slice(&bytes)
                    .map(Some)
                    .map_err(|e| store_error(path, e)),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
                Err(e) => Err(store_error(path, e)),
            },
        }
    }

    async fn save(&self, credentials: StoredCredentials) -> Result<(), AuthError> {
        match self {
            Self::Memory(store) => store.save(credentials).await,
            Self::File(path) => {
                let json =
                    serde_json::to_vec_pretty(&credentials).map_err(|e| store_error(path, e))?;
                let path = Arc::clone(path);
                tokio::task::spawn_blocking(move || write_private(&path, &json))
                    .await
                    .map_err(|e| AuthError::InternalError(e.to_string()))?
            }
        }
    }

    async fn clear(&self) -> Result<(), AuthError> {
        match self {
            Self::Memory(store) => store.clear().await,
            Self::File(path) => match tokio::fs::remove_file(path.as_path()).await {
                Ok(()) => Ok(()),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
                Err(e) => Err(store_error(path, e)),
            },
        }
    }
}

/// Writes `bytes` to `path` (creating its folder), readable by the owner only, replacing the
/// file atomically.
fn write_private(path: &std::path::Path, bytes: &[u8]) -> Result<(), AuthError> {
    use std::io::Write;
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|e| store_error(path, e))?;
    }
    let tmp = path.with_extension("tmp");
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let mut file = options.open(&tmp).map_err(|e| store_error(path, e))?;
    file.write_all(bytes).map_err(|e| store_error(path, e))?;
    file.sync_all().map_err(|e| store_error(path, e))?;
    std::fs::rename(&tmp, path).map_err(|e| store_error(path, e))
}
