//! [`A2aAgentTool`]: a remote A2A agent as a tool of a tinyagent agent.

use std::sync::Arc;
use std::time::Duration;

use a2a::{AgentCard, Message, Part, Role, SendMessageRequest, SendMessageResponse};
use a2a_client::auth::AuthInterceptor;
use a2a_client::jsonrpc::JsonRpcTransportFactory;
use a2a_client::rest::RestTransportFactory;
use a2a_client::{A2AClient, A2AClientFactory, Transport};
use futures::StreamExt;
use serde_json::{Value, json};
use tinyagent::tools::{ToolInput, ToolOutput};
use tinyagent::{BoxFuture, Tool, ToolContext, ToolError};

use crate::remote_call::{Outcome, RemoteCall, state_words};
use crate::text::parts_text;

/// How long a call to a remote agent may take by default.
pub const DEFAULT_A2A_TIMEOUT: Duration = Duration::from_secs(300);

/// How often a task that a remote agent answered before its end is read again.
const POLL_INTERVAL: Duration = Duration::from_millis(500);

/// The longest answer read from a remote agent.
const MAX_ANSWER_BYTES: usize = 4 << 20;

/// How long connecting to a remote agent may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// Why a remote A2A agent could not be reached or used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum A2aError {
    /// The agent card could not be fetched or read.
    #[error("could not read the agent card at {url}: {message}")]
    Card {
        /// Where it was looked for.
        url: String,
        /// What went wrong.
        message: String,
    },
    /// No interface of the card can be spoken (this crate speaks JSON-RPC and HTTP+JSON,
    /// protocol 1.x).
    #[error("cannot talk to the agent {agent:?}: {message}")]
    Connect {
        /// The agent's name, from its card.
        agent: String,
        /// What went wrong.
        message: String,
    },
    /// The HTTP client could not be built.
    #[error("could not build the HTTP client: {0}")]
    Client(String),
}

/// A remote [A2A](https://a2a-protocol.org) agent (protocol 1.0) as a tool: the model sends
/// it a `message` and reads its answer.
///
/// [`connect`](Self::connect) reads the agent card at `{url}/.well-known/agent-card.json`
/// (with the [builder](Self::builder)'s key, if any);
/// the tool is named and described after it (a name the model can call: letters, digits, `_`
/// and `-`). A call sends one message and, when the agent streams, reports its `working`
/// updates as the call's progress; the calls of one session go on in one remote context
/// (kept in the session's state under `a2a/{tool}/context`), so the remote agent remembers
/// them, unless the [builder](Self::builder) says
/// [`keep_context(false)`](A2aAgentToolBuilder::keep_context); the answer is the text of the task's
/// artifacts (or of its final message). A task that fails, is rejected or cancelled, or asks
/// for input is an error result with the agent's words. A call dropped before its end (a
/// timeout, a cancelled run) cancels the remote task.
///
/// ```no_run
/// use tinyagent::LlmAgent;
/// use tinyagent::testing::ScriptedModel;
/// use tinyagent_a2a::A2aAgentTool;
///
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// let researcher = A2aAgentTool::builder("http://127.0.0.1:8080/a2a/researcher")
///     .bearer_token("sk-remote-key")
///     .connect()
///     .await?;
/// let agent = LlmAgent::builder("lead")
///     .model(ScriptedModel::new([]))
///     .tool(researcher)
///     .build()?;
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct A2aAgentTool {
    name: String,
    description: String,
    schema: Value,
    card: Arc<AgentCard>,
    http: reqwest::Client,
    bearer: Option<String>,
    /// The origin the card was read from, where the key may go.
    origin: Option<String>,
    timeout: Duration,
    keep_context: bool,
}

/// `scheme://host:port` of a URL.
fn origin(url: &str) -> Option<String> {
    reqwest::Url::parse(url)
        .ok()
        .map(|u| u.origin().ascii_serialization())
}

impl std::fmt::Debug for A2aAgentTool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("A2aAgentTool")
            .field("name", &self.name)
            .field("agent", &self.card.name)
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

/// Builds an [`A2aAgentTool`]: [`A2aAgentTool::builder`], then [`connect`](Self::connect).
#[derive(Debug, Clone)]
pub struct A2aAgentToolBuilder {
    url: String,
    name: Option<String>,
    description: Option<String>,
    bearer: Option<String>,
    timeout: Duration,
    keep_context: bool,
}

impl A2aAgentToolBuilder {
    /// Calls the tool by another name than the agent's.
    #[must_use]
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }

    /// Describes the tool to the model in other words than the card's.
    #[must_use]
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }

    /// Sends `Authorization: Bearer <token>` with every request, the card's included.
    #[must_use]
    pub fn bearer_token(mut self, token: impl Into<String>) -> Self {
        self.bearer = Some(token.into());
        self
    }

    /// How long a call may take ([`DEFAULT_A2A_TIMEOUT`]); a call past it is cancelled.
    #[must_use]
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Whether the calls of one session go on in one remote context (the default), so the
    /// remote agent remembers the earlier ones; `false` starts a new context each call.
    #[must_use]
    pub fn keep_context(mut self, keep: bool) -> Self {
        self.keep_context = keep;
        self
    }

    /// Reads the agent card at `{url}/.well-known/agent-card.json` and makes the tool.
    pub async fn connect(self) -> Result<A2aAgentTool, A2aError> {
        let http = reqwest::Client::builder()
            .connect_timeout(CONNECT_TIMEOUT)
            .build()
            .map_err(|e| A2aError::Client(e.to_string()))?;
        let url = format!(
            "{}{}",
            self.url.trim_end_matches('/'),
            crate::AGENT_CARD_PATH
        );
        let card = tokio::time::timeout(
            CONNECT_TIMEOUT,
            fetch_card(&http, &url, self.bearer.as_deref()),
        )
        .await
        .map_err(|_| A2aError::Card {
            url: url.clone(),
            message: format!("no answer in {} s", CONNECT_TIMEOUT.as_secs()),
        })?
        .map_err(|message| A2aError::Card { url, message })?;
        let mut tool = A2aAgentTool::from_card(card, http);
        if let Some(name) = self.name {
            tool.name = name;
        }
        if let Some(description) = self.description {
            tool.description = description;
        }
        tool.bearer = self.bearer;
        tool.origin = origin(&self.url);
        tool.timeout = self.timeout;
        tool.keep_context = self.keep_context;
        Ok(tool)
    }
}

/// The largest agent card read.
const MAX_CARD_BYTES: usize = 1 << 20;

async fn fetch_card(
    http: &reqwest::Client,
    url: &str,
    bearer: Option<&str>,
) -> Result<AgentCard, String> {
    let mut request = http.get(url).header("accept", "application/json");
    if let Some(token) = bearer {
        request = request.bearer_auth(token);
    }
    let mut response = request
        .send()
        .await
        .map_err(|e| e.without_url().to_string())?;
    let status = response.status();
    let mut body = Vec::new();
    while let Some(chunk) = response
        .chunk()
        .await
        .map_err(|e| e.without_url().to_string())?
    {
        if body.len() + chunk.len() > MAX_CARD_BYTES {
            return Err(format!("the card is over {MAX_CARD_BYTES} bytes"));
        }
        body.extend_from_slice(&chunk);
    }
    if !status.is_success() {
        let text = String::from_utf8_lossy(&body);
        let text: String = text.chars().take(200).collect();
        return Err(format!("HTTP {status}: {text}"));
    }
    serde_json::from_slice(&body).map_err(|e| format!("not an agent card: {e}"))
}

impl A2aAgentTool {
    /// Starts building the tool for the agent whose base URL is `url`.
    pub fn builder(url: impl Into<String>) -> A2aAgentToolBuilder {
        A2aAgentToolBuilder {
            url: url.into(),
            name: None,
            description: None,
            bearer: None,
            timeout: DEFAULT_A2A_TIMEOUT,
            keep_context: true,
        }
    }

    /// Reads the agent card under `url` (the agent's base URL) and makes the tool; the
    /// [`builder`](Self::builder) sets a key, a timeout, a name.
    pub async fn connect(url: &str) -> Result<Self, A2aError> {
        Self::builder(url).connect().await
    }

    /// The tool for the agent of `card`, reached with `http`.
    pub fn from_card(card: AgentCard, http: reqwest::Client) -> Self {
        let name = tool_name(&card.name);
        let mut description = card.description.clone();
        let skills: Vec<String> = card
            .skills
            .iter()
            .filter(|s| s.name != card.name)
            .map(|s| format!("{}: {}", s.name, s.description))
            .collect();
        if !skills.is_empty() {
            description.push_str(" Skills: ");
            description.push_str(&skills.join("; "));
        }
        Self {
            name,
            description,
            schema: json!({
                "type": "object",
                "properties": {
                    "message": {
                        "type": "string",
                        "description": "What to ask the agent, in full: it does not see this conversation"
                    }
                },
                "required": ["message"],
                "additionalProperties": false
            }),
            card: Arc::new(card),
            http,
            bearer: None,
            origin: None,
            timeout: DEFAULT_A2A_TIMEOUT,
            keep_context: true,
        }
    }

    /// The remote agent's card.
    pub fn card(&self) -> &AgentCard {
        &self.card
    }

    async fn client(&self) -> Result<Arc<A2AClient<Box<dyn Transport>>>, ToolError> {
        if let (Some(_), Some(base)) = (&self.bearer, &self.origin) {
            // The key goes where the user sent it, not wherever a card points.
            let elsewhere = self
                .card
                .supported_interfaces
                .iter()
                .filter(|i| i.protocol_version.starts_with("1."))
                .find(|i| origin(&i.url).as_deref() != Some(base.as_str()));
            if let Some(interface) = elsewhere {
                return Err(ToolError::denied(format!(
                    "the card of {} sends calls to {}, not to {base} where its key was given; \
                     the key is not sent elsewhere (connect to that address instead)",
                    self.card.name,
                    tinyagent::redact::url(&interface.url)
                )));
            }
        }
        let mut factory = A2AClientFactory::builder()
            .no_defaults()
            .register(Arc::new(JsonRpcTransportFactory::new(Some(
                self.http.clone(),
            ))))
            .register(Arc::new(RestTransportFactory::new(Some(self.http.clone()))));
        if let Some(token) = &self.bearer {
            factory = factory.with_interceptor(Arc::new(AuthInterceptor::bearer(token.clone())));
        }
        let client = factory
            .build()
            .create_from_card(&self.card)
            .await
            .map_err(|e| {
                ToolError::unavailable(format!("cannot reach the agent {}: {e}", self.card.name))
            })?;
        Ok(Arc::new(client))
    }

    async fn ask(&self, ctx: &ToolContext, text: String) -> Result<ToolOutput, ToolError> {
        let client = self.client().await?;
        // The remote context of this session's earlier calls, kept in the session's state (so
        // a stored session goes on with it in any process).
        let key = format!("a2a/{}/context", self.name);
        let session = ctx.session().filter(|_| self.keep_context);
        let mut message = Message::new(Role::User, vec![Part::text(text)]);
        message.context_id = session.and_then(|s| s.get_str(&key));
        let request = SendMessageRequest {
            message,
            configuration: None,
            metadata: None,
            tenant: None,
        };
        let mut call = RemoteCall::new(client.clone());
        let result = self.exchange(ctx, &client, &request, &mut call).await;
        if let (Some(session), Some(context)) = (session, &call.context_id) {
            session.set(key, context.clone());
        }
        let outcome = result?;
        self.finish(call, outcome)
    }

    /// Sends the message and reads the task to its end (or as far as it goes).
    async fn exchange(
        &self,
        ctx: &ToolContext,
        client: &A2AClient<Box<dyn Transport>>,
        request: &SendMessageRequest,
        call: &mut RemoteCall,
    ) -> Result<Outcome, ToolError> {
        if self.card.capabilities.streaming != Some(true) {
            let answer = client
                .send_message(request)
                .await
                .map_err(|e| self.failed(&e.to_string()))?;
            let mut outcome = match answer {
                SendMessageResponse::Message(m) => {
                    call.context_id = m.context_id.clone();
                    Outcome::Answer(parts_text(&m.parts))
                }
                SendMessageResponse::Task(task) => call.task(task),
            };
            // A task still running is read again until it ends (the call's timeout bounds it).
            while let (Outcome::Going(_), Some(id)) = (&outcome, call.task_id.clone()) {
                tokio::time::sleep(POLL_INTERVAL).await;
                let request = a2a::GetTaskRequest {
                    id,
                    history_length: Some(0),
                    tenant: None,
                };
                let task = client
                    .get_task(&request)
                    .await
                    .map_err(|e| self.failed(&e.to_string()))?;
                call.artifacts.clear();
                outcome = call.task(task);
            }
            return Ok(outcome);
        }
        let mut events = client
            .send_streaming_message(request)
            .await
            .map_err(|e| self.failed(&e.to_string()))?;
        let mut step = 0.0;
        while let Some(event) = events.next().await {
            let event = event.map_err(|e| self.failed(&e.to_string()))?;
            if call.answer_bytes() > MAX_ANSWER_BYTES {
                return Ok(Outcome::Going(None));
            }
            match call.event(event) {
                Outcome::Going(Some(note)) => {
                    step += 1.0;
                    ctx.progress(step, None, Some(&note)).await;
                }
                Outcome::Going(None) => {}
                outcome => return Ok(outcome),
            }
        }
        Ok(call.ended())
    }

    fn finish(&self, mut call: RemoteCall, outcome: Outcome) -> Result<ToolOutput, ToolError> {
        // A task that has not ended is cancelled when the call is dropped.
        if !matches!(outcome, Outcome::Going(_)) {
            call.disarm();
        }
        if call.answer_bytes() > MAX_ANSWER_BYTES {
            return Err(self.failed(&format!(
                "its answer is over {} MiB",
                MAX_ANSWER_BYTES >> 20
            )));
        }
        match outcome {
            Outcome::Answer(text) => Ok(ToolOutput::text(text)),
            Outcome::Stopped(state, text) => Err(ToolError::failed(format!(
                "the agent {} {}: {}",
                self.card.name,
                state_words(state),
                if text.is_empty() {
                    "(no reason given)"
                } else {
                    &text
                }
            ))),
            Outcome::Going(_) => Err(self.failed("the stream ended before the task did")),
        }
    }

    fn failed(&self, message: &str) -> ToolError {
        // What the client crate says may quote URLs; their credentials stay out.
        let message = tinyagent::redact::url(message);
        ToolError::unavailable(format!("the agent {} failed: {message}", self.card.name))
    }
}

impl Tool for A2aAgentTool {
    fn name(&self) -> &str {
        &self.name
    }

    fn description(&self) -> &str {
        &self.description
    }

    fn input_schema(&self) -> &Value {
        &self.schema
    }

    fn title(&self) -> Option<&str> {
        Some(&self.card.name)
    }

    fn call<'a>(
        &'a self,
        ctx: &'a ToolContext,
        input: ToolInput,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let value = input.into_value()?;
            let Some(text) = value.get("message").and_then(Value::as_str) else {
                return Err(ToolError::invalid_input("`message` (a string) is required"));
            };
            match tokio::time::timeout(self.timeout, self.ask(ctx, text.to_owned())).await {
                Ok(answer) => answer,
                Err(_) => Err(ToolError::timed_out(format!(
                    "the agent {} did not answer in {} s",
                    self.card.name,
                    self.timeout.as_secs()
                ))),
            }
        })
    }
}

/// A tool name from an agent's name: letters, digits, `_` and `-`, at most 64.
fn tool_name(agent: &str) -> String {
    let name: String = agent
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '_'
            }
        })
        .take(64)
        .collect();
    let name = name.trim_matches('_').to_owned();
    if name.is_empty() {
        "remote_agent".to_owned()
    } else {
        name
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn agent_names_become_tool_names() {
        assert_eq!(tool_name("Weather Agent"), "Weather_Agent");
        assert_eq!(tool_name("天气"), "remote_agent");
        assert_eq!(tool_name("a-b_c"), "a-b_c");
        assert_eq!(tool_name(&"x".repeat(80)).len(), 64);
    }
}
