//! Turning HTTP failures and the API's error bodies into clear [`ModelError`]s.
//!
//! The API's errors look like `{"error": {"code": 400, "message": "…", "status":
//! "INVALID_ARGUMENT", "details": [{"reason": "API_KEY_INVALID", …}]}}`.

use reqwest::StatusCode;
use serde_json::Value;
use tinyagent::{ModelError, model::ModelErrorKind};
use tinyagent_http::{Failure, ProviderSettings, error_body, field_text};

use crate::info::ENV_API_KEY;

/// The message, status and first reason of an error object.
fn parts(err: &Value) -> (Option<String>, Option<String>, Option<String>) {
    let reason = err
        .get("details")
        .and_then(Value::as_array)
        .and_then(|d| d.iter().find_map(|d| field_text(d.get("reason"))));
    (
        field_text(err.get("message")),
        field_text(err.get("status")),
        reason,
    )
}

fn describe(err: &Value) -> String {
    let (message, status, reason) = parts(err);
    tinyagent_http::describe(message.as_deref(), [status, reason])
}

/// The error object of a body, when it has a message.
fn parse(body: &[u8]) -> Option<Value> {
    let value = serde_json::from_slice::<Value>(body).ok()?;
    value
        .get("error")
        .filter(|e| e.get("message").is_some())
        .cloned()
}

/// The error for a response with a failing status: the words every API shares
/// ([`tinyagent_http::status_error`]), with Gemini's own for a key refused (its 400, 401 and
/// 403) and a rate limit (a quota, too).
pub(crate) fn status_error(
    config: &ProviderSettings,
    status: StatusCode,
    body: &[u8],
) -> ModelError {
    let (err, detail) = error_body(body, parse, describe);
    let (_, _, reason) = parts(&err);
    let key_problem =
        reason.as_deref() == Some("API_KEY_INVALID") || detail.contains("API key not valid");
    let too_long = detail.contains("exceeds the maximum number of tokens");
    let failure =
        Failure::new(status, detail, &config.model, config.api_key.as_deref()).too_long(too_long);
    let own = match status.as_u16() {
        400 if key_problem => Some((
            ModelErrorKind::Authentication,
            format!("the API key was refused (is {ENV_API_KEY} wrong?)"),
        )),
        401 | 403 => Some((
            ModelErrorKind::Authentication,
            format!(
                "the API key was refused or may not use this model (check {ENV_API_KEY} and the \
                 key's project)"
            ),
        )),
        429 => Some((
            ModelErrorKind::RateLimited,
            "rate limited or out of quota (RESOURCE_EXHAUSTED)".to_owned(),
        )),
        _ => None,
    };
    tinyagent_http::status_error(&crate::info::INFO, &failure, own)
}

/// The error for an `error` object in a 200 body or a stream event.
pub(crate) fn error_in_body(err: &Value) -> ModelError {
    let (_, status, _) = parts(err);
    let kind = match status.as_deref() {
        Some("UNAVAILABLE" | "INTERNAL") => ModelErrorKind::Unavailable,
        Some("RESOURCE_EXHAUSTED") => ModelErrorKind::RateLimited,
        Some("DEADLINE_EXCEEDED") => ModelErrorKind::TimedOut,
        Some("INVALID_ARGUMENT" | "NOT_FOUND" | "FAILED_PRECONDITION") => {
            ModelErrorKind::InvalidRequest
        }
        Some("PERMISSION_DENIED" | "UNAUTHENTICATED") => ModelErrorKind::Authentication,
        _ => ModelErrorKind::Other,
    };
    ModelError::new(
        kind,
        format!("the API reported an error: {}", describe(err)),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::GeminiConfig;

    fn status_error(status: StatusCode, body: &[u8], model: &str) -> ModelError {
        super::status_error(&GeminiConfig::new(model), status, body)
    }

    #[test]
    fn error_bodies() {
        let bad_key = br#"{"error":{"code":400,"message":"API key not valid. Please pass a valid API key.","status":"INVALID_ARGUMENT","details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"API_KEY_INVALID","domain":"googleapis.com"}]}}"#;
        let e = status_error(StatusCode::BAD_REQUEST, bad_key, "m");
        assert_eq!(e.kind(), ModelErrorKind::Authentication);
        assert_eq!(
            e.message(),
            "HTTP 400 Bad Request: the API key was refused (is GEMINI_API_KEY wrong?): API key \
             not valid. Please pass a valid API key. (INVALID_ARGUMENT, API_KEY_INVALID)"
        );
        let e = status_error(StatusCode::SERVICE_UNAVAILABLE, b"<html>", "m");
        assert!(e.is_retryable());
        let e = error_in_body(
            &serde_json::json!({"code": 503, "message": "The model is overloaded.", "status": "UNAVAILABLE"}),
        );
        assert!(e.is_retryable());
        assert_eq!(
            e.message(),
            "the API reported an error: The model is overloaded. (UNAVAILABLE)"
        );
    }
}
