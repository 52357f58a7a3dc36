//! What a tool asks of whoever runs it, through its [`ToolContext`]: progress, logs, sampling,
//! elicitation, each handed to the context's [`ToolHost`] (see [`host`](super::host)).

use std::sync::Arc;

use serde_json::Value;

use super::ToolContext;
use super::host::{
    Elicitation, ElicitationRequest, Host, LogLevel, SamplingReply, SamplingRequest, ToolHost,
    unsupported,
};
use crate::error::ToolError;

/// What a tool may ask of whoever runs it; see [`ToolHost`].
///
/// ```
/// use std::sync::{Arc, Mutex};
/// use tinyagent::{BoxFuture, ToolContext, ToolErrorKind, host::{LogLevel, SamplingRequest, ToolHost}};
///
/// #[derive(Default)]
/// struct Recorder(Mutex<Vec<String>>);
///
/// impl ToolHost for Recorder {
///     fn progress(&self, done: f64, total: Option<f64>, _message: Option<String>) -> BoxFuture<'_, ()> {
///         self.0.lock().unwrap().push(format!("{done}/{total:?}"));
///         Box::pin(async {})
///     }
/// }
///
/// # tokio_test::block_on(async {
/// let recorder = Arc::new(Recorder::default());
/// let ctx = ToolContext::new().with_host(recorder.clone());
/// ctx.progress(1.0, Some(3.0), None).await;
/// ctx.log(LogLevel::Info, "no logger here: dropped").await;
/// assert_eq!(*recorder.0.lock().unwrap(), ["1/Some(3.0)"]);
///
/// // Without a host, reports are dropped and requests fail clearly.
/// ToolContext::new().progress(1.0, None, Some("working")).await;
/// let err = ToolContext::new().sample(SamplingRequest::text("hi", 10)).await.unwrap_err();
/// assert_eq!(err.kind(), ToolErrorKind::Unavailable);
/// assert!(err.message().starts_with("sampling"), "{err}");
/// # });
/// ```
impl ToolContext {
    /// Returns the context with a host attached (agents and MCP servers do this for every
    /// call), replacing any host it had.
    #[must_use]
    pub fn with_host(mut self, host: Arc<dyn ToolHost>) -> Self {
        self.host = Some(Host(host));
        self
    }

    /// The host attached to the context.
    pub fn host(&self) -> Option<&Arc<dyn ToolHost>> {
        self.host.as_ref().map(|h| &h.0)
    }

    /// Reports progress: `progress` (increasing) of `total` when known, with a message for
    /// people. Dropped when no host listens.
    pub async fn progress(&self, progress: f64, total: Option<f64>, message: Option<&str>) {
        if let Some(host) = self.host() {
            host.progress(progress, total, message.map(str::to_owned))
                .await;
        }
    }

    /// Sends a log message (text or any JSON value) to the client. Dropped when no host
    /// listens, or when the client asked for more severe messages only.
    pub async fn log(&self, level: LogLevel, data: impl Into<Value>) {
        if let Some(host) = self.host() {
            host.log(level, None, data.into()).await;
        }
    }

    /// Asks the client's model for a completion (MCP sampling).
    ///
    /// # Errors
    ///
    /// [`Unavailable`](crate::ToolErrorKind::Unavailable) when no one answers sampling here;
    /// the client's refusal or failure otherwise.
    pub async fn sample(&self, request: SamplingRequest) -> Result<SamplingReply, ToolError> {
        match self.host() {
            Some(host) => host.sample(request).await,
            None => Err(unsupported("sampling (asking the client's model)")),
        }
    }

    /// Asks the person behind the client a question whose answer follows `schema` (MCP
    /// elicitation).
    ///
    /// # Errors
    ///
    /// [`Unavailable`](crate::ToolErrorKind::Unavailable) when no one answers elicitation
    /// here; the client's failure otherwise. A person who says no is
    /// [`Elicitation::Decline`], not an error.
    pub async fn elicit(
        &self,
        message: impl Into<String>,
        schema: Value,
    ) -> Result<Elicitation, ToolError> {
        let request = ElicitationRequest::new(message, schema);
        match self.host() {
            Some(host) => host.elicit(request).await,
            None => Err(unsupported("elicitation (asking the user)")),
        }
    }
}
