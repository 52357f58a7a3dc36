//! How messages and state values are written: the documented serde shape of
//! [`Message`], as JSON text. What cannot be read back is a [`StoreError::Corrupt`] naming
//! the session and the place, never a panic.

use std::time::Duration;

use serde_json::Value;
use tinyagent::Message;
use tinyagent::store::StoreError;

/// How much of a bad stored text an error quotes.
const QUOTE: usize = 80;

fn quote(text: &str) -> &str {
    text.char_indices()
        .nth(QUOTE)
        .map_or(text, |(i, _)| &text[..i])
}

pub(crate) fn encode_message(store: &'static str, message: &Message) -> Result<String, StoreError> {
    serde_json::to_string(message).map_err(|e| StoreError::backend(store, e))
}

pub(crate) fn encode_value(store: &'static str, value: &Value) -> Result<String, StoreError> {
    serde_json::to_string(value).map_err(|e| StoreError::backend(store, e))
}

pub(crate) fn decode_message(session: &str, seq: u64, text: &str) -> Result<Message, StoreError> {
    serde_json::from_str(text).map_err(|e| {
        StoreError::corrupt(
            session,
            format!(
                "message #{seq} is not a message in tinyagent's serde shape ({e}); it starts {:?}",
                quote(text)
            ),
        )
    })
}

pub(crate) fn decode_value(session: &str, key: &str, text: &str) -> Result<Value, StoreError> {
    serde_json::from_str(text).map_err(|e| {
        StoreError::corrupt(
            session,
            format!(
                "state key {key:?} does not hold JSON ({e}); it starts {:?}",
                quote(text)
            ),
        )
    })
}

/// A TTL as whole microseconds (what the SQL stores keep), saturating.
#[cfg(any(feature = "sqlite", feature = "postgres"))]
pub(crate) fn ttl_micros(ttl: Duration) -> i64 {
    i64::try_from(ttl.as_micros()).unwrap_or(i64::MAX)
}

/// A TTL as whole milliseconds, at least 1 and at most about 300 years (what Redis takes;
/// its Lua scripts add it to the time and must keep 14 significant digits).
#[cfg(feature = "redis")]
pub(crate) fn ttl_millis(ttl: Duration) -> i64 {
    const MAX: i64 = 10_000_000_000_000;
    i64::try_from(ttl.as_millis()).unwrap_or(MAX).clamp(1, MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_texts_are_clear_errors() {
        let err = decode_message("s", 3, r#"{"id":"m","role":"robot"}"#).unwrap_err();
        let text = err.to_string();
        assert!(
            text.starts_with("session \"s\" holds data that cannot be read: message #3"),
            "{text}"
        );
        assert!(text.contains("robot"), "{text}");
        let long = "x".repeat(10_000);
        let err = decode_value("s", "k", &long).unwrap_err().to_string();
        assert!(err.len() < 300, "the quote is bounded: {} bytes", err.len());
        let m = Message::user("hi");
        let text = encode_message("t", &m).unwrap();
        assert_eq!(decode_message("s", 0, &text).unwrap(), m);
    }
}
