//! One model call over HTTP: [`Transport`] posts a body, retries what may pass, and reads
//! the answer whole or as server-sent events that a provider's [`Decoder`] turns into
//! [`ModelEvent`]s.

use std::collections::VecDeque;
use std::fmt;
use std::time::{Duration, SystemTime};

use eventsource_stream::Eventsource;
use futures::stream::{self, BoxStream};
use futures::{Stream, StreamExt};
use reqwest::StatusCode;
use reqwest::header::ACCEPT;
use tinyagent_core::{
    ModelError, ModelRequest, ModelResponse,
    model::{ModelErrorKind, ModelEvent},
};
use tokio::time::Instant;

use crate::HttpSettings;
use crate::body::{
    BodyError, content_type, guarded, read_body, read_error_body, strip_bom, without_bom,
};
use crate::errors::{retry_after, too_large, transport_error, unexpected_body};
use crate::limits::{Attempts, Limit, backoff, secs};
use crate::protocol::{Decoder, Flow, Protocol};

/// Posts requests to one endpoint within [`HttpSettings`], for one [`Protocol`].
///
/// Failures that may pass (429, 5xx, connection failures, timeouts, a stream cut in the
/// middle, a retryable error event) are retried with backoff, honouring `Retry-After`; a
/// retry after events were shown is announced with [`ModelEvent::Restart`].
pub struct Transport<P> {
    client: reqwest::Client,
    endpoint: String,
    /// The endpoint as errors and logs show it (credentials redacted).
    shown_endpoint: String,
    /// The base URL as errors and logs show it (credentials redacted).
    base_url: String,
    model: String,
    limits: HttpSettings,
    max_tokens: Option<u32>,
    protocol: P,
}

impl<P: fmt::Debug> fmt::Debug for Transport<P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Transport")
            .field("endpoint", &self.shown_endpoint)
            .field("model", &self.model)
            .field("limits", &self.limits)
            .field("protocol", &self.protocol)
            .finish_non_exhaustive()
    }
}

impl<P: Protocol> Transport<P> {
    /// A transport posting to `endpoint` with `client` (which carries the provider's
    /// headers); `base_url` and `model` are named in errors and logs, URLs always with their
    /// credentials redacted ([`redact_url`](tinyagent_core::redact::url)).
    pub fn new(
        client: reqwest::Client,
        endpoint: impl Into<String>,
        base_url: impl Into<String>,
        model: impl Into<String>,
        settings: HttpSettings,
        max_tokens: Option<u32>,
        protocol: P,
    ) -> Self {
        let endpoint = endpoint.into();
        Self {
            client,
            shown_endpoint: tinyagent_core::redact::url(&endpoint),
            endpoint,
            base_url: tinyagent_core::redact::url(&base_url.into()),
            model: model.into(),
            limits: settings,
            max_tokens,
            protocol,
        }
    }

    /// The endpoint requests are posted to.
    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    /// The model named in errors and logs.
    pub fn model(&self) -> &str {
        &self.model
    }

    /// The HTTP settings calls run within.
    pub fn settings(&self) -> &HttpSettings {
        &self.limits
    }

    /// The protocol.
    pub fn protocol(&self) -> &P {
        &self.protocol
    }

    /// Posts `body`, retrying failures that may pass, until a successful response's headers
    /// arrive; `budget` counts the attempts and holds the call's deadline, shared with the
    /// caller's own retries (a body cut while it was read).
    async fn send(
        &self,
        body: &bytes::Bytes,
        stream: bool,
        budget: &mut Attempts,
    ) -> Result<reqwest::Response, ModelError> {
        let limits = &self.limits;
        loop {
            budget.attempt_started = Instant::now();
            let mut request = self.client.post(&self.endpoint).body(body.clone());
            if stream {
                request = request.header(ACCEPT, "text/event-stream");
            }
            // The model call's trace goes on at the provider (W3C trace context).
            for (name, value) in tinyagent_core::telemetry::trace_headers() {
                request = request.header(name, value);
            }
            let (limit, at) = budget.limit(Limit::FirstByte, limits);
            let (err, wait) = match tokio::time::timeout_at(at, request.send()).await {
                Err(_) => (self.timeout_error(limit, budget, 0), None),
                Ok(Ok(resp)) if resp.status().is_success() => return Ok(resp),
                Ok(Ok(resp)) => {
                    let status = resp.status();
                    let wait = retry_after(resp.headers(), SystemTime::now());
                    let (_, at) = budget.limit(Limit::Idle, limits);
                    let body = tokio::time::timeout_at(at, read_error_body(resp))
                        .await
                        .unwrap_or_default();
                    (self.protocol.status_error(status, &body), wait)
                }
                Ok(Err(e)) => (transport_error(e, &self.shown_endpoint), None),
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
        budget: &mut Attempts,
    ) -> Result<(), ModelError> {
        let limits = &self.limits;
        if !err.is_retryable() || budget.attempt >= limits.max_retries {
            return Err(err);
        }
        let delay = match wait {
            Some(wait) => wait.min(limits.max_retry_after),
            None => backoff(limits, budget.attempt),
        };
        if budget
            .deadline
            .is_some_and(|deadline| Instant::now() + delay >= deadline)
        {
            return Err(err);
        }
        budget.attempt += 1;
        tracing::warn!(
            gen_ai.request.model = %self.model,
            attempt = budget.attempt,
            max_retries = limits.max_retries,
            delay_ms = delay.as_millis() as u64,
            error = %err,
            "model call failed; retrying",
        );
        tokio::time::sleep(delay).await;
        Ok(())
    }

    /// The error of a wait that hit `limit`; `events` events had arrived.
    fn timeout_error(&self, limit: Limit, budget: &Attempts, events: usize) -> ModelError {
        let limits = &self.limits;
        let url = &self.shown_endpoint;
        let tries = match budget.attempt {
            0 => String::new(),
            n => format!("; attempt {} of {}", n + 1, limits.max_retries + 1),
        };
        match limit {
            Limit::FirstByte => ModelError::new(
                ModelErrorKind::TimedOut,
                format!(
                    "no answer from {url} within {} (the first-byte timeout{tries})",
                    secs(limits.first_byte_timeout)
                ),
            ),
            Limit::Idle => ModelError::new(
                ModelErrorKind::TimedOut,
                format!(
                    "the stream from {url} went silent for {} after {events} events (the idle \
                     timeout{tries})",
                    secs(limits.idle_timeout)
                ),
            ),
            Limit::Whole => ModelError::new(
                ModelErrorKind::TimedOut,
                format!(
                    "the call to {url} did not finish within {} (the request timeout, \
                     retries included{tries})",
                    secs(limits.request_timeout.unwrap_or_default())
                ),
            )
            .retryable(false),
        }
    }

    fn unexpected(
        &self,
        status: StatusCode,
        content_type: &str,
        body: &[u8],
        expected: &str,
    ) -> ModelError {
        unexpected_body(
            status,
            content_type,
            body,
            expected,
            &self.base_url,
            &self.protocol.base_url_hint(),
        )
    }

    /// One non-streaming call: posts `body` and parses the JSON answer, retrying what may
    /// pass (a body cut while it was read included).
    pub async fn generate(
        &self,
        body: Vec<u8>,
        req: &ModelRequest,
    ) -> Result<ModelResponse, ModelError> {
        let limits = &self.limits;
        let body = bytes::Bytes::from(body);
        let mut budget = Attempts::new(limits);
        loop {
            let resp = self.send(&body, false, &mut budget).await?;
            let status = resp.status();
            let content_type = content_type(&resp);
            let err = match read_body(resp, limits.max_reply_bytes, &budget, limits).await {
                Ok(bytes) => {
                    let bytes = strip_bom(bytes);
                    let empty = bytes.trim_ascii().is_empty();
                    if empty
                        || !(content_type.contains("json") || bytes.trim_ascii().starts_with(b"{"))
                    {
                        return Err(self.unexpected(
                            status,
                            &content_type,
                            &bytes,
                            "a JSON response",
                        ));
                    }
                    let out = self.protocol.parse_response(&bytes, req)?;
                    tracing::debug!(
                        gen_ai.request.model = %self.model,
                        gen_ai.usage.input_tokens = out.usage.input_tokens,
                        gen_ai.usage.output_tokens = out.usage.output_tokens,
                        "model call",
                    );
                    return Ok(out);
                }
                Err(BodyError::Http(e)) => transport_error(e, &self.shown_endpoint),
                Err(BodyError::TooLarge(n)) => return Err(too_large(n, limits, self.max_tokens)),
                Err(BodyError::TimedOut(limit)) => self.timeout_error(limit, &budget, 0),
            };
            self.before_retry(err, None, &mut budget).await?;
        }
    }

    /// One streaming call: posts `body` (which asks for a stream) and yields the events of
    /// the reply, ending with [`ModelEvent::Done`] or an error.
    pub fn stream<'a>(
        &'a self,
        body: Vec<u8>,
        req: &'a ModelRequest,
    ) -> BoxStream<'a, Result<ModelEvent, ModelError>> {
        let state = StreamState {
            transport: self,
            req,
            body: bytes::Bytes::from(body),
            phase: Phase::Connect,
            pending: VecDeque::new(),
            decoder: P::Decoder::default(),
            budget: Attempts::new(&self.limits),
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

struct StreamState<'a, P: Protocol> {
    transport: &'a Transport<P>,
    req: &'a ModelRequest,
    body: bytes::Bytes,
    phase: Phase<'a>,
    pending: VecDeque<Result<ModelEvent, ModelError>>,
    decoder: P::Decoder,
    budget: Attempts,
    /// Events of the current attempt went out to the consumer.
    shown: bool,
    /// Why the reply restarts, when a retry follows events already shown.
    restart: Option<String>,
}

impl<P: Protocol> StreamState<'_, P> {
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
            let item = match self.phase {
                Phase::Over => return None,
                Phase::Connect => self.connect().await,
                Phase::Reading(_) => self.read().await,
            };
            if item.is_some() {
                return item;
            }
        }
    }

    /// Posts the request (with its retries) and starts reading the answer: an event stream,
    /// or an answer in one piece. `None`: go on (events may be queued).
    async fn connect(&mut self) -> Option<Result<ModelEvent, ModelError>> {
        let transport = self.transport;
        let limits = &transport.limits;
        let resp = match transport.send(&self.body, true, &mut self.budget).await {
            Ok(resp) => resp,
            Err(e) => return Some(self.fail(e)),
        };
        if let Some(reason) = self.restart.take() {
            self.pending.push_back(Ok(ModelEvent::Restart { reason }));
        }
        if content_type(&resp).contains("event-stream") {
            let bytes = guarded(
                resp,
                self.budget.limit(Limit::FirstByte, limits),
                limits.idle_timeout,
                self.budget.deadline,
                limits.max_reply_bytes,
            );
            self.phase = Phase::Reading(Box::pin(without_bom(bytes).eventsource()));
            return None;
        }
        self.read_whole(resp).await
    }

    /// An answer that is not an event stream: a server that ignores the request for a stream
    /// and answers in one piece, events under another content type, or something else.
    async fn read_whole(
        &mut self,
        resp: reqwest::Response,
    ) -> Option<Result<ModelEvent, ModelError>> {
        let transport = self.transport;
        let limits = &transport.limits;
        let status = resp.status();
        let content_type = content_type(&resp);
        let bytes = match read_body(resp, limits.max_reply_bytes, &self.budget, limits).await {
            Ok(bytes) => strip_bom(bytes),
            Err(e) => {
                let err = self.body_error(e);
                return self.retry(err).await;
            }
        };
        let start = bytes.trim_ascii_start();
        if start.starts_with(b"{") {
            self.phase = Phase::Over;
            match transport.protocol.parse_response(&bytes, self.req) {
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
            return Some(self.fail(transport.unexpected(
                status,
                &content_type,
                &bytes,
                "an event stream",
            )));
        }
        None
    }

    /// Reads the next server-sent event and hands it to the decoder. `None`: go on (events
    /// may be queued).
    async fn read(&mut self) -> Option<Result<ModelEvent, ModelError>> {
        let Phase::Reading(events) = &mut self.phase else {
            return None;
        };
        match events.next().await {
            Some(Ok(event)) => {
                self.decode(&event).await;
                None
            }
            Some(Err(e)) if self.decoder.has_finished() => {
                // The reply was complete; only the end of the stream was lost.
                tracing::debug!("the event stream failed after the reply finished: {e}");
                Some(self.done())
            }
            Some(Err(e)) => {
                let err = match e {
                    eventsource_stream::EventStreamError::Transport(e) => self.body_error(e),
                    other => ModelError::invalid_response(format!(
                        "the event stream could not be read: {other}"
                    )),
                };
                self.retry(err).await
            }
            None => {
                if self.decoder.has_finished() {
                    // Servers that do not say the stream is over.
                    return Some(self.done());
                }
                let err = if self.decoder.events() == 0 {
                    ModelError::invalid_response(format!(
                        "the event stream from {} ended before its first event; check the base \
                         URL and the server's logs",
                        self.transport.base_url
                    ))
                } else {
                    self.decoder.truncation_error("ended")
                };
                self.retry(err).await
            }
        }
    }

    /// Hands one event to the decoder, queueing what it yields (and the end, or the error
    /// that ends the stream when it may not pass).
    async fn decode(&mut self, event: &eventsource_stream::Event) {
        let data = event.data.trim();
        if data.is_empty() {
            return;
        }
        let mut out = Vec::new();
        let res = self
            .decoder
            .push(event.event.trim(), data, self.req, &mut out);
        self.pending.extend(out.into_iter().map(Ok));
        match res {
            Ok(Flow::Continue) => {}
            Ok(Flow::Done) => {
                let done = self.done();
                self.pending.push_back(done);
            }
            Err(e) => {
                // An error event: retried when it may pass.
                if let Some(item) = self.retry(e).await {
                    self.pending.push_back(item);
                }
            }
        }
    }

    /// The error of a body that could not be read.
    fn body_error(&self, err: BodyError) -> ModelError {
        let transport = self.transport;
        match err {
            BodyError::Http(e) => {
                let cause = transport_error(e, &transport.shown_endpoint);
                self.decoder.truncation_error(&format!("failed ({cause})"))
            }
            BodyError::TooLarge(n) => too_large(n, &transport.limits, transport.max_tokens),
            BodyError::TimedOut(limit) => {
                transport.timeout_error(limit, &self.budget, self.decoder.events())
            }
        }
    }

    /// Starts the request again after `err` when it may pass and the budget allows (`None`:
    /// the caller goes on with the next attempt); otherwise ends the stream with the error.
    async fn retry(&mut self, err: ModelError) -> Option<Result<ModelEvent, ModelError>> {
        let shown = self.shown;
        let reason = err.message().to_owned();
        match self
            .transport
            .before_retry(err, None, &mut self.budget)
            .await
        {
            Ok(()) => {
                // What was queued but not shown is dropped with the attempt.
                self.pending.clear();
                self.decoder = P::Decoder::default();
                self.phase = Phase::Connect;
                if shown {
                    self.restart = Some(format!(
                        "{reason}; retrying (attempt {} of {}, the reply starts again)",
                        self.budget.attempt + 1,
                        self.transport.limits.max_retries + 1
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
        let decoder = std::mem::take(&mut self.decoder);
        let response = decoder.finish()?;
        tracing::debug!(
            gen_ai.request.model = %self.transport.model,
            gen_ai.usage.input_tokens = response.usage.input_tokens,
            gen_ai.usage.output_tokens = response.usage.output_tokens,
            "model call stream",
        );
        Ok(ModelEvent::Done(response))
    }
}
