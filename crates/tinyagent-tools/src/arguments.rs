//! Tool arguments read strictly: [`parse_arguments`] refuses what a lenient JSON reader would
//! let through (duplicate keys, lone surrogates, numbers out of range); the value read
//! travels on with the call's [`ToolInput`](super::ToolInput), so nothing is read twice.

use crate::util::cut;
use std::collections::HashSet;
use std::fmt;

use serde::de::{self, DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};

use crate::error::ToolError;

/// The most characters of one quoted value or one listed problem in an error message.
#[doc(hidden)]
pub const MAX_PROBLEM_CHARS: usize = 300;

/// Parses a tool's raw arguments as strict JSON: one value, nothing after it.
///
/// Stricter than `serde_json::from_str::<Value>` in what it refuses, so that a value that
/// passed a schema check is exactly what the tool will see:
///
/// - an object with the same key twice (`{"a":1,"a":2}`): readers disagree on which one wins;
/// - strings with lone UTF-16 surrogates (`"\ud800"`) and numbers out of `f64`'s range
///   (`1e999`), anywhere, also in keys a typed tool would ignore;
/// - nesting deeper than 128 levels.
///
/// Empty input (or only JSON whitespace: space, tab, line feed, carriage return) is `{}`, which
/// models send for tools without arguments. Other whitespace (`\u{0B}`, `\u{0C}`, U+2028,
/// U+3000 …) is not JSON and is refused, as `serde_json` refuses it in the tool.
/// Errors are [`ToolErrorKind::InvalidInput`](crate::error::ToolErrorKind::InvalidInput), name the
/// problem with its position, and quote at most 200 characters of the input.
///
/// ```
/// use tinyagent::tools::parse_arguments;
///
/// assert_eq!(parse_arguments(r#" {"city": "Beijing"} "#).unwrap()["city"], "Beijing");
/// assert_eq!(parse_arguments("").unwrap(), serde_json::json!({}));
/// for bad in [r#"{"a":1,"a":2}"#, r#"{"a":"\ud800"}"#, r#"{"a":1e999}"#, "{not json"] {
///     assert!(parse_arguments(bad).is_err(), "{bad}");
/// }
/// let err = parse_arguments(r#"{"a":1,"a":2}"#).unwrap_err();
/// assert!(err.message().contains("duplicate key \"a\""), "{err}");
/// ```
pub fn parse_arguments(raw: &str) -> Result<Value, ToolError> {
    let src = trim_json_whitespace(raw);
    if src.is_empty() {
        return Ok(Value::Object(Map::new()));
    }
    let mut de = serde_json::Deserializer::from_str(src);
    let parsed = StrictSeed
        .deserialize(&mut de)
        .and_then(|value| de.end().map(|()| value));
    parsed.map_err(|e| {
        let detail = cut(&e.to_string(), MAX_PROBLEM_CHARS).into_owned();
        let what = if detail.starts_with("duplicate key") {
            "an object names the same key twice (send each key once)"
        } else {
            "the arguments are not valid JSON"
        };
        ToolError::invalid_input(format!(
            "invalid arguments: {what}: {detail}; input was {}",
            quote_input(raw)
        ))
        .with_source(e)
    })
}

/// `text` without the whitespace JSON allows around a value (RFC 8259: space, tab, line feed,
/// carriage return) at either end. Every reader of tool arguments trims with this and nothing
/// else, so that validation and the tool agree on what is JSON.
pub(crate) fn trim_json_whitespace(text: &str) -> &str {
    text.trim_matches(is_json_whitespace)
}

/// Whether `c` is whitespace in JSON's sense (RFC 8259 `ws`).
pub(crate) fn is_json_whitespace(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\n' | '\r')
}

/// Builds a [`Value`], refusing duplicate keys; serde_json refuses the rest (surrogates,
/// numbers out of range, depth) on its own.
struct StrictSeed;

impl<'de> DeserializeSeed<'de> for StrictSeed {
    type Value = Value;

    fn deserialize<D: de::Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        deserializer.deserialize_any(StrictVisitor)
    }
}

struct StrictVisitor;

impl<'de> Visitor<'de> for StrictVisitor {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Value, E> {
        Number::from_f64(v)
            .map(Value::Number)
            .ok_or_else(|| E::custom("number out of range"))
    }

    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_owned()))
    }

    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element_seed(StrictSeed)? {
            items.push(item);
        }
        Ok(Value::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut out = Map::new();
        let mut seen: HashSet<String> = HashSet::new();
        while let Some(key) = map.next_key::<String>()? {
            if !seen.insert(key.clone()) {
                return Err(de::Error::custom(format_args!(
                    "duplicate key {:?} in an object",
                    cut(&key, 60)
                )));
            }
            let value = map.next_value_seed(StrictSeed)?;
            out.insert(key, value);
        }
        Ok(Value::Object(out))
    }
}

/// How much of a raw input an error message quotes, in bytes.
const QUOTE_LIMIT: usize = 200;

/// Quotes (part of) a raw input for an error message, cut at a character boundary.
pub(crate) fn quote_input(raw: &str) -> String {
    if raw.len() <= QUOTE_LIMIT {
        return format!("{raw:?}");
    }
    let mut end = QUOTE_LIMIT;
    while !raw.is_char_boundary(end) {
        end -= 1;
    }
    format!("{:?}… ({} more bytes)", &raw[..end], raw.len() - end)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strict_parse_refuses_what_lenient_readers_accept() {
        for (bad, why) in [
            (r#"{"a":1,"a":2}"#, "duplicate key"),
            (r#"{"x":{"b":[{"c":1,"c":1}]}}"#, "duplicate key"),
            (r#"{"junk":"\ud800"}"#, "escape"),
            (r#"{"junk":"\udc00x"}"#, "surrogate"),
            (r#"{"junk":1e999}"#, "out of range"),
            (r#"{"junk":-1e400}"#, "out of range"),
            (r#"{"a":1} trailing"#, "trailing"),
            ("{not json", "not valid JSON"),
        ] {
            let err = parse_arguments(bad).unwrap_err();
            assert!(err.message().contains(why), "{bad}: {err}");
        }
        let deep = format!("{}{}", "[".repeat(200), "]".repeat(200));
        assert!(parse_arguments(&deep).is_err());
        assert_eq!(
            parse_arguments(r#"{"a":[1,-2,3.5e2,"\ud83d\ude00",null,true]}"#).unwrap(),
            serde_json::json!({"a": [1, -2, 350.0, "😀", null, true]})
        );
    }
}
