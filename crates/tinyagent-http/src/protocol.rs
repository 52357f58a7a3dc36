//! What a provider implements for the shared [`Transport`](crate::Transport): its
//! [`Protocol`] (status errors, whole responses) and the [`Decoder`] of its server-sent
//! events.

use reqwest::StatusCode;
use tinyagent_core::model::ModelEvent;
use tinyagent_core::{ModelError, ModelRequest, ModelResponse};

/// What a decoder makes of one event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flow {
    /// More events follow.
    Continue,
    /// The server said the stream is over (`[DONE]`, `message_stop`).
    Done,
}

/// Turns one streamed reply's server-sent events into [`ModelEvent`]s and, at the end, the
/// complete [`ModelResponse`]. A fresh decoder (its [`Default`]) is made for every attempt. [`Protocol`]'s
/// example implements both.
pub trait Decoder: Send {
    /// Reads one event (its `event:` name, empty when there is none, and its `data`),
    /// pushing the events it yields. An error ends the attempt; it is retried when it
    /// [may pass](ModelError::is_retryable) (an `error` event saying the server is
    /// overloaded).
    fn push(
        &mut self,
        event: &str,
        data: &str,
        req: &ModelRequest,
        out: &mut Vec<ModelEvent>,
    ) -> Result<Flow, ModelError>;

    /// How many events were read.
    fn events(&self) -> usize;

    /// Whether the reply is complete (the server said why it stopped), so a stream that
    /// breaks afterwards lost nothing.
    fn has_finished(&self) -> bool;

    /// The error of a stream that ended or failed (`why`) before the reply was complete,
    /// naming what was cut; retryable.
    fn truncation_error(&self, why: &str) -> ModelError;

    /// The complete response.
    fn finish(self) -> Result<ModelResponse, ModelError>;
}

/// A provider's wire format, as far as a call needs it.
///
/// A whole (toy) provider: its server streams the reply's text as `data:` events and ends
/// with `data: [DONE]`. The [`Transport`](crate::Transport) does the rest: retries, timeouts,
/// size limits, the errors of a 200 that is not the API.
///
/// ```
/// use futures::StreamExt;
/// use reqwest::StatusCode;
/// use tinyagent::{Message, ModelError, ModelRequest, ModelResponse, Usage, model::{FinishReason, ModelErrorKind, ModelEvent}};
/// use tinyagent_http::{Decoder, Flow, HttpSettings, Protocol, Transport};
///
/// #[derive(Debug)]
/// struct Plain;
///
/// #[derive(Default)]
/// struct PlainDecoder { text: String, events: usize, done: bool }
///
/// impl Decoder for PlainDecoder {
///     fn push(&mut self, _event: &str, data: &str, _req: &ModelRequest, out: &mut Vec<ModelEvent>)
///         -> Result<Flow, ModelError>
///     {
///         self.events += 1;
///         if data == "[DONE]" {
///             self.done = true;
///             return Ok(Flow::Done);
///         }
///         self.text.push_str(data);
///         out.push(ModelEvent::TextDelta(data.to_owned()));
///         Ok(Flow::Continue)
///     }
///     fn events(&self) -> usize { self.events }
///     fn has_finished(&self) -> bool { self.done }
///     fn truncation_error(&self, why: &str) -> ModelError {
///         ModelError::new(ModelErrorKind::Unavailable, format!("the reply was cut: {why}"))
///     }
///     fn finish(self) -> Result<ModelResponse, ModelError> {
///         Ok(ModelResponse::new(Message::assistant(self.text), Usage::default(), FinishReason::Stop))
///     }
/// }
///
/// impl Protocol for Plain {
///     type Decoder = PlainDecoder;
///     fn status_error(&self, status: StatusCode, body: &[u8]) -> ModelError {
///         ModelError::new(ModelErrorKind::Unavailable, format!("{status}: {}", String::from_utf8_lossy(body)))
///     }
///     fn parse_response(&self, body: &[u8], _req: &ModelRequest) -> Result<ModelResponse, ModelError> {
///         let text = String::from_utf8_lossy(body).into_owned();
///         Ok(ModelResponse::new(Message::assistant(text), Usage::default(), FinishReason::Stop))
///     }
///     fn base_url_hint(&self) -> String { "the root of the plain-text API".to_owned() }
/// }
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// use wiremock::{Mock, MockServer, ResponseTemplate, matchers::method};
/// let server = MockServer::start().await;
/// Mock::given(method("POST"))
///     .respond_with(ResponseTemplate::new(200)
///         .insert_header("content-type", "text/event-stream")
///         .set_body_string("data: Hel\n\ndata: lo\n\ndata: [DONE]\n\n"))
///     .mount(&server)
///     .await;
///
/// let transport = Transport::new(
///     reqwest::Client::new(), format!("{}/generate", server.uri()), server.uri(), "toy",
///     HttpSettings::default(), None, Plain,
/// );
/// let req = ModelRequest::new(vec![Message::user("hi")]);
/// let events: Vec<ModelEvent> = transport.stream(b"{}".to_vec(), &req)
///     .map(|e| e.expect("no error"))
///     .collect()
///     .await;
/// let pieces: Vec<&str> = events.iter()
///     .filter_map(|e| if let ModelEvent::TextDelta(t) = e { Some(t.as_str()) } else { None })
///     .collect();
/// assert_eq!(pieces, ["Hel", "lo"], "{events:?}");
/// match events.last() {
///     Some(ModelEvent::Done(response)) => assert_eq!(response.message.text(), "Hello"),
///     other => panic!("{other:?}"),
/// }
/// # }
/// ```
pub trait Protocol: Send + Sync {
    /// The decoder of a streamed reply; a fresh one (its [`Default`]) reads each attempt.
    type Decoder: Decoder + Default;

    /// The error of a response with a failing status (`body`: at most 64 KiB of it).
    fn status_error(&self, status: StatusCode, body: &[u8]) -> ModelError;

    /// A complete (non-streamed) response body.
    fn parse_response(&self, body: &[u8], req: &ModelRequest) -> Result<ModelResponse, ModelError>;

    /// What the base URL must be, for the error of a 200 that is not the API ("it must be
    /// the root of …").
    fn base_url_hint(&self) -> String;
}
