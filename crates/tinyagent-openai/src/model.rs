//! [`OpenAiModel`]: the [`Model`] over HTTP, with retries and streaming.

use std::collections::VecDeque;
use std::collections::hash_map::RandomState;
use std::hash::BuildHasher;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use eventsource_stream::Eventsource;
use futures::stream::{self, BoxStream};
use futures::{Stream, StreamExt};
use reqwest::header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue};
use tinyagent::{BoxFuture, Model, ModelError, ModelEvent, ModelRequest, ModelResponse};

use crate::config::{ConfigError, OpenAiConfig};
use crate::error::{retry_after, status_error, transport_error};
use crate::stream::Assembler;
use crate::wire;

/// A [`Model`] that talks the OpenAI Chat Completions wire format over HTTP: the seed's
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
        let mut builder = reqwest::Client::builder()
            .default_headers(headers)
            .user_agent(concat!("tinyagent-openai/", env!("CARGO_PKG_VERSION")))
            .connect_timeout(config.connect_timeout)
            .read_timeout(config.read_timeout);
        if let Some(timeout) = config.request_timeout {
            builder = builder.timeout(timeout);
        }
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

    /// Posts `body`, retrying failures that may pass; returns the successful response.
    async fn send(&self, body: &[u8], stream: bool) -> Result<reqwest::Response, ModelError> {
        let mut attempt = 0;
        self.send_counting(body, stream, &mut attempt).await
    }

    /// [`send`](Self::send), counting retries in `attempt` so that a caller that also retries
    /// (a body cut while it was read) shares one budget of `max_retries`.
    async fn send_counting(
        &self,
        body: &[u8],
        stream: bool,
        attempt: &mut u32,
    ) -> Result<reqwest::Response, ModelError> {
        let config = &self.inner.config;
        loop {
            let mut request = self
                .inner
                .client
                .post(&self.inner.endpoint)
                .body(body.to_vec());
            if stream {
                request = request.header(ACCEPT, "text/event-stream");
            }
            let (err, wait) = match request.send().await {
                Ok(resp) if resp.status().is_success() => return Ok(resp),
                Ok(resp) => {
                    let status = resp.status();
                    let wait = retry_after(resp.headers(), SystemTime::now());
                    let body = read_error_body(resp).await;
                    let err = status_error(
                        status,
                        &body,
                        config.api_key.as_deref().is_some_and(|k| !k.is_empty()),
                        &config.model,
                    );
                    (err, wait)
                }
                Err(e) => (transport_error(e, &self.inner.endpoint), None),
            };
            if !err.is_retryable() || *attempt >= config.max_retries {
                return Err(err);
            }
            let delay = match wait {
                Some(wait) => wait.min(config.max_retry_after),
                None => backoff(config, *attempt),
            };
            *attempt += 1;
            tracing::warn!(
                gen_ai.request.model = %config.model,
                attempt = *attempt,
                max_retries = config.max_retries,
                delay_ms = delay.as_millis() as u64,
                error = %err,
                "chat completion failed; retrying",
            );
            tokio::time::sleep(delay).await;
        }
    }

    async fn generate_once(&self, req: &ModelRequest) -> Result<ModelResponse, ModelError> {
        let config = &self.inner.config;
        let body = serialize(&wire::request_body(config, req, false))?;
        let mut attempt: u32 = 0;
        loop {
            let resp = self.send_counting(&body, false, &mut attempt).await?;
            // A body cut while it was read is retried like a failed request.
            let err = match resp.bytes().await {
                Ok(bytes) => {
                    let out = wire::parse_response(&bytes, &req.tools)?;
                    tracing::debug!(
                        gen_ai.request.model = %config.model,
                        gen_ai.usage.input_tokens = out.usage.input_tokens,
                        gen_ai.usage.output_tokens = out.usage.output_tokens,
                        "chat completion",
                    );
                    return Ok(out);
                }
                Err(e) => transport_error(e, &self.inner.endpoint),
            };
            if !err.is_retryable() || attempt >= config.max_retries {
                return Err(err);
            }
            tokio::time::sleep(backoff(config, attempt)).await;
            attempt += 1;
        }
    }
}

/// The body of an error response, at most 64 KiB of it; empty if it cannot be read.
async fn read_error_body(mut resp: reqwest::Response) -> Vec<u8> {
    let mut out = Vec::new();
    while let Ok(Some(chunk)) = resp.chunk().await {
        out.extend_from_slice(&chunk);
        if out.len() > 64 * 1024 {
            break;
        }
    }
    out
}

fn serialize(body: &serde_json::Value) -> Result<Vec<u8>, ModelError> {
    serde_json::to_vec(body)
        .map_err(|e| ModelError::other(format!("could not serialize the request: {e}")))
}

/// Exponential backoff with jitter: `initial * 2^attempt`, capped, then a random point in
/// its upper half.
fn backoff(config: &OpenAiConfig, attempt: u32) -> Duration {
    let base = config
        .initial_backoff
        .saturating_mul(1u32 << attempt.min(20))
        .min(config.max_backoff);
    let half = base / 2;
    let nanos = u64::try_from(half.as_nanos()).unwrap_or(u64::MAX);
    let jitter = if nanos == 0 {
        0
    } else {
        RandomState::new().hash_one((attempt, SystemTime::now())) % nanos
    };
    half + Duration::from_nanos(jitter)
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
                    eventsource_stream::EventStreamError<reqwest::Error>,
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
}

impl<'a> StreamState<'a> {
    /// The next item of the stream, or `None` at its end.
    async fn next(&mut self) -> Option<Result<ModelEvent, ModelError>> {
        loop {
            if let Some(item) = self.pending.pop_front() {
                return Some(item);
            }
            match &mut self.phase {
                Phase::Over => return None,
                Phase::Connect => {
                    let config = &self.model.inner.config;
                    let body = match serialize(&wire::request_body(config, self.req, true)) {
                        Ok(body) => body,
                        Err(e) => return Some(self.fail(e)),
                    };
                    let resp = match self.model.send(&body, true).await {
                        Ok(resp) => resp,
                        Err(e) => return Some(self.fail(e)),
                    };
                    let is_json = resp
                        .headers()
                        .get(CONTENT_TYPE)
                        .and_then(|v| v.to_str().ok())
                        .is_some_and(|v| v.to_ascii_lowercase().contains("json"));
                    if is_json {
                        // A server that ignores `stream: true` and answers in one piece.
                        self.phase = Phase::Over;
                        let bytes = match resp.bytes().await {
                            Ok(bytes) => bytes,
                            Err(e) => {
                                return Some(Err(transport_error(e, &self.model.inner.endpoint)));
                            }
                        };
                        let bytes = strip_bom(bytes);
                        let first = bytes.iter().find(|b| !b.is_ascii_whitespace());
                        if first != Some(&b'{') {
                            // Events after all, under the wrong content type.
                            let body = stream::once(async move { Ok::<_, reqwest::Error>(bytes) });
                            self.phase = Phase::Reading(Box::pin(without_bom(body).eventsource()));
                            continue;
                        }
                        match wire::parse_response(&bytes, &self.req.tools) {
                            Ok(response) => self
                                .pending
                                .extend(response.into_events().into_iter().map(Ok)),
                            Err(e) => return Some(Err(e)),
                        }
                    } else {
                        self.phase = Phase::Reading(Box::pin(
                            without_bom(resp.bytes_stream()).eventsource(),
                        ));
                    }
                }
                Phase::Reading(events) => match events.next().await {
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
                            self.pending.push_back(Err(e));
                            self.phase = Phase::Over;
                        }
                    }
                    Some(Err(e)) if self.assembler.has_finished() => {
                        // The reply was complete (it had its finish_reason); only the end of
                        // the stream was lost.
                        tracing::debug!("the event stream failed after the reply finished: {e}");
                        return Some(self.done());
                    }
                    Some(Err(e)) => {
                        let err = match e {
                            eventsource_stream::EventStreamError::Transport(e) => {
                                let cause = transport_error(e, &self.model.inner.endpoint);
                                self.assembler
                                    .truncation_error(&format!("failed ({cause})"))
                            }
                            other => ModelError::invalid_response(format!(
                                "the event stream could not be read: {other}"
                            )),
                        };
                        return Some(self.fail(err));
                    }
                    None => {
                        if self.assembler.has_finished() {
                            // Servers that do not send `[DONE]`.
                            return Some(self.done());
                        }
                        let err = self.assembler.truncation_error("ended");
                        return Some(self.fail(err));
                    }
                },
            }
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

/// The UTF-8 byte order mark some servers put before a body.
const BOM: &[u8] = b"\xEF\xBB\xBF";

/// A body without leading byte order marks (one, or several from a server that adds its own
/// to a body that had one).
pub(crate) fn strip_bom(mut bytes: bytes::Bytes) -> bytes::Bytes {
    while bytes.starts_with(BOM) {
        bytes = bytes.slice(BOM.len()..);
    }
    bytes
}

/// A byte stream without leading byte order marks: the SSE parser panics on one (it slices a
/// leading mark off as if it were one byte long). A mark may arrive cut across chunks, so the
/// first bytes are held back until they cannot be the start of a mark any more; a stream that
/// ends while they are held back ended inside a mark, and loses nothing else.
pub(crate) fn without_bom<S, E>(chunks: S) -> impl futures::Stream<Item = Result<bytes::Bytes, E>>
where
    S: futures::Stream<Item = Result<bytes::Bytes, E>>,
{
    let mut head: Option<Vec<u8>> = Some(Vec::new());
    chunks.map(move |chunk| {
        chunk.map(|bytes| {
            let Some(pending) = head.as_mut() else {
                return bytes;
            };
            pending.extend_from_slice(&bytes);
            while pending.starts_with(BOM) {
                pending.drain(..BOM.len());
            }
            if BOM.starts_with(pending) {
                // Empty, or the start of a mark: wait for the next chunk.
                return bytes::Bytes::new();
            }
            bytes::Bytes::from(head.take().unwrap_or_default())
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_order_marks_are_dropped_wherever_the_chunks_are_cut() {
        use futures::FutureExt;
        let body: &[u8] = b"\xEF\xBB\xBF\xEF\xBB\xBFdata: {}\n\n";
        for cut in 0..=body.len() {
            for cut2 in cut..=body.len() {
                let chunks = [&body[..cut], &body[cut..cut2], &body[cut2..]]
                    .map(|c| Ok::<_, std::convert::Infallible>(bytes::Bytes::copy_from_slice(c)));
                let out: Vec<_> = without_bom(stream::iter(chunks))
                    .collect::<Vec<_>>()
                    .now_or_never()
                    .unwrap();
                let joined: Vec<u8> = out.into_iter().flat_map(|c| c.unwrap().to_vec()).collect();
                assert_eq!(joined, b"data: {}\n\n", "cut at {cut} and {cut2}");
            }
        }
        // A body that is only part of a mark ends empty; one that merely starts like a mark
        // keeps every byte.
        let out: Vec<_> = without_bom(stream::iter([Ok::<_, std::convert::Infallible>(
            bytes::Bytes::from_static(b"\xEF\xBB"),
        )]))
        .collect::<Vec<_>>()
        .now_or_never()
        .unwrap();
        assert!(out.iter().all(|c| c.as_ref().unwrap().is_empty()));
        assert_eq!(
            strip_bom(bytes::Bytes::from_static(b"\xEFx")).as_ref(),
            b"\xEFx"
        );
    }

    #[test]
    fn backoff_grows_with_jitter_and_is_capped() {
        let config = OpenAiConfig::new("m")
            .with_backoff(Duration::from_millis(100), Duration::from_millis(1000));
        for attempt in 0..30 {
            let d = backoff(&config, attempt);
            let base = (100u64 << attempt.min(20)).min(1000);
            let d = d.as_millis() as u64;
            assert!(d >= base / 2 && d <= base, "attempt {attempt}: {d}ms");
        }
        let zero = OpenAiConfig::new("m").with_backoff(Duration::ZERO, Duration::ZERO);
        assert_eq!(backoff(&zero, 3), Duration::ZERO);
    }
}
