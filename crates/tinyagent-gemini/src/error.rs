//! Turning HTTP failures and the API's error bodies into clear [`ModelError`]s.
//!
//! The API's errors look like `{"error": {"code": 400, "message": "…", "status":
//! "INVALID_ARGUMENT", "details": [{"reason": "API_KEY_INVALID", …}]}}`.

use reqwest::StatusCode;
use serde_json::Value;
use tinyagent::{ModelError, model::ModelErrorKind};
use tinyagent_http::{field_text, snippet};

use crate::config::{DEFAULT_BASE_URL, ENV_API_KEY, ENV_BASE_URL, ENV_MODEL};

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
    let mut out = message.unwrap_or_default();
    let extra: Vec<String> = [status, reason].into_iter().flatten().collect();
    if !extra.is_empty() {
        out.push_str(&format!(" ({})", extra.join(", ")));
    }
    out
}

/// The error for a response with a failing status.
pub(crate) fn status_error(status: StatusCode, body: &[u8], model: &str) -> ModelError {
    let err = serde_json::from_slice::<Value>(body)
        .ok()
        .and_then(|v| v.get("error").cloned())
        .filter(|e| e.get("message").is_some());
    let detail = err.as_ref().map_or_else(|| snippet(body), describe);
    let (_, _, reason) = err.as_ref().map(parts).unwrap_or_default();
    let head = format!("HTTP {status}");
    let key_problem =
        reason.as_deref() == Some("API_KEY_INVALID") || detail.contains("API key not valid");
    let (kind, message) = match status.as_u16() {
        400 if key_problem => (
            ModelErrorKind::Authentication,
            format!("{head}: the API key was refused (is {ENV_API_KEY} wrong?): {detail}"),
        ),
        401 | 403 => (
            ModelErrorKind::Authentication,
            format!(
                "{head}: the API key was refused or may not use this model (check \
                 {ENV_API_KEY} and the key's project): {detail}"
            ),
        ),
        404 => (
            ModelErrorKind::InvalidRequest,
            format!(
                "{head}: not found; check the model name {model:?} ({ENV_MODEL}) and the base \
                 URL ({ENV_BASE_URL}, such as {DEFAULT_BASE_URL}): {detail}"
            ),
        ),
        429 => (
            ModelErrorKind::RateLimited,
            format!("{head}: rate limited or out of quota (RESOURCE_EXHAUSTED): {detail}"),
        ),
        504 => (
            ModelErrorKind::TimedOut,
            format!("{head}: the API timed out: {detail}"),
        ),
        s if s >= 500 => (
            ModelErrorKind::Unavailable,
            format!("{head}: the API failed: {detail}"),
        ),
        _ if detail.contains("exceeds the maximum number of tokens") => (
            ModelErrorKind::ContextLengthExceeded,
            format!("{head}: the conversation is too long for the model: {detail}"),
        ),
        _ => (
            ModelErrorKind::InvalidRequest,
            format!("{head}: the request was rejected (a bad parameter or tool schema): {detail}"),
        ),
    };
    ModelError::new(kind, message)
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
