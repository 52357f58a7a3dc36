//! [`ResponseFormat`]: a final answer in a given JSON shape. (Its constructor from a Rust
//! type, [`ResponseFormat::of`], is in `tools/schema_gen.rs`, with the schema generation it
//! uses.)

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The shape a model's final answer must have: one JSON value matching a JSON Schema.
///
/// A provider passes it on in its own terms (OpenAI's structured outputs,
/// `response_format: {"type": "json_schema", ...}`; a grammar for a local model); a provider
/// that cannot enforce it still gets the request, and the agent checks the answer either way
/// (see `LlmAgent::ask_as`). OpenAI's strict mode needs an object at
/// the root: make `T` a struct.
///
/// ```
/// use tinyagent::model::ResponseFormat;
///
/// #[derive(serde::Deserialize, schemars::JsonSchema)]
/// struct Verdict {
///     /// Whether the claim holds
///     holds: bool,
///     /// Why, in one sentence
///     reason: String,
/// }
///
/// let format = ResponseFormat::of::<Verdict>();
/// assert_eq!(format.name, "Verdict");
/// assert_eq!(format.schema["required"], serde_json::json!(["holds", "reason"]));
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ResponseFormat {
    /// A name for the shape, as providers accept it (`^[a-zA-Z0-9_-]{1,64}$`).
    pub name: String,
    /// The JSON Schema of the answer.
    pub schema: Value,
}

impl ResponseFormat {
    /// A format from a name and a schema; characters of `name` that providers refuse become
    /// `_`, and it is cut to 64 characters (an empty name becomes `answer`).
    pub fn json_schema(name: &str, schema: Value) -> Self {
        let mut clean: String = name
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                    c
                } else {
                    '_'
                }
            })
            .take(64)
            .collect();
        if clean.is_empty() {
            clean.push_str("answer");
        }
        Self {
            name: clean,
            schema,
        }
    }

    /// What a model whose answer missed this shape is told, so that it answers again.
    pub fn feedback(&self, problem: &str) -> String {
        format!(
            "Your answer is not JSON of the required shape ({}): {problem}. Answer again with \
             only the JSON value, matching the schema.",
            self.name
        )
    }

    /// `answer` without the Markdown code fence models often put around JSON
    /// (```` ```json … ``` ````), trimmed; the answer itself when it has none.
    ///
    /// ```
    /// use tinyagent::model::ResponseFormat;
    ///
    /// assert_eq!(ResponseFormat::unfenced("```json\n{\"a\": 1}\n```"), r#"{"a": 1}"#);
    /// assert_eq!(ResponseFormat::unfenced(" [1] "), "[1]");
    /// ```
    pub fn unfenced(answer: &str) -> &str {
        let text = answer.trim();
        let Some(body) = text
            .strip_prefix("```")
            .and_then(|rest| rest.strip_suffix("```"))
        else {
            return text;
        };
        match body.find('\n') {
            Some(nl) if body[..nl].chars().all(|c| c.is_ascii_alphanumeric()) => {
                body[nl + 1..].trim()
            }
            _ => body.trim(),
        }
    }
}
