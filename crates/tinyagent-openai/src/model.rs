//! [`OpenAiModel`]: the [`Model`] over HTTP, with retries and streaming.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use eventsource_stream::Eventsource;
use futures::stream::{self, BoxStream};
use futures::{Stream, StreamExt};
use reqwest::header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue};
use tinyagent::{
    BoxFuture, Model, ModelError, ModelErrorKind, ModelEvent, ModelRequest, ModelResponse,
};

use crate::config::{ConfigError, OpenAiConfig};
use crate::error::{retry_after, status_error, transport_error, unexpected_body};
use crate::stream::Assembler;
use crate::transport::{
    BodyError, Budget, Limit, backoff, content_type, guarded, read_body, read_error_body, secs,
    serialize, strip_bom, too_large, without_bom,
};
use crate::wire;
use tokio::time::Instant;

/// A [`Model`] that talks the OpenAI Chat Completions wire format over HTTP: the tutorial's
/// `openaiProvider`.
///
/// Works with OpenAI and every compatible server (Ollama, vLLM, llama.cpp's server,
/// DeepSeek, Qwen's compatible mode, …) by changing the base URL. [`Model::generate`] makes
/// one non-streaming request; [`Model::stream`] (what agents call) streams over server-sent
/// events. Failed requests (429, 5xx, connection failures, timeouts) are retried with
/// exponential backoff and jitter, honouring `Retry-After`.
///
/// Cheap to clone: clones share the HTTP connection pool.
///
/// ```no_run
/// use std::sync::Arc;
/// use tinyagent::{AgentExt, LlmAgent, Session};
/// use tinyagent_openai::OpenAiModel;
///
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// // OPENAI_API_KEY / OPENAI_BASE_URL / OPENAI_MODEL
/// let model = OpenAiModel::from_env()?;
/// let agent = LlmAgent::builder("assistant")
///     .model(model)
///     .instruction("你是一个全能助手。")
///     .build()?;
/// let answer = agent.ask(&Session::new(), "你好").await?;
/// println!("{answer}");
/// # Ok(()) }
/// ```
#[derive(Clone, Debug)]
pub struct OpenAiModel {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    config: OpenAiConfig,
    client: reqwest::Client,
    endpoint: String,
}

impl OpenAiModel {
    /// A model with this configuration.
    ///
    /// Fails when the base URL is not an HTTP(S) URL, the model name is empty, or a header
    /// (the key included) is not a valid header value.
    pub fn new(config: OpenAiConfig) -> Result<Self, ConfigError> {
        config.validate()?;
        let mut headers = HeaderMap::new();
        if let Some(key) = config.api_key.as_deref().filter(|k| !k.is_empty()) {
            let mut value = HeaderValue::from_str(&format!("Bearer {key}")).map_err(|_| {
                ConfigError::Client("the API key contains characters a header cannot".into())
            })?;
            value.set_sensitive(true);
            headers.insert(AUTHORIZATION, value);
        }
        for (name, value) in &config.headers {
            let name = HeaderName::from_bytes(name.as_bytes())
                .map_err(|e| ConfigError::Client(format!("header name {name:?}: {e}")))?;
            let mut value = HeaderValue::from_str(value)
                .map_err(|e| ConfigError::Client(format!("header {name}: {e}")))?;
            // Extra headers often carry keys (`api-key` for Azure, gateway tokens): never shown
            // in Debug output.
            value.set_sensitive(true);
            headers.insert(name, value);
        }
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        let builder = reqwest::Client::builder()
            .default_headers(headers)
            .user_agent(concat!("tinyagent-openai/", env!("CARGO_PKG_VERSION")))
            .connect_timeout(config.connect_timeout);
        let client = builder
            .build()
            .map_err(|e| ConfigError::Client(e.to_string()))?;
        let endpoint = config.endpoint();
        Ok(Self {
            inner: Arc::new(Inner {
                config,
                client,
                endpoint,
            }),
        })
    }

    /// A model configured from the environment (see [`OpenAiConfig::from_env`]).
    pub fn from_env() -> Result<Self, ConfigError> {
        Self::new(OpenAiConfig::from_env()?)
    }

    /// The configuration.
    pub fn config(&self) -> &OpenAiConfig {
        &self.inner.config
    }

    /// The JSON body this model sends for `req` (`stream` chooses the streaming form): what
    /// goes over the wire, for logs and tests.
    ///
    /// ```
    /// use tinyagent::{Message, ModelRequest};
    /// use tinyagent_openai::{OpenAiConfig, OpenAiModel};
    ///
    /// let model = OpenAiModel::new(OpenAiConfig::new("gpt-4o-mini"))?;
    /// let req = ModelRequest::new(vec![Message::user("你好")]).with_instruction("你是一个全能助手。");
    /// let body = model.request_body(&req, false);
    /// assert_eq!(body["messages"][0]["role"], "system");
    /// assert_eq!(body["messages"][1]["content"], "你好");
    /// # Ok::<(), tinyagent_openai::ConfigError>(())
    /// ```
    pub fn request_body(&self, req: &ModelRequest, stream: bool) -> serde_json::Value {
        wire::request_body(&self.inner.config, req, stream)
    }

    /// Posts `body`, retrying failures that may pass, until a successful response's headers
    /// arrive; `budget` counts the attempts and holds the call's deadline, shared with the
    /// caller's own retries (a body cut while it was read).
    async fn send(
        &self,
        body: &[u8],
        stream: bool,
        budget: &mut Budget,
    ) -> Result<reqwest::Response, ModelError> {
        let config = &self.inner.config;
        loop {
            budget.attempt_started = Instant::now();
            let mut request = self
                .inner
                .client
                .post(&self.inner.endpoint)
                .body(body.to_vec());
            if stream {
                request = request.header(ACCEPT, "text/event-stream");
            }
            let (limit, at) = budget.limit(Limit::FirstByte, config);
            let (err, wait) = match tokio::time::timeout_at(at, request.send()).await {
                Err(_) => (self.timeout_error(limit, budget, 0), None),
                Ok(Ok(resp)) if resp.status().is_success() => return Ok(resp),
                Ok(Ok(resp)) => {
                    let status = resp.status();
                    let wait = retry_after(resp.headers(), SystemTime::now());
                    let (_, at) = budget.limit(Limit::Idle, config);
                    let body = tokio::time::timeout_at(at, read_error_body(resp))
                        .await
                        .unwrap_or_default();
                    let err = status_error(
                        status,
                        &body,
                        config.api_key.as_deref().is_some_and(|k| !k.is_empty()),
                        &config.model,
                    );
                    (err, wait)
                }
                Ok(Err(e)) => (transport_error(e, &self.inner.endpoint), None),
            };
            self.before_retry(err, wait, budget).await?;
        }
    }

    /// Waits before the next attempt, or returns `err` when it may not pass, the retries are
    /// spent or the deadline would pass meanwhile.
    async fn before_retry(
        &self,
        err: ModelError,
        wait: Option<Duration>,
        budget: &mut Budget,
    ) -> Result<(), ModelError> {
        let config = &self.inner.config;
        if !err.is_retryable() || budget.attempt >= config.max_retries {
            return Err(err);
        }
        let delay = match wait {
            Some(wait) => wait.min(config.max_retry_after),
            None => backoff(config, budget.attempt),
        };
        if budget
            .deadline
            .is_some_and(|deadline| Instant::now() + delay >= deadline)
        {
            return Err(err);
        }
        budget.attempt += 1;
        tracing::warn!(
            gen_ai.request.model = %config.model,
            attempt = budget.attempt,
            max_retries = config.max_retries,
            delay_ms = delay.as_millis() as u64,
            error = %err,
            "chat completion failed; retrying",
        );
        tokio::time::sleep(delay).await;
        Ok(())
    }

    /// The error of a wait that hit `limit`; `chunks` events had arrived.
    fn timeout_error(&self, limit: Limit, budget: &Budget, chunks: usize) -> ModelError {
        let config = &self.inner.config;
        let url = &self.inner.endpoint;
        let tries = match budget.attempt {
            0 => String::new(),
            n => format!("; attempt {} of {}", n + 1, config.max_retries + 1),
        };
        match limit {
            Limit::FirstByte => ModelError::new(
                ModelErrorKind::TimedOut,
                format!(
                    "no answer from {url} within {} (the first-byte timeout{tries})",
                    secs(config.first_byte_timeout)
                ),
            ),
            Limit::Idle => ModelError::new(
                ModelErrorKind::TimedOut,
                format!(
                    "the stream from {url} went silent for {} after {chunks} events (the idle \
                     timeout{tries})",
                    secs(config.idle_timeout)
                ),
            ),
            Limit::Whole => ModelError::new(
                ModelErrorKind::TimedOut,
                format!(
                    "the call to {url} did not finish within {} (the request timeout, \
                     retries included{tries})",
                    secs(config.request_timeout.unwrap_or_default())
                ),
            )
            .retryable(false),
        }
    }

    async fn generate_once(&self, req: &ModelRequest) -> Result<ModelResponse, ModelError> {
        let config = &self.inner.config;
        let body = serialize(&wire::request_body(config, req, false))?;
        let mut budget = Budget::new(config);
        loop {
            let resp = self.send(&body, false, &mut budget).await?;
            let status = resp.status();
            let content_type = content_type(&resp);
            // A body cut while it was read is retried like a failed request.
            let err = match read_body(resp, config.max_reply_bytes, &budget, config).await {
                Ok(bytes) => {
                    let bytes = strip_bom(bytes);
                    let empty = bytes.trim_ascii().is_empty();
                    if empty
                        || !(content_type.contains("json") || bytes.trim_ascii().starts_with(b"{"))
                    {
                        return Err(unexpected_body(
                            status,
                            &content_type,
                            &bytes,
                            "a JSON response",
                            &config.base_url,
                        ));
                    }
                    let out = wire::parse_response(&bytes, &req.tools)?;
                    tracing::debug!(
                        gen_ai.request.model = %config.model,
                        gen_ai.usage.input_tokens = out.usage.input_tokens,
                        gen_ai.usage.output_tokens = out.usage.output_tokens,
                        "chat completion",
                    );
                    return Ok(out);
                }
                Err(BodyError::Http(e)) => transport_error(e, &self.inner.endpoint),
                Err(BodyError::TooLarge(n)) => return Err(too_large(n, config)),
                Err(BodyError::TimedOut(limit)) => self.timeout_error(limit, &budget, 0),
            };
            self.before_retry(err, None, &mut budget).await?;
        }
    }
}

impl Model for OpenAiModel {
    fn name(&self) -> &str {
        &self.inner.config.model
    }

    fn generate<'a>(
        &'a self,
        req: &'a ModelRequest,
    ) -> BoxFuture<'a, Result<ModelResponse, ModelError>> {
        Box::pin(self.generate_once(req))
    }

    fn stream<'a>(
        &'a self,
        req: &'a ModelRequest,
    ) -> BoxStream<'a, Result<ModelEvent, ModelError>> {
        let state = StreamState {
            model: self,
            req,
            phase: Phase::Connect,
            pending: VecDeque::new(),
            assembler: Assembler::default(),
            budget: Budget::new(&self.inner.config),
            shown: false,
            restart: None,
        };
        Box::pin(stream::unfold(state, |mut state| async move {
            let item = state.next().await?;
            Some((item, state))
        }))
    }
}

type Events<'a> = std::pin::Pin<
    Box<
        dyn Stream<
                Item = Result<
                    eventsource_stream::Event,
                    eventsource_stream::EventStreamError<BodyError>,
                >,
            > + Send
            + 'a,
    >,
>;

enum Phase<'a> {
    Connect,
    Reading(Events<'a>),
    Over,
}

struct StreamState<'a> {
    model: &'a OpenAiModel,
    req: &'a ModelRequest,
    phase: Phase<'a>,
    pending: VecDeque<Result<ModelEvent, ModelError>>,
    assembler: Assembler,
    budget: Budget,
    /// Events of the current attempt went out to the consumer.
    shown: bool,
    /// Why the reply restarts, when a retry follows events already shown.
    restart: Option<String>,
}

impl<'a> StreamState<'a> {
    /// The next item of the stream, or `None` at its end.
    async fn next(&mut self) -> Option<Result<ModelEvent, ModelError>> {
        loop {
            if let Some(item) = self.pending.pop_front() {
                if matches!(item, Ok(ref e) if !matches!(e, ModelEvent::Done(_) | ModelEvent::Restart { .. }))
                {
                    self.shown = true;
                }
                return Some(item);
            }
            let config = &self.model.inner.config;
            match &mut self.phase {
                Phase::Over => return None,
                Phase::Connect => {
                    let body = match serialize(&wire::request_body(config, self.req, true)) {
                        Ok(body) => body,
                        Err(e) => return Some(self.fail(e)),
                    };
                    let resp = match self.model.send(&body, true, &mut self.budget).await {
                        Ok(resp) => resp,
                        Err(e) => return Some(self.fail(e)),
                    };
                    if let Some(reason) = self.restart.take() {
                        self.pending.push_back(Ok(ModelEvent::Restart { reason }));
                    }
                    let status = resp.status();
                    let content_type = content_type(&resp);
                    if content_type.contains("event-stream") {
                        let bytes = guarded(
                            resp,
                            self.budget.limit(Limit::FirstByte, config),
                            config.idle_timeout,
                            self.budget.deadline,
                            config.max_reply_bytes,
                        );
                        self.phase = Phase::Reading(Box::pin(without_bom(bytes).eventsource()));
                        continue;
                    }
                    // Not an event stream: a server that ignores `stream: true` and answers
                    // in one piece, events under another content type, or something else.
                    let bytes =
                        match read_body(resp, config.max_reply_bytes, &self.budget, config).await {
                            Ok(bytes) => strip_bom(bytes),
                            Err(e) => {
                                let err = self.body_error(e);
                                if let Some(item) = self.retry(err).await {
                                    return Some(item);
                                }
                                continue;
                            }
                        };
                    let start = bytes.trim_ascii_start();
                    if start.starts_with(b"{") {
                        self.phase = Phase::Over;
                        match wire::parse_response(&bytes, &self.req.tools) {
                            Ok(response) => self
                                .pending
                                .extend(response.into_events().into_iter().map(Ok)),
                            Err(e) => return Some(Err(e)),
                        }
                    } else if [&b"data:"[..], b":", b"event:", b"id:"]
                        .iter()
                        .any(|p| start.starts_with(p))
                    {
                        let body = stream::once(async move { Ok::<_, BodyError>(bytes) });
                        self.phase = Phase::Reading(Box::pin(without_bom(body).eventsource()));
                    } else {
                        return Some(self.fail(unexpected_body(
                            status,
                            &content_type,
                            &bytes,
                            "an event stream",
                            &config.base_url,
                        )));
                    }
                }
                Phase::Reading(events) => {
                    match events.next().await {
                        Some(Ok(event)) => {
                            let data = event.data.trim();
                            if data.is_empty() {
                                continue;
                            }
                            if data == "[DONE]" {
                                return Some(self.done());
                            }
                            let mut out = Vec::new();
                            let res = self.assembler.push_data(data, &self.req.tools, &mut out);
                            self.pending.extend(out.into_iter().map(Ok));
                            if let Err(e) = res {
                                // An error event: retried when it may pass.
                                if let Some(item) = self.retry(e).await {
                                    self.pending.push_back(item);
                                }
                            }
                        }
                        Some(Err(e)) if self.assembler.has_finished() => {
                            // The reply was complete (it had its finish_reason); only the end
                            // of the stream was lost.
                            tracing::debug!(
                                "the event stream failed after the reply finished: {e}"
                            );
                            return Some(self.done());
                        }
                        Some(Err(e)) => {
                            let err = match e {
                                eventsource_stream::EventStreamError::Transport(e) => {
                                    self.body_error(e)
                                }
                                other => ModelError::invalid_response(format!(
                                    "the event stream could not be read: {other}"
                                )),
                            };
                            if let Some(item) = self.retry(err).await {
                                return Some(item);
                            }
                        }
                        None => {
                            if self.assembler.has_finished() {
                                // Servers that do not send `[DONE]`.
                                return Some(self.done());
                            }
                            let err = if self.assembler.chunks() == 0 {
                                ModelError::invalid_response(format!(
                                    "the event stream from {} ended before its first event; \
                                     check the base URL and the server's logs",
                                    config.base_url
                                ))
                            } else {
                                self.assembler.truncation_error("ended")
                            };
                            if let Some(item) = self.retry(err).await {
                                return Some(item);
                            }
                        }
                    }
                }
            }
        }
    }

    /// The error of a body that could not be read.
    fn body_error(&self, err: BodyError) -> ModelError {
        let config = &self.model.inner.config;
        match err {
            BodyError::Http(e) => {
                let cause = transport_error(e, &self.model.inner.endpoint);
                self.assembler
                    .truncation_error(&format!("failed ({cause})"))
            }
            BodyError::TooLarge(n) => too_large(n, config),
            BodyError::TimedOut(limit) => {
                self.model
                    .timeout_error(limit, &self.budget, self.assembler.chunks())
            }
        }
    }

    /// Starts the request again after `err` when it may pass and the budget allows (`None`:
    /// the caller goes on with the next attempt); otherwise ends the stream with the error.
    async fn retry(&mut self, err: ModelError) -> Option<Result<ModelEvent, ModelError>> {
        let shown = self.shown;
        let reason = err.message().to_owned();
        match self.model.before_retry(err, None, &mut self.budget).await {
            Ok(()) => {
                // What was queued but not shown is dropped with the attempt.
                self.pending.clear();
                self.assembler = Assembler::default();
                self.phase = Phase::Connect;
                if shown {
                    self.restart = Some(format!(
                        "{reason}; retrying (attempt {} of {}, the reply starts again)",
                        self.budget.attempt + 1,
                        self.model.inner.config.max_retries + 1
                    ));
                }
                self.shown = false;
                None
            }
            Err(err) => Some(self.fail(err)),
        }
    }

    fn fail(&mut self, err: ModelError) -> Result<ModelEvent, ModelError> {
        self.phase = Phase::Over;
        Err(err)
    }

    fn done(&mut self) -> Result<ModelEvent, ModelError> {
        self.phase = Phase::Over;
        let response = std::mem::take(&mut self.assembler).finish()?;
        tracing::debug!(
            gen_ai.request.model = %self.model.inner.config.model,
            gen_ai.usage.input_tokens = response.usage.input_tokens,
            gen_ai.usage.output_tokens = response.usage.output_tokens,
            "chat completion stream",
        );
        Ok(ModelEvent::Done(response))
    }
}
