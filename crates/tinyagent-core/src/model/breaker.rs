//! [`CircuitBreakerModel`]: a model that keeps failing is refused at once for a while.

use std::time::Duration;

use futures::StreamExt;
use futures::stream::BoxStream;

use super::{Model, ModelError, ModelErrorKind, ModelEvent, ModelRequest, ModelResponse};
use crate::breaker::{Breaker, DEFAULT_COOL_DOWN, DEFAULT_FAILURES, Refusal};
use crate::util::BoxFuture;

/// A circuit breaker around a model: after `failures` consecutive failed calls that are
/// [retryable](ModelError::is_retryable) (the provider unreachable, overloaded, rate-limiting
/// or timing out, after the provider's own retries) every call fails at once with an
/// [`Unavailable`](ModelErrorKind::Unavailable) error, still retryable, until the cool-down has
/// passed; then one call probes. Under a [`FallbackModel`](super::FallbackModel) a dead
/// provider is skipped at once instead of being waited for on every step.
///
/// Errors that say nothing about the provider's health (an invalid request, a prompt too long,
/// bad credentials) neither count nor reset. A stream counts when it ends.
///
/// ```
/// use std::sync::Arc;
/// use std::time::Duration;
/// use tinyagent::model::{CircuitBreakerModel, FallbackModel};
/// use tinyagent::testing::{ScriptedModel, reply};
/// # use tinyagent::{Message, Model, ModelError, ModelRequest, model::ModelErrorKind};
///
/// let down = ScriptedModel::default();
/// down.push_error(ModelError::new(ModelErrorKind::Unavailable, "503 Service Unavailable"));
/// let backup = ScriptedModel::new([reply::text("from the backup"), reply::text("again")]);
/// let model = FallbackModel::new([
///     Arc::new(CircuitBreakerModel::new(down).failures(1).cool_down(Duration::from_secs(60))) as Arc<dyn Model>,
///     Arc::new(backup),
/// ]);
/// # tokio::runtime::Builder::new_current_thread().enable_time().start_paused(true).build().unwrap().block_on(async {
/// let req = ModelRequest::new(vec![Message::user("hi")]);
/// assert_eq!(model.generate(&req).await.unwrap().message.text(), "from the backup");
/// // The first model's breaker is open: it is not called again for a minute.
/// assert_eq!(model.generate(&req).await.unwrap().message.text(), "again");
/// # });
/// ```
pub struct CircuitBreakerModel<M> {
    model: M,
    breaker: Breaker,
}

impl<M: Model> CircuitBreakerModel<M> {
    /// A breaker around `model` that opens after 5 consecutive failures and probes again
    /// after 30 s.
    pub fn new(model: M) -> Self {
        Self {
            model,
            breaker: Breaker::new(DEFAULT_FAILURES, DEFAULT_COOL_DOWN),
        }
    }

    /// Sets how many consecutive failures open the breaker (at least 1).
    #[must_use]
    pub fn failures(self, failures: u32) -> Self {
        Self {
            breaker: Breaker::new(failures, self.breaker.cool_down()),
            model: self.model,
        }
    }

    /// Sets how long an open breaker refuses calls before it lets a probe through.
    #[must_use]
    pub fn cool_down(self, cool_down: Duration) -> Self {
        Self {
            breaker: Breaker::new(self.breaker.failures_to_open(), cool_down),
            model: self.model,
        }
    }

    /// The model inside.
    pub fn model(&self) -> &M {
        &self.model
    }

    fn refused(&self, refusal: Refusal) -> ModelError {
        ModelError::new(
            ModelErrorKind::Unavailable,
            format!("model {} is not called: {refusal}", self.model.name()),
        )
    }
}

impl<M> std::fmt::Debug for CircuitBreakerModel<M> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CircuitBreakerModel")
            .field("breaker", &self.breaker)
            .finish_non_exhaustive()
    }
}

/// Whether a failure says the provider is unhealthy.
fn counts(err: &ModelError) -> bool {
    err.is_retryable()
}

impl<M: Model> Model for CircuitBreakerModel<M> {
    fn name(&self) -> &str {
        self.model.name()
    }

    fn provider(&self) -> Option<&str> {
        self.model.provider()
    }

    fn supports(&self, option: super::SamplingOption) -> bool {
        self.model.supports(option)
    }

    fn count_tokens(&self, text: &str) -> Option<u64> {
        self.model.count_tokens(text)
    }

    fn generate<'a>(
        &'a self,
        req: &'a ModelRequest,
    ) -> BoxFuture<'a, Result<ModelResponse, ModelError>> {
        Box::pin(async move {
            let permit = self.breaker.admit().map_err(|r| self.refused(r))?;
            let result = self.model.generate(req).await;
            match &result {
                Ok(_) => permit.succeeded(),
                Err(err) if counts(err) => permit.failed(),
                Err(_) => permit.neutral(),
            }
            result
        })
    }

    fn stream<'a>(
        &'a self,
        req: &'a ModelRequest,
    ) -> BoxStream<'a, Result<ModelEvent, ModelError>> {
        let permit = match self.breaker.admit() {
            Ok(permit) => permit,
            Err(refusal) => {
                return Box::pin(futures::stream::once(std::future::ready(Err(
                    self.refused(refusal)
                ))));
            }
        };
        let inner = self.model.stream(req);
        Box::pin(futures::stream::unfold(
            (inner, Some(permit)),
            |(mut inner, mut permit)| async move {
                let item = inner.next().await;
                match &item {
                    Some(Ok(ModelEvent::Done(_))) => {
                        if let Some(p) = permit.take() {
                            p.succeeded();
                        }
                    }
                    Some(Err(err)) => {
                        if let Some(p) = permit.take() {
                            if counts(err) { p.failed() } else { p.neutral() }
                        }
                    }
                    // A stream that ends without Done is a provider fault; the agent reports it.
                    None => {
                        if let Some(p) = permit.take() {
                            p.failed();
                        }
                    }
                    Some(Ok(_)) => {}
                }
                item.map(|item| (item, (inner, permit)))
            },
        ))
    }
}
