//! The error of a response with a failing status, worded alike for every provider
//! ([`status_error`]) unless the provider has words of its own, and the description of an
//! API's error body ([`describe`]).

use reqwest::StatusCode;
use tinyagent_core::{ModelError, model::ModelErrorKind};

use crate::ProviderInfo;

/// What came back with a failing status, and what was asked.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Failure<'a> {
    /// The status.
    pub status: StatusCode,
    /// The API's error, described ([`describe`]), or the start of the body.
    pub detail: String,
    /// The model asked for.
    pub model: &'a str,
    /// Whether a key was sent.
    pub key_sent: bool,
    /// Whether the API says the conversation is too long for the model.
    pub too_long: bool,
}

impl<'a> Failure<'a> {
    /// A failing `status`, with `detail`, for `model`, with `api_key` (an empty one was not
    /// sent).
    pub fn new(status: StatusCode, detail: String, model: &'a str, api_key: Option<&str>) -> Self {
        Self {
            status,
            detail,
            model,
            key_sent: api_key.is_some_and(|k| !k.is_empty()),
            too_long: false,
        }
    }

    /// Says whether the API found the conversation too long for the model.
    #[must_use]
    pub fn too_long(mut self, too_long: bool) -> Self {
        self.too_long = too_long;
        self
    }
}

/// The error of `failure`: `HTTP {status}: {what}: {detail}`, where `what` and the error's
/// kind are `own` (the provider's words for this status) or else the words every API
/// shares: a key refused or missing (401, naming the key's variable of `info`), a key that
/// may not do this (403), a wrong model or base URL (404, naming their variables), a timeout
/// (408, 504), a rate limit (429), a failing server (5xx), a conversation too long, a
/// rejected request (with [`ProviderInfo::rejected_hint`]).
pub fn status_error(
    info: &ProviderInfo,
    failure: &Failure<'_>,
    own: Option<(ModelErrorKind, String)>,
) -> ModelError {
    let [key_var, base_url_var, model_var] = info.env;
    let (kind, what) = own.unwrap_or_else(|| match failure.status.as_u16() {
        401 if failure.key_sent => (
            ModelErrorKind::Authentication,
            format!("the API key was refused (is {key_var} wrong or expired?)"),
        ),
        401 => (
            ModelErrorKind::Authentication,
            format!("the API wants a key and none was sent (set {key_var})"),
        ),
        403 => (
            ModelErrorKind::Authentication,
            "the API key may not use this model or endpoint".to_owned(),
        ),
        404 => (
            ModelErrorKind::InvalidRequest,
            format!(
                "not found; check the model name {:?} ({model_var}) and the base URL \
                 ({base_url_var}, such as {})",
                failure.model, info.default_base_url
            ),
        ),
        408 | 504 => (ModelErrorKind::TimedOut, "the API timed out".to_owned()),
        429 => (
            ModelErrorKind::RateLimited,
            "rate limited (too many requests or tokens per minute)".to_owned(),
        ),
        s if s >= 500 => (ModelErrorKind::Unavailable, "the API failed".to_owned()),
        _ if failure.too_long => (
            ModelErrorKind::ContextLengthExceeded,
            "the conversation is too long for the model".to_owned(),
        ),
        _ if info.rejected_hint.is_empty() => (
            ModelErrorKind::InvalidRequest,
            "the request was rejected".to_owned(),
        ),
        _ => (
            ModelErrorKind::InvalidRequest,
            format!("the request was rejected ({})", info.rejected_hint),
        ),
    });
    let status = failure.status;
    ModelError::new(kind, format!("HTTP {status}: {what}: {}", failure.detail))
}

/// An API's error body read by `parse` and described by `describe`, with that description;
/// when `parse` finds no error in it, the default with the start of the body.
pub fn error_body<E: Default>(
    body: &[u8],
    parse: impl FnOnce(&[u8]) -> Option<E>,
    describe: impl FnOnce(&E) -> String,
) -> (E, String) {
    match parse(body) {
        Some(error) => {
            let detail = describe(&error);
            (error, detail)
        }
        None => (E::default(), crate::snippet(body)),
    }
}

/// An API error's message with what the body adds to it in parentheses (its type, code,
/// request id …): `message (type x, code y)`.
pub fn describe(message: Option<&str>, notes: impl IntoIterator<Item = Option<String>>) -> String {
    let mut out = message.unwrap_or_default().to_owned();
    let notes: Vec<String> = notes.into_iter().flatten().collect();
    if !notes.is_empty() {
        out.push_str(&format!(" ({})", notes.join(", ")));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const INFO: ProviderInfo = ProviderInfo::new(["K", "B", "M"], "set K", "https://x", "ua");

    fn error(status: u16, key: Option<&str>, too_long: bool) -> ModelError {
        let status = StatusCode::from_u16(status).unwrap();
        let failure = Failure::new(status, "d".to_owned(), "m", key).too_long(too_long);
        status_error(&INFO, &failure, None)
    }

    #[test]
    fn shared_words() {
        let e = error(401, Some(""), false);
        assert_eq!(
            e.message(),
            "HTTP 401 Unauthorized: the API wants a key and none was sent (set K): d"
        );
        assert!(
            error(401, Some("k"), false)
                .message()
                .contains("is K wrong")
        );
        assert!(error(404, None, false).message().contains("\"m\" (M)"));
        assert!(
            error(404, None, false)
                .message()
                .contains("(B, such as https://x)")
        );
        assert_eq!(
            error(400, None, true).kind(),
            ModelErrorKind::ContextLengthExceeded
        );
        assert_eq!(
            error(400, None, false).kind(),
            ModelErrorKind::InvalidRequest
        );
        assert!(error(503, None, false).is_retryable());
        assert_eq!(error(504, None, false).kind(), ModelErrorKind::TimedOut);
        assert_eq!(
            describe(Some("m"), [None, Some("a".into()), Some("b".into())]),
            "m (a, b)"
        );
        assert_eq!(describe(None, [None]), "");
    }
}
