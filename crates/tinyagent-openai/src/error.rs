//! Turning HTTP failures and API error bodies into clear [`ModelError`]s.

use reqwest::StatusCode;
use serde_json::Value;
use tinyagent::{ModelError, model::ModelErrorKind};
use tinyagent_http::{Failure, bounded, describe, error_body, field_text, snippet};

/// The parts of an OpenAI error body: `{"error": {"message", "type", "param", "code"}}`
/// (also accepted: `{"error": "text"}`, `{"message": "text"}`, `{"detail": "text"}`).
#[derive(Debug, Default)]
pub(crate) struct ApiError {
    pub message: Option<String>,
    pub kind: Option<String>,
    pub code: Option<String>,
    pub param: Option<String>,
}

impl ApiError {
    fn from_error_value(err: &Value) -> Self {
        match err {
            Value::String(s) => Self {
                message: Some(bounded(s)),
                ..Self::default()
            },
            Value::Object(_) => Self {
                message: field_text(err.get("message")),
                kind: field_text(err.get("type")),
                code: field_text(err.get("code")),
                param: field_text(err.get("param")),
            },
            _ => Self::default(),
        }
    }

    fn parse(body: &[u8]) -> Option<Self> {
        let value: Value = serde_json::from_slice(body).ok()?;
        if let Some(err) = value.get("error") {
            let parsed = Self::from_error_value(err);
            return parsed.message.is_some().then_some(parsed);
        }
        let message =
            field_text(value.get("message")).or_else(|| field_text(value.get("detail")))?;
        Some(Self {
            message: Some(message),
            ..Self::default()
        })
    }

    fn describe(&self) -> String {
        describe(
            self.message.as_deref(),
            [
                self.kind.as_ref().map(|kind| format!("type {kind}")),
                self.code.as_ref().map(|code| format!("code {code}")),
                self.param.as_ref().map(|param| format!("param {param}")),
            ],
        )
    }

    fn is(&self, what: &str) -> bool {
        self.code.as_deref() == Some(what) || self.kind.as_deref() == Some(what)
    }
}

/// The error for a response with a failing status: the words every API shares
/// ([`tinyagent_http::status_error`]), with OpenAI's own for a 404 and an account out of
/// quota.
pub(crate) fn status_error(
    model: &str,
    api_key: Option<&str>,
    status: StatusCode,
    body: &[u8],
) -> ModelError {
    let (api, detail) = error_body(body, ApiError::parse, ApiError::describe);
    let failure =
        Failure::new(status, detail, model, api_key).too_long(api.is("context_length_exceeded"));
    let own = match status.as_u16() {
        404 => Some((
            ModelErrorKind::InvalidRequest,
            format!(
                "not found; check the base URL (OPENAI_BASE_URL, usually ending in /v1) and the \
                 model name {model:?} (OPENAI_MODEL)",
            ),
        )),
        429 if api.is("insufficient_quota") => Some((
            ModelErrorKind::RateLimited,
            "out of quota: the account has no credit left for this API (waiting does not help; \
             check its plan and billing)"
                .to_owned(),
        )),
        _ => None,
    };
    let mut err = tinyagent_http::status_error(&crate::info::CHAT, &failure, own);
    if api.is("insufficient_quota") {
        // Out of credit: waiting does not help.
        err = err.retryable(false);
    }
    if status.as_u16() == 409 {
        err = err.retryable(true);
    }
    err
}

/// The error for an `error` object inside a 200 body or a stream chunk.
pub(crate) fn error_in_body(err: &Value) -> ModelError {
    let api = ApiError::from_error_value(err);
    let detail = if api.message.is_some() {
        api.describe()
    } else {
        snippet(err.to_string().as_bytes())
    };
    let kind = if api.is("context_length_exceeded") {
        ModelErrorKind::ContextLengthExceeded
    } else if api.is("rate_limit_exceeded") {
        ModelErrorKind::RateLimited
    } else if api.is("server_error") {
        ModelErrorKind::Unavailable
    } else {
        ModelErrorKind::Other
    };
    ModelError::new(kind, format!("the server reported an error: {detail}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_errors() {
        let keyed = |status, body: &[u8]| status_error("m", Some("k"), status, body);
        let keyless = |status, body: &[u8]| status_error("m", None, status, body);
        let body = br#"{"error":{"message":"Incorrect API key provided: sk-xx.","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}"#;
        let e = keyed(StatusCode::UNAUTHORIZED, body);
        assert_eq!(e.kind(), ModelErrorKind::Authentication);
        assert!(e.message().contains("OPENAI_API_KEY"), "{e}");
        assert!(e.message().contains("Incorrect API key"), "{e}");
        let e = keyless(StatusCode::UNAUTHORIZED, b"");
        assert!(e.message().contains("none was sent"), "{e}");
        let e = keyless(StatusCode::BAD_GATEWAY, b"<html>bad gateway</html>");
        assert_eq!(e.kind(), ModelErrorKind::Unavailable);
        assert!(e.is_retryable());
        assert!(e.message().contains("<html>bad gateway"), "{e}");
        let quota = br#"{"error":{"message":"You exceeded your current quota","type":"insufficient_quota","param":null,"code":"insufficient_quota"}}"#;
        let e = keyed(StatusCode::TOO_MANY_REQUESTS, quota);
        assert_eq!(e.kind(), ModelErrorKind::RateLimited);
        assert!(!e.is_retryable());
        let ctx = br#"{"error":{"message":"too long","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}"#;
        let e = keyed(StatusCode::BAD_REQUEST, ctx);
        assert_eq!(e.kind(), ModelErrorKind::ContextLengthExceeded);
        let e = keyed(StatusCode::BAD_REQUEST, br#"{"detail":"nope"}"#);
        assert_eq!(e.kind(), ModelErrorKind::InvalidRequest);
        assert!(e.message().contains("nope"));
    }
}
