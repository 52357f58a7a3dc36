//! Checking a tool's input against its schema, with every violation reported at once.

use std::fmt;

use serde_json::Value;

use super::adapter::quote_input;
use crate::error::ToolError;

/// Escapes one JSON pointer segment (RFC 6901): `~` as `~0`, `/` as `~1`.
fn escape_pointer(segment: &str) -> String {
    segment.replace('~', "~0").replace('/', "~1")
}

/// A tool's input schema, compiled once, that checks raw arguments before a handler runs.
///
/// Every violation is reported in one error, each by JSON pointer with what was expected, so a
/// model can fix all of them in one go.
///
/// ```
/// use serde_json::json;
/// use tinyagent::ToolErrorKind;
/// use tinyagent::tools::SchemaValidator;
///
/// let v = SchemaValidator::new(&json!({
///     "type": "object",
///     "properties": {"a": {"type": "number"}, "op": {"type": "string", "enum": ["add", "sub"]}},
///     "required": ["a", "op"]
/// })).unwrap();
///
/// assert!(v.validate_str(r#"{"a": 1, "op": "add"}"#).is_ok());
/// let err = v.validate_str(r#"{"a": "one", "op": "mul"}"#).unwrap_err();
/// assert_eq!(err.kind(), ToolErrorKind::InvalidInput);
/// assert!(err.message().contains("/a: \"one\" is not of type \"number\""), "{err}");
/// assert!(err.message().contains("/op: "), "{err}");
///
/// let err = v.validate_str(r#"{"a": 1}"#).unwrap_err();
/// assert!(err.message().contains("/op: required property is missing"), "{err}");
/// ```
pub struct SchemaValidator {
    validator: jsonschema::Validator,
}

impl fmt::Debug for SchemaValidator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SchemaValidator").finish_non_exhaustive()
    }
}

impl SchemaValidator {
    /// Compiles a schema (JSON Schema draft 2020-12 unless it says otherwise). Remote `$ref`s
    /// are not fetched.
    pub fn new(schema: &Value) -> Result<Self, ToolError> {
        let validator = jsonschema::validator_for(schema).map_err(|e| {
            ToolError::invalid_input(format!(
                "the tool's input schema is not a valid JSON Schema: {e}"
            ))
        })?;
        Ok(Self { validator })
    }

    /// Parses raw arguments and checks them, returning the parsed value. Empty input counts as
    /// `{}`.
    pub fn validate_str(&self, input: &str) -> Result<Value, ToolError> {
        let src = super::normalize_arguments(input);
        let value: Value = serde_json::from_str(src).map_err(|e| {
            ToolError::invalid_input(format!(
                "invalid arguments: the arguments are not valid JSON: {e}; input was {}",
                quote_input(input)
            ))
            .with_source(e)
        })?;
        self.validate(&value)?;
        Ok(value)
    }

    /// Checks a parsed value, reporting every violation.
    pub fn validate(&self, instance: &Value) -> Result<(), ToolError> {
        let mut problems = Vec::new();
        for error in self.validator.iter_errors(instance) {
            let path = error.instance_path().as_str();
            match error.kind() {
                // Point at the missing or unexpected property itself, not at its parent.
                jsonschema::error::ValidationErrorKind::Required { property } => {
                    let name = property
                        .as_str()
                        .map_or_else(|| property.to_string(), str::to_owned);
                    problems.push(format!(
                        "{path}/{}: required property is missing",
                        escape_pointer(&name)
                    ));
                }
                jsonschema::error::ValidationErrorKind::AdditionalProperties { unexpected } => {
                    for name in unexpected {
                        problems.push(format!(
                            "{path}/{}: unexpected property (the schema does not allow it)",
                            escape_pointer(name)
                        ));
                    }
                }
                _ => {
                    let at = if path.is_empty() { "(root)" } else { path };
                    problems.push(format!("{at}: {error}"));
                }
            }
        }
        if problems.is_empty() {
            return Ok(());
        }
        let count = problems.len();
        let noun = if count == 1 { "problem" } else { "problems" };
        Err(ToolError::invalid_input(format!(
            "invalid arguments ({count} {noun}): {}",
            problems.join("; ")
        )))
    }

    /// Whether a parsed value is valid; faster than [`validate`](Self::validate).
    pub fn is_valid(&self, instance: &Value) -> bool {
        self.validator.is_valid(instance)
    }
}
