//! Reading fields that compatible servers send in more than one way.

use serde::{Deserialize, Deserializer};
use serde_json::Value;

/// Text of a field that should be a string: a number as its digits, anything else absent.
pub(crate) fn lenient_text<'de, D: Deserializer<'de>>(de: D) -> Result<Option<String>, D::Error> {
    Ok(match Value::deserialize(de)? {
        Value::String(text) => Some(text),
        Value::Number(number) => Some(number.to_string()),
        _ => None,
    })
}

/// A field whose `null` reads as its default.
pub(crate) fn null_as_default<'de, D, T>(de: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de> + Default,
{
    Ok(Option::<T>::deserialize(de)?.unwrap_or_default())
}

/// Tool-call arguments as JSON text: a string as it is (the spec's form), anything else (the
/// object itself, as some servers send it) serialized, nothing as empty.
pub(crate) fn arguments_text(arguments: Option<&Value>) -> String {
    match arguments {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(text)) => text.clone(),
        Some(other) => other.to_string(),
    }
}
