//! Errors that name what came back: bounded quotes of bodies ([`snippet`], [`bounded`]), the
//! server's `Retry-After`, transport failures, a 200 that is not the API, a reply too large.

use std::time::{Duration, SystemTime};

use reqwest::StatusCode;
use reqwest::header::HeaderMap;
use tinyagent_core::{ModelError, model::ModelErrorKind};

use crate::HttpSettings;

/// The most characters of one field of an error body kept in an error: a server's message
/// is quoted, not a whole page of it.
const MAX_FIELD_CHARS: usize = 1000;

/// `text` cut to 1000 characters, saying how much was left out.
pub fn bounded(text: &str) -> String {
    match text.char_indices().nth(MAX_FIELD_CHARS) {
        None => text.to_owned(),
        Some((end, _)) => format!("{}… ({} more bytes)", &text[..end], text.len() - end),
    }
}

/// A field of an error body as text, [bounded]: a non-empty string, or a number.
pub fn field_text(v: Option<&serde_json::Value>) -> Option<String> {
    match v? {
        serde_json::Value::String(s) if !s.is_empty() => Some(bounded(s)),
        serde_json::Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// The start of a body, for error messages: at most 300 characters, lossy UTF-8.
pub fn snippet(body: &[u8]) -> String {
    let text = String::from_utf8_lossy(body);
    let text = text.trim();
    if text.is_empty() {
        return "(empty body)".to_owned();
    }
    match text.char_indices().nth(300) {
        Some((i, _)) => format!("{}…", &text[..i]),
        None => text.to_owned(),
    }
}

/// How long the server asks to wait: `retry-after-ms` (OpenAI's), or `Retry-After` in
/// seconds or as an HTTP date.
pub fn retry_after(headers: &HeaderMap, now: SystemTime) -> Option<Duration> {
    if let Some(ms) = headers
        .get("retry-after-ms")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<f64>().ok())
        .filter(|ms| ms.is_finite() && *ms >= 0.0)
    {
        return Some(Duration::from_secs_f64((ms / 1000.0).min(86_400.0)));
    }
    let value = headers.get("retry-after")?.to_str().ok()?.trim();
    if let Ok(secs) = value.parse::<f64>() {
        if secs.is_finite() && secs >= 0.0 {
            return Some(Duration::from_secs_f64(secs.min(86_400.0)));
        }
        return None;
    }
    let at = httpdate::parse_http_date(value).ok()?;
    Some(at.duration_since(now).unwrap_or(Duration::ZERO))
}

/// The error for a transport failure talking to `url`, with the chain of causes.
pub fn transport_error(err: reqwest::Error, url: &str) -> ModelError {
    let (kind, what) = if err.is_timeout() {
        (ModelErrorKind::TimedOut, "timed out talking to")
    } else if err.is_connect() {
        (ModelErrorKind::Unavailable, "could not connect to")
    } else if err.is_body() || err.is_decode() {
        (
            ModelErrorKind::Unavailable,
            "the connection failed while reading from",
        )
    } else if err.is_builder() {
        (
            ModelErrorKind::InvalidRequest,
            "could not build a request for",
        )
    } else {
        (ModelErrorKind::Unavailable, "the request failed for")
    };
    let mut chain = String::new();
    let mut source: Option<&dyn std::error::Error> = std::error::Error::source(&err);
    while let Some(s) = source {
        chain.push_str(": ");
        chain.push_str(&s.to_string());
        source = s.source();
    }
    // Credentials in the URL never reach the message, also where a cause quotes the URL.
    let text = tinyagent_core::redact::url(&format!("{what} {url}{chain}"));
    ModelError::new(kind, text).with_source(err.without_url())
}

/// The error for a 200 response whose body is not what was asked for (`expected`): an HTML
/// page (a wrong base URL behind a web server), an empty body, plain text. `hint` says what
/// the base URL must be.
pub fn unexpected_body(
    status: StatusCode,
    content_type: &str,
    body: &[u8],
    expected: &str,
    base_url: &str,
    hint: &str,
) -> ModelError {
    let content_type = if content_type.is_empty() {
        "no content type"
    } else {
        content_type
    };
    let what = if body.iter().all(u8::is_ascii_whitespace) {
        format!("an empty body ({content_type})")
    } else {
        format!("{content_type} instead of {expected}: {}", snippet(body))
    };
    let base_url = tinyagent_core::redact::url(base_url);
    ModelError::invalid_response(format!(
        "HTTP {status} from {base_url} with {what}; check the base URL: {hint}"
    ))
}

/// The error of a reply that grew past [`HttpSettings::max_reply_bytes`] (`read` bytes so far).
pub fn too_large(read: usize, settings: &HttpSettings, max_tokens: Option<u32>) -> ModelError {
    let limit = match max_tokens {
        Some(n) => format!("the token limit sent, max_tokens {n}"),
        None => "the token limit (none was sent)".to_owned(),
    };
    ModelError::invalid_response(format!(
        "the reply grew past {read} bytes without finishing (the limit is max_reply_bytes = {}); \
         the server may be ignoring {limit}",
        settings.max_reply_bytes
    ))
}

/// `body` read as JSON; an error naming `what` (`"the response"`, `"a stream event"`), the
/// parser's complaint and the start of the body when it is not.
pub fn parse_json(body: &[u8], what: &str) -> Result<serde_json::Value, ModelError> {
    serde_json::from_slice(body).map_err(|e| {
        ModelError::invalid_response(format!(
            "{what} is not JSON ({}): {}",
            bounded(&e.to_string()),
            snippet(body)
        ))
    })
}

/// `value`, a JSON object, read into `T`; an error naming `what`, the mismatch and the start
/// of `body` (the text `value` came from) when it does not fit. Anything but an object is
/// refused (serde would read an array into a struct's fields in order).
pub fn parse_shape<T: serde::de::DeserializeOwned>(
    value: serde_json::Value,
    what: &str,
    body: &[u8],
) -> Result<T, ModelError> {
    if !value.is_object() {
        return Err(ModelError::invalid_response(format!(
            "{what} has an unexpected shape (not a JSON object): {}",
            snippet(body)
        )));
    }
    serde_json::from_value(value).map_err(|e| {
        ModelError::invalid_response(format!(
            "{what} has an unexpected shape ({}): {}",
            bounded(&e.to_string()),
            snippet(body)
        ))
    })
}

/// `body` serialized, or an error saying it could not be.
pub fn serialize(body: &serde_json::Value) -> Result<Vec<u8>, ModelError> {
    serde_json::to_vec(body)
        .map_err(|e| ModelError::other(format!("could not serialize the request: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::HeaderValue;

    #[test]
    fn retry_after_forms() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
        let mut h = HeaderMap::new();
        assert_eq!(retry_after(&h, now), None);
        h.insert("retry-after", HeaderValue::from_static("3"));
        assert_eq!(retry_after(&h, now), Some(Duration::from_secs(3)));
        let later = httpdate::fmt_http_date(now + Duration::from_secs(7));
        h.insert("retry-after", HeaderValue::from_str(&later).unwrap());
        assert_eq!(retry_after(&h, now), Some(Duration::from_secs(7)));
        let past = httpdate::fmt_http_date(now - Duration::from_secs(7));
        h.insert("retry-after", HeaderValue::from_str(&past).unwrap());
        assert_eq!(retry_after(&h, now), Some(Duration::ZERO));
        h.insert("retry-after", HeaderValue::from_static("soon"));
        assert_eq!(retry_after(&h, now), None);
        h.insert("retry-after", HeaderValue::from_static("-1"));
        assert_eq!(retry_after(&h, now), None);
        h.insert("retry-after-ms", HeaderValue::from_static("250"));
        assert_eq!(retry_after(&h, now), Some(Duration::from_millis(250)));
    }

    #[test]
    fn snippets_are_short_and_safe() {
        assert_eq!(snippet(b""), "(empty body)");
        assert_eq!(snippet(&[0xff, b'a']), "\u{fffd}a");
        let long = "北".repeat(400);
        assert_eq!(snippet(long.as_bytes()).chars().count(), 301);
        let long = "a".repeat(1500);
        assert!(bounded(&long).ends_with("… (500 more bytes)"));
    }

    #[test]
    fn a_page_instead_of_the_api_is_named() {
        let e = unexpected_body(
            StatusCode::OK,
            "text/html",
            b"<html>hi</html>",
            "an event stream",
            "http://h/v1",
            "it must be X",
        );
        assert_eq!(
            e.message(),
            "HTTP 200 OK from http://h/v1 with text/html instead of an event stream: \
             <html>hi</html>; check the base URL: it must be X"
        );
    }
}
