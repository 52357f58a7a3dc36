//! [`FallbackModel`]: an ordered list of models, the next one answering when one is down.

use std::sync::Arc;

use futures::StreamExt;
use futures::stream::BoxStream;

use super::{Model, ModelError, ModelErrorKind, ModelEvent, ModelRequest, ModelResponse};
use crate::util::BoxFuture;

/// Which failures move a [`FallbackModel`] on to its next model.
type Classifier = Arc<dyn Fn(&ModelError) -> bool + Send + Sync>;

/// Models tried in order, any providers: when one fails in a way another model may not
/// (the provider unreachable or failing on its side, a rate limit, a timeout), the next one
/// gets the same request. A failure that the next model would repeat (the request refused as
/// invalid, a prompt too long, a cancelled call) stops there. When every model fails, the
/// error is the last one's, and its message names each model and why it failed.
///
/// | failure ([`ModelErrorKind`]) | next model? |
/// |---|---|
/// | `Unavailable` (connection refused or reset, DNS, 5xx), `RateLimited` (429), `TimedOut` | yes |
/// | any error the provider marked [retryable](ModelError::is_retryable) | yes |
/// | `InvalidRequest` (400), `ContextLengthExceeded`, `Authentication`, `InvalidResponse`, `Cancelled`, `Other` | no, unless marked retryable |
///
/// Change the rule with [`fall_back_on`](Self::fall_back_on). When a streamed reply fails
/// after it produced output, the next model's reply follows a [`ModelEvent::Restart`], so the
/// agent and its caller discard what was shown (nothing is replayed silently). Give each
/// model a [`CircuitBreakerModel`](super::CircuitBreakerModel) to skip a dead provider at once.
///
/// ```
/// use std::sync::Arc;
/// use tinyagent::model::FallbackModel;
/// use tinyagent::testing::{ScriptedModel, reply};
/// # use tinyagent::{Message, Model, ModelError, ModelRequest, model::ModelErrorKind};
///
/// let primary = Arc::new(ScriptedModel::default());
/// primary.push_error(ModelError::new(ModelErrorKind::RateLimited, "429 Too Many Requests"));
/// let backup = Arc::new(ScriptedModel::new([reply::text("hello from the backup")]));
/// let model = FallbackModel::new([primary.clone() as Arc<dyn Model>, backup.clone()]);
/// # tokio_test::block_on(async {
/// let req = ModelRequest::new(vec![Message::user("hi")]);
/// assert_eq!(model.generate(&req).await.unwrap().message.text(), "hello from the backup");
/// assert_eq!((primary.request_count(), backup.request_count()), (1, 1));
/// # });
/// ```
#[derive(Clone)]
pub struct FallbackModel {
    models: Vec<Arc<dyn Model>>,
    fall_back_on: Classifier,
}

impl std::fmt::Debug for FallbackModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<&str> = self.models.iter().map(|m| m.name()).collect();
        f.debug_struct("FallbackModel")
            .field("models", &names)
            .finish_non_exhaustive()
    }
}

/// The default rule: retryable failures (unavailable, rate-limited, timed out) move on.
fn default_rule(err: &ModelError) -> bool {
    err.is_retryable()
}

impl FallbackModel {
    /// The models, tried in this order. With none, every call fails with an
    /// [`InvalidRequest`](ModelErrorKind::InvalidRequest) error saying so.
    pub fn new(models: impl IntoIterator<Item = Arc<dyn Model>>) -> Self {
        Self {
            models: models.into_iter().collect(),
            fall_back_on: Arc::new(default_rule),
        }
    }

    /// Sets which failures move on to the next model (by default the
    /// [retryable](ModelError::is_retryable) ones).
    #[must_use]
    pub fn fall_back_on(
        mut self,
        rule: impl Fn(&ModelError) -> bool + Send + Sync + 'static,
    ) -> Self {
        self.fall_back_on = Arc::new(rule);
        self
    }

    /// The models, in order.
    pub fn models(&self) -> &[Arc<dyn Model>] {
        &self.models
    }

    fn no_models() -> ModelError {
        ModelError::new(
            ModelErrorKind::InvalidRequest,
            "FallbackModel has no models to call",
        )
        .retryable(false)
    }
}

/// The last failure, its message naming every model tried and why each failed.
fn all_failed(tried: &[(String, ModelError)], last: ModelError) -> ModelError {
    if tried.is_empty() {
        return last;
    }
    let earlier: Vec<String> = tried
        .iter()
        .map(|(name, err)| format!("{name}: {err}"))
        .collect();
    let message = format!("{} (after {})", last.message(), earlier.join("; "));
    last.with_message(message)
}

impl Model for FallbackModel {
    /// The first model's name.
    fn name(&self) -> &str {
        self.models.first().map_or("fallback", |m| m.name())
    }

    /// Only what every model takes: a backup that answers must not drop what the first
    /// would have used.
    fn supports(&self, option: super::SamplingOption) -> bool {
        self.models.iter().all(|m| m.supports(option))
    }

    /// The first model's count.
    fn count_tokens(&self, text: &str) -> Option<u64> {
        self.models.first()?.count_tokens(text)
    }

    fn generate<'a>(
        &'a self,
        req: &'a ModelRequest,
    ) -> BoxFuture<'a, Result<ModelResponse, ModelError>> {
        Box::pin(async move {
            let mut tried = Vec::new();
            for (i, model) in self.models.iter().enumerate() {
                match model.generate(req).await {
                    Ok(mut response) => {
                        response
                            .model
                            .get_or_insert_with(|| model.name().to_owned());
                        return Ok(response);
                    }
                    Err(err) if i + 1 < self.models.len() && (self.fall_back_on)(&err) => {
                        tracing::warn!(
                            model = model.name(),
                            next = self.models[i + 1].name(),
                            error = %err,
                            "model failed; falling back"
                        );
                        tried.push((model.name().to_owned(), err));
                    }
                    Err(err) => return Err(all_failed(&tried, err)),
                }
            }
            Err(Self::no_models())
        })
    }

    fn stream<'a>(
        &'a self,
        req: &'a ModelRequest,
    ) -> BoxStream<'a, Result<ModelEvent, ModelError>> {
        if self.models.is_empty() {
            return Box::pin(futures::stream::once(std::future::ready(Err(
                Self::no_models(),
            ))));
        }
        struct State<'a> {
            index: usize,
            current: BoxStream<'a, Result<ModelEvent, ModelError>>,
            produced: bool,
            tried: Vec<(String, ModelError)>,
            done: bool,
        }
        let state = State {
            index: 0,
            current: self.models[0].stream(req),
            produced: false,
            tried: Vec::new(),
            done: false,
        };
        Box::pin(futures::stream::unfold(state, move |mut st| async move {
            if st.done {
                return None;
            }
            loop {
                match st.current.next().await {
                    Some(Ok(mut event)) => {
                        if let ModelEvent::Done(response) = &mut event {
                            let name = self.models[st.index].name();
                            response.model.get_or_insert_with(|| name.to_owned());
                            st.done = true;
                        } else if !matches!(event, ModelEvent::Restart { .. }) {
                            st.produced = true;
                        }
                        return Some((Ok(event), st));
                    }
                    Some(Err(err))
                        if st.index + 1 < self.models.len() && (self.fall_back_on)(&err) =>
                    {
                        let failed = self.models[st.index].name().to_owned();
                        st.index += 1;
                        let next = self.models[st.index].name();
                        tracing::warn!(model = %failed, next, error = %err, "model failed; falling back");
                        let reason = format!("{failed} failed ({err}); {next} answers instead");
                        st.tried.push((failed, err));
                        st.current = self.models[st.index].stream(req);
                        if std::mem::take(&mut st.produced) {
                            return Some((Ok(ModelEvent::Restart { reason }), st));
                        }
                    }
                    Some(Err(err)) => {
                        st.done = true;
                        let err = all_failed(&st.tried, err);
                        return Some((Err(err), st));
                    }
                    None => return None,
                }
            }
        }))
    }
}
