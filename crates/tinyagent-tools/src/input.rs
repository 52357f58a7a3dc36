//! [`ToolInput`]: what a tool is called with, the model's text and the value read from it.

use std::fmt;
use std::sync::Arc;

use serde_json::Value;

use super::arguments::parse_arguments;
use crate::error::ToolError;

/// A tool call's arguments: the text the model wrote and, once read, the JSON value in it.
///
/// The text is read once, strictly ([`parse_arguments`]), by whoever needs the value first
/// (the validation layer, the cache's key, the typed adapter); the value then travels with the
/// input through every layer to the tool, so nothing reads it twice. Plain-text tools (agents
/// as tools) read [`text`](Self::text). Cloning is cheap: both parts are shared.
///
/// ```
/// use serde_json::json;
/// use tinyagent::tools::ToolInput;
///
/// let input = ToolInput::from_text(r#"{"city": "Paris"}"#);
/// assert_eq!(input.value(), None); // not read yet
/// let input = input.parsed()?;
/// assert_eq!(input.value(), Some(&json!({"city": "Paris"})));
/// assert_eq!(input.text(), r#"{"city": "Paris"}"#);
///
/// let input = ToolInput::from_value(json!({"a": 1}));
/// assert_eq!(input.text(), r#"{"a":1}"#);
/// # Ok::<(), tinyagent::ToolError>(())
/// ```
#[derive(Clone)]
pub struct ToolInput {
    text: Arc<str>,
    value: Option<Arc<Value>>,
}

impl ToolInput {
    /// Arguments as the model wrote them, not read yet.
    pub fn from_text(text: impl Into<Arc<str>>) -> Self {
        Self {
            text: text.into(),
            value: None,
        }
    }

    /// Arguments given as a value (its text is its compact JSON).
    pub fn from_value(value: Value) -> Self {
        Self {
            text: value.to_string().into(),
            value: Some(Arc::new(value)),
        }
    }

    /// This input's text, or the part of it that is `text` (the same text trimmed), with the
    /// value read from it (crate-internal: the value must be `text`'s reading).
    pub(crate) fn read(&self, text: &str, value: Value) -> Self {
        let text = if text.len() == self.text.len() {
            self.text.clone()
        } else {
            text.into()
        };
        Self {
            text,
            value: Some(Arc::new(value)),
        }
    }

    /// The arguments as the model wrote them.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The value read from the text, when something has read it (see [`parsed`](Self::parsed)).
    pub fn value(&self) -> Option<&Value> {
        self.value.as_deref()
    }

    /// This input with its text read: the value is there afterwards. Reading is strict
    /// ([`parse_arguments`]: no duplicate keys, no lone surrogates, empty text is `{}`); an
    /// input already read is returned as it is.
    pub fn parsed(self) -> Result<Self, ToolError> {
        if self.value.is_some() {
            return Ok(self);
        }
        let value = parse_arguments(&self.text)?;
        Ok(Self {
            value: Some(Arc::new(value)),
            ..self
        })
    }

    /// The value, reading the text first if no one has: the value itself when this input
    /// holds the only reference to it, a copy otherwise.
    pub fn into_value(self) -> Result<Value, ToolError> {
        let value = self.parsed()?.value.unwrap_or_default();
        Ok(Arc::try_unwrap(value).unwrap_or_else(|shared| (*shared).clone()))
    }
}

impl fmt::Debug for ToolInput {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolInput")
            .field("text", &self.text)
            .field("parsed", &self.value.is_some())
            .finish()
    }
}

impl From<&str> for ToolInput {
    fn from(text: &str) -> Self {
        Self::from_text(text)
    }
}

impl From<String> for ToolInput {
    fn from(text: String) -> Self {
        Self::from_text(text)
    }
}

impl From<Value> for ToolInput {
    fn from(value: Value) -> Self {
        Self::from_value(value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_is_read_once_and_strictly() {
        let input = ToolInput::from_text(" {\"a\": [1, 2]} ").parsed().unwrap();
        assert_eq!(input.value(), Some(&serde_json::json!({"a": [1, 2]})));
        let again = input.clone().parsed().unwrap();
        assert!(Arc::ptr_eq(
            input.value.as_ref().unwrap(),
            again.value.as_ref().unwrap()
        ));
        assert_eq!(
            ToolInput::from_text("").into_value().unwrap(),
            serde_json::json!({})
        );
        let err = ToolInput::from_text(r#"{"a":1,"a":2}"#)
            .parsed()
            .unwrap_err();
        assert!(err.message().contains("duplicate key"), "{err}");
    }
}
