//! What a server asks of the client while a tool runs: its progress and log notifications go
//! to the calling tool's [`ToolHost`](tinyagent::host::ToolHost), its sampling requests to the
//! toolset's model (or the calling tool's host), its elicitation requests to the toolset's
//! handler (or the calling tool's host; else they are declined).

#![allow(deprecated)] // rmcp marks logging and sampling deprecated (SEP-2577); servers use them.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};

use rmcp::ErrorData;
use rmcp::model::{
    CreateMessageRequestParams, CreateMessageResult, ElicitRequestParams, ElicitResult,
    ElicitationAction, LoggingMessageNotificationParam, ProgressNotificationParam,
};
use serde_json::json;
use tinyagent::{
    ContentPart, Message, Model, ModelRequest, Part, Role,
    host::{Elicitation, ElicitationRequest, ToolHost},
};

use rmcp::RoleClient;
use rmcp::model::{JsonRpcMessage, ProgressToken, ServerNotification};
use rmcp::service::RxJsonRpcMessage;

use crate::protocol::content::{content_block, content_part};
use crate::protocol::logging::log_level;
use tinyagent::BoxFuture;

/// Answers a server's elicitation requests (questions for the user); see
/// [`McpToolset::elicitation`](crate::McpToolset::elicitation). Object safe; a closure is made
/// into one with [`elicitation_fn`].
pub trait ElicitationHandler: Send + Sync + 'static {
    /// Answers one request.
    fn elicit(&self, request: ElicitationRequest) -> BoxFuture<'_, Elicitation>;
}

/// Makes a closure `Fn(ElicitationRequest) -> impl Future<Output = Elicitation>` into an
/// [`ElicitationHandler`].
pub fn elicitation_fn<F, Fut>(f: F) -> ElicitationFn<F>
where
    F: Fn(ElicitationRequest) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = Elicitation> + Send + 'static,
{
    ElicitationFn(f)
}

/// A closure made into an [`ElicitationHandler`]; made by [`elicitation_fn`].
#[derive(Clone, Copy)]
pub struct ElicitationFn<F>(F);

impl<F> std::fmt::Debug for ElicitationFn<F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ElicitationFn(..)")
    }
}

impl<F, Fut> ElicitationHandler for ElicitationFn<F>
where
    F: Fn(ElicitationRequest) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = Elicitation> + Send + 'static,
{
    fn elicit(&self, request: ElicitationRequest) -> BoxFuture<'_, Elicitation> {
        Box::pin((self.0)(request))
    }
}

/// The calls in flight, by progress token, and the toolset's handlers.
#[derive(Default)]
pub(crate) struct Bridge {
    calls: Mutex<HashMap<String, Option<Arc<dyn ToolHost>>>>,
    /// The host of the call that ended last: a notification handled after its call's
    /// answer still reaches it when no other call runs.
    last: Mutex<Option<Arc<dyn ToolHost>>>,
    /// Per call in flight: how many progress notifications were read off the connection (in
    /// wire order, before rmcp hands each to a task of its own) and how many were passed on.
    progress: Mutex<HashMap<String, Counts>>,
    /// Wakes calls waiting for their progress to be passed on.
    relayed: tokio::sync::Notify,
    /// The progress tokens rmcp gave calls' requests, to the calls' own tokens.
    aliases: Mutex<HashMap<String, String>>,
    next: AtomicU64,
    pub(crate) sampling: Option<Arc<dyn Model>>,
    pub(crate) elicitation: Option<Arc<dyn ElicitationHandler>>,
}

/// A call in flight; dropping it forgets the call.
pub(crate) struct CallGuard<'a> {
    bridge: &'a Bridge,
    pub(crate) token: String,
}

/// The most progress counts kept at once (calls in flight and tokens not adopted yet).
const MAX_COUNTED: usize = 4096;

/// Progress notifications of one call: read off the connection, and passed on.
#[derive(Debug, Default, Clone, Copy)]
struct Counts {
    read: u64,
    passed: u64,
}

impl CallGuard<'_> {
    /// Takes `token` (the one rmcp gave the call's request) as the call's too: the server's
    /// progress under it reaches this call, and counts for it.
    pub(crate) fn adopt(&self, token: &ProgressToken) {
        let Some(token) = token_text(token) else {
            return;
        };
        let mut counts = self.bridge.counts();
        // Notifications read before the token was adopted were counted under it already.
        let early = counts.remove(&token).unwrap_or_default();
        let own = counts.entry(self.token.clone()).or_default();
        own.read += early.read;
        own.passed += early.passed;
        drop(counts);
        self.bridge.aliases().insert(token, self.token.clone());
    }

    /// Waits until every progress notification of this call read off the connection so far
    /// has been passed on to the call's host. Called once the call's answer was read: the
    /// server sent its progress before its answer, and the connection is read in order, so
    /// the count is complete then, and a gateway never answers before it relayed it all.
    pub(crate) async fn progress_passed_on(&self) {
        loop {
            let wake = self.bridge.relayed.notified();
            tokio::pin!(wake);
            wake.as_mut().enable();
            let counts = self
                .bridge
                .counts()
                .get(&self.token)
                .copied()
                .unwrap_or_default();
            if counts.passed >= counts.read {
                return;
            }
            wake.await;
        }
    }
}

impl Drop for CallGuard<'_> {
    fn drop(&mut self) {
        self.bridge.counts().remove(&self.token);
        self.bridge.aliases().retain(|_, call| *call != self.token);
        let host = self.bridge.lock().remove(&self.token).flatten();
        *self
            .bridge
            .last
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = host;
    }
}

impl Bridge {
    /// A bridge with these handlers and no call in flight.
    pub(crate) fn with_handlers(
        sampling: Option<Arc<dyn Model>>,
        elicitation: Option<Arc<dyn ElicitationHandler>>,
    ) -> Self {
        Self {
            sampling,
            elicitation,
            ..Self::default()
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Option<Arc<dyn ToolHost>>>> {
        self.calls.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn counts(&self) -> std::sync::MutexGuard<'_, HashMap<String, Counts>> {
        self.progress.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn aliases(&self) -> std::sync::MutexGuard<'_, HashMap<String, String>> {
        self.aliases.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The counts of the call a token belongs to (its own, or one rmcp gave its request);
    /// for a token no call has adopted yet (a notification that overtook the adoption),
    /// counts kept under the token itself, while calls are in flight.
    fn count(&self, token: &str, f: impl FnOnce(&mut Counts)) {
        let key = self.aliases().get(token).cloned();
        let mut counts = self.counts();
        match key {
            Some(call) => f(counts.entry(call).or_default()),
            None if counts.contains_key(token) => f(counts.get_mut(token).expect("present")),
            // Not adopted yet: kept under the token, bounded, until a call adopts it.
            None if !self.lock().is_empty() && counts.len() < MAX_COUNTED => {
                f(counts.entry(token.to_owned()).or_default());
            }
            None => {}
        }
    }

    /// Sees each message as it is read off the connection, in order: counts the progress
    /// notifications of calls in flight.
    pub(crate) fn on_wire(&self, message: &RxJsonRpcMessage<RoleClient>) {
        if let JsonRpcMessage::Notification(n) = message
            && let ServerNotification::ProgressNotification(p) = &n.notification
            && let Some(token) = token_text(&p.params.progress_token)
        {
            self.count(&token, |c| c.read += 1);
        }
    }

    /// Registers a call whose tool runs under `host`; its token goes out as the progress
    /// token.
    pub(crate) fn begin(&self, host: Option<Arc<dyn ToolHost>>) -> CallGuard<'_> {
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        let token = tinyagent::store::new_id(&format!("call{n}"));
        self.lock().insert(token.clone(), host);
        self.counts().insert(token.clone(), Counts::default());
        CallGuard {
            bridge: self,
            token,
        }
    }

    /// The host of the call with this token (its own, or the one rmcp gave its request).
    fn by_token(&self, token: &str) -> Option<Arc<dyn ToolHost>> {
        let own = self.aliases().get(token).cloned();
        self.lock()
            .get(own.as_deref().unwrap_or(token))
            .cloned()
            .flatten()
    }

    /// The host of the one call in flight, or of the last call when none is (a notification
    /// or request from the server names no call; with several in flight, none is chosen).
    fn only_call(&self) -> Option<Arc<dyn ToolHost>> {
        let calls = self.lock();
        match calls.len() {
            1 => calls.values().next().cloned().flatten(),
            0 => self
                .last
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .clone(),
            _ => None,
        }
    }

    pub(crate) async fn on_progress(&self, params: ProgressNotificationParam) {
        let Some(token) = token_text(&params.progress_token) else {
            return;
        };
        // rmcp may send its own token (the request's) instead of the call's: then the one
        // call in flight is the one.
        if let Some(host) = self.by_token(&token).or_else(|| self.only_call()) {
            host.progress(params.progress, params.total, params.message)
                .await;
        }
        self.count(&token, |c| c.passed += 1);
        self.relayed.notify_waiters();
    }

    pub(crate) async fn on_log(&self, label: &str, params: LoggingMessageNotificationParam) {
        let level = log_level(params.level);
        match self.only_call() {
            Some(host) => host.log(level, params.logger, params.data).await,
            None => tracing::info!(server = %label, ?level, logger = ?params.logger,
                "MCP server log: {}", params.data),
        }
    }

    pub(crate) async fn sample(
        &self,
        params: CreateMessageRequestParams,
    ) -> Result<CreateMessageResult, ErrorData> {
        let request = sampling_request(&params)?;
        let reply = match (&self.sampling, self.only_call()) {
            (Some(model), _) => {
                let mut messages: Vec<Message> = request
                    .messages
                    .iter()
                    .map(|m| Message::new(m.role, vec![Part::text(m.content.describe())]))
                    .collect();
                if let Some(system) = &request.system_prompt {
                    messages.insert(0, Message::system(system.clone()));
                }
                let mut req = ModelRequest::new(messages);
                req.max_tokens = Some(request.max_tokens);
                #[allow(clippy::cast_possible_truncation)] // a temperature, 0 to 2
                {
                    req.sampling.temperature = request.temperature.map(|t| t as f32);
                }
                let response = model.generate(&req).await.map_err(|e| {
                    ErrorData::internal_error(format!("the client's model failed: {e}"), None)
                })?;
                tinyagent::host::SamplingReply::text(response.message.text(), model.name())
                    .stop_reason("endTurn")
            }
            (None, Some(host)) => host
                .sample(request)
                .await
                .map_err(|e| ErrorData::internal_error(e.message().to_owned(), None))?,
            (None, None) => {
                return Err(ErrorData::invalid_request(
                    "this client has no model for sampling requests (McpToolset::sampling_model) \
                     and the tool call runs under no client that answers them",
                    None,
                ));
            }
        };
        let content =
            serde_json::to_value(content_block(&reply.content)).unwrap_or(serde_json::Value::Null);
        let mut result =
            json!({"role": reply.role.as_str(), "content": content, "model": reply.model});
        if let Some(reason) = reply.stop_reason {
            result["stopReason"] = json!(reason);
        }
        serde_json::from_value(result)
            .map_err(|e| ErrorData::internal_error(format!("invalid sampling reply: {e}"), None))
    }

    pub(crate) async fn elicit(&self, params: ElicitRequestParams) -> ElicitResult {
        let answer = match serde_json::to_value(&params) {
            Ok(v) if v["mode"] != "url" => {
                let request = ElicitationRequest::new(
                    v["message"].as_str().unwrap_or_default(),
                    v["requestedSchema"].clone(),
                );
                match (&self.elicitation, self.only_call()) {
                    (Some(handler), _) => handler.elicit(request).await,
                    (None, Some(host)) => {
                        host.elicit(request).await.unwrap_or(Elicitation::Decline)
                    }
                    (None, None) => Elicitation::Decline,
                }
            }
            // URL elicitation (opening a page) is not for a program to answer.
            _ => Elicitation::Decline,
        };
        match answer {
            Elicitation::Accept(content) => {
                let mut result = ElicitResult::new(ElicitationAction::Accept);
                result.content = Some(content);
                result
            }
            Elicitation::Cancel => ElicitResult::new(ElicitationAction::Cancel),
            _ => ElicitResult::new(ElicitationAction::Decline),
        }
    }
}

/// A server's sampling request as ours.
fn sampling_request(
    params: &CreateMessageRequestParams,
) -> Result<tinyagent::host::SamplingRequest, ErrorData> {
    let v = serde_json::to_value(params)
        .map_err(|e| ErrorData::invalid_params(format!("invalid sampling request: {e}"), None))?;
    let mut messages = Vec::new();
    for m in v["messages"].as_array().into_iter().flatten() {
        let role = if m["role"] == "assistant" {
            Role::Assistant
        } else {
            Role::User
        };
        let blocks = match &m["content"] {
            serde_json::Value::Array(items) => items.clone(),
            other => vec![other.clone()],
        };
        for block in blocks {
            let part = serde_json::from_value::<rmcp::model::ContentBlock>(block)
                .map(|b| content_part(&b))
                .unwrap_or_else(|_| ContentPart::text("[content this client does not know]"));
            messages.push(tinyagent::host::SamplingMessage::new(role, part));
        }
    }
    let max_tokens = u32::try_from(v["maxTokens"].as_u64().unwrap_or(1024)).unwrap_or(u32::MAX);
    let mut request = tinyagent::host::SamplingRequest::new(messages, max_tokens);
    if let Some(system) = v["systemPrompt"].as_str() {
        request = request.system_prompt(system);
    }
    if let Some(t) = v["temperature"].as_f64() {
        request = request.temperature(t);
    }
    Ok(request)
}

/// A progress token as text (the form the bridge's tokens take).
fn token_text(token: &ProgressToken) -> Option<String> {
    match serde_json::to_value(token) {
        Ok(serde_json::Value::String(s)) => Some(s),
        Ok(other) => Some(other.to_string()),
        Err(_) => None,
    }
}

/// A client transport whose received messages the [`Bridge`] sees first, in wire order.
pub(crate) struct Watched<T> {
    inner: T,
    bridge: Arc<Bridge>,
    /// Told when the transport's messages end (the server closed the connection).
    ended: Option<tokio::sync::oneshot::Sender<()>>,
}

impl<T> Watched<T> {
    pub(crate) fn new(inner: T, bridge: Arc<Bridge>) -> Self {
        Self {
            inner,
            bridge,
            ended: None,
        }
    }

    /// Tells `ended` when the transport's messages end.
    pub(crate) fn ending(mut self, ended: tokio::sync::oneshot::Sender<()>) -> Self {
        self.ended = Some(ended);
        self
    }
}

impl<T: rmcp::transport::Transport<RoleClient>> rmcp::transport::Transport<RoleClient>
    for Watched<T>
{
    type Error = T::Error;

    fn send(
        &mut self,
        item: rmcp::service::TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        self.inner.send(item)
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleClient>> {
        let message = self.inner.receive().await;
        match &message {
            Some(message) => self.bridge.on_wire(message),
            None => {
                if let Some(ended) = self.ended.take() {
                    let _ = ended.send(());
                }
            }
        }
        message
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.inner.close()
    }
}
