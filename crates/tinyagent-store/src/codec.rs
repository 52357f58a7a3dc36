//! How messages and state values are written: the documented serde shape of
//! [`Message`], as JSON text. What cannot be read back is a [`StoreError::Corrupt`] naming
//! the session and the place, never a panic.

use std::time::Duration;

use serde_json::Value;
use tinyagent_core::Message;
use tinyagent_core::store::{Changes, SessionInfo, State, StoreError, StoredSession};

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
/// A commit's changes as the texts a store writes: encoded before anything is written, so
/// that nothing is when one of them cannot be.
pub(crate) struct EncodedChanges<'a> {
    /// The new messages, in order.
    pub(crate) messages: Vec<String>,
    /// Each state key with its value, `None` to delete the key.
    pub(crate) state: Vec<(&'a str, Option<String>)>,
}

impl<'a> EncodedChanges<'a> {
    /// `changes` encoded for `store` (its name, for errors).
    pub(crate) fn new(store: &'static str, changes: &'a Changes) -> Result<Self, StoreError> {
        let messages = changes
            .messages
            .iter()
            .map(|m| encode_message(store, m))
            .collect::<Result<Vec<_>, _>>()?;
        let mut state = Vec::with_capacity(changes.state.len());
        for (key, value) in &changes.state {
            let value = value.as_ref().map(|v| encode_value(store, v)).transpose()?;
            state.push((key.as_str(), value));
        }
        Ok(Self { messages, state })
    }
}

/// A summary's session as a [`StoredSession`] with no messages nor state yet.
pub(crate) fn session_of(info: SessionInfo) -> StoredSession {
    let mut stored = StoredSession::empty(&info.id);
    stored.version = info.version;
    stored.created_at = info.created_at;
    stored.updated_at = info.updated_at;
    stored.expires_at = info.expires_at;
    stored.owner = info.owner;
    stored
}

/// A loaded session's state from its keys and texts.
pub(crate) fn decode_state<'t>(
    id: &str,
    pairs: impl IntoIterator<Item = (&'t str, &'t str)>,
) -> Result<State, StoreError> {
    let mut state = State::new();
    for (key, value) in pairs {
        state.insert(key.to_owned(), decode_value(id, key, value)?);
    }
    Ok(state)
}

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
