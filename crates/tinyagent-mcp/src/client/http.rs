//! MCP over streamable HTTP: the client end. Connecting with the configured headers, and with
//! OAuth when the server asks for it; a refusal (401, 403) said as such.

use std::sync::Arc;

use rmcp::service::{ClientInitializeError, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::auth::AuthClient;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{RoleClient, ServiceExt as _};
use tinyagent::ToolError;
use tokio::sync::oneshot;

use super::bridge::{Bridge, Watched};
use super::endpoint::Secret;
use super::errors::{AuthProblem, connect_error, init_auth_problem, init_error_text};
use super::handler::ToolsetClient;
use super::oauth::McpOAuth;

/// A connection made, or the handshake's failure.
type Served = Result<RunningService<RoleClient, ToolsetClient>, ClientInitializeError>;

/// How to reach a server over streamable HTTP: its URL, the headers every request carries,
/// and OAuth; the [`Bridge`] sees its messages first.
pub(super) struct HttpTarget<'a> {
    /// The server's name in messages.
    pub label: &'a str,
    pub url: &'a str,
    pub headers: &'a [(String, Secret)],
    pub oauth: Option<&'a McpOAuth>,
    pub bridge: &'a Arc<Bridge>,
}

impl HttpTarget<'_> {
    /// Makes the MCP handshake as `client`; `ended` is told when the server's messages end.
    pub(super) async fn connect(
        &self,
        client: ToolsetClient,
        ended: oneshot::Sender<()>,
    ) -> Result<RunningService<RoleClient, ToolsetClient>, ToolError> {
        let config = self.config()?;
        let served = match self.oauth {
            None => {
                let transport = StreamableHttpClientTransport::from_config(config);
                client.serve(self.watched(transport).ending(ended)).await
            }
            Some(oauth) => self.serve_with_oauth(oauth, config, client, ended).await?,
        };
        served.map_err(|e| self.refused(e))
    }

    /// The transport's settings: the URL and the headers, marked sensitive.
    fn config(&self) -> Result<StreamableHttpClientTransportConfig, ToolError> {
        let label = self.label;
        let mut config = StreamableHttpClientTransportConfig::with_uri(self.url);
        for (name, Secret(value)) in self.headers {
            let header_name =
                reqwest::header::HeaderName::from_bytes(name.as_bytes()).map_err(|_| {
                    ToolError::invalid_input(format!(
                        "MCP server `{label}`: `{name}` is not a valid HTTP header name"
                    ))
                })?;
            let mut header_value = reqwest::header::HeaderValue::from_str(value).map_err(|_| {
                ToolError::invalid_input(format!(
                    "MCP server `{label}`: the value of header `{name}` is not a \
                     valid HTTP header value"
                ))
            })?;
            header_value.set_sensitive(true);
            config.custom_headers.insert(header_name, header_value);
        }
        Ok(config)
    }

    /// The handshake with OAuth: with a stored token, use it; without one, ask the user only
    /// when the server turns out to require authorization (a first handshake without a token
    /// is answered 401).
    async fn serve_with_oauth(
        &self,
        oauth: &McpOAuth,
        config: StreamableHttpClientTransportConfig,
        client: ToolsetClient,
        ended: oneshot::Sender<()>,
    ) -> Result<Served, ToolError> {
        let manager = match oauth.stored(self.url, self.label).await? {
            Some(manager) => manager,
            None => {
                let plain =
                    self.watched(StreamableHttpClientTransport::from_config(config.clone()));
                match client.clone().serve(plain).await {
                    Err(e) if matches!(init_auth_problem(&e), Some(AuthProblem::Unauthorized)) => {
                        oauth.authorize(self.url, self.label).await?
                    }
                    // No authorization needed, or a failure of another kind.
                    other => return Ok(other),
                }
            }
        };
        let http = AuthClient::new(reqwest::Client::new(), manager);
        let transport = StreamableHttpClientTransport::with_client(http, config);
        Ok(client.serve(self.watched(transport).ending(ended)).await)
    }

    /// `transport`, its messages seen by the bridge as they arrive.
    fn watched<T>(&self, transport: T) -> Watched<T> {
        Watched::new(transport, Arc::clone(self.bridge))
    }

    /// A failed handshake as the caller reads it: a refusal (401, 403) is `denied`, saying
    /// what credentials were sent.
    fn refused(&self, e: ClientInitializeError) -> ToolError {
        let problem = init_auth_problem(&e);
        let text = match problem {
            Some(AuthProblem::Unauthorized) => format!(
                "the server answered 401 Unauthorized: it needs credentials{}",
                if self.oauth.is_some() {
                    ", and it refused the OAuth token (its grant may have been revoked)"
                } else if self.headers.is_empty() {
                    ", and none were sent (set a bearer token or header, or use OAuth)"
                } else {
                    ", and the ones sent were refused"
                }
            ),
            Some(AuthProblem::Forbidden) => "the server answered 403 Forbidden: the credentials \
                 sent do not give access (or the request's origin is refused)"
                .to_owned(),
            None => init_error_text(&e),
        };
        let error = connect_error(self.label, text);
        match problem {
            Some(_) => ToolError::denied(error.message().to_owned()).with_source(e),
            None => error.with_source(e),
        }
    }
}
