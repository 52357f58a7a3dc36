//! Checking a tool's input against its schema, with every violation reported at once.

use std::fmt;

use serde_json::Value;

use super::arguments::{MAX_PROBLEM_CHARS, parse_arguments};
use crate::error::ToolError;
use crate::util::cut;

/// The most violations one error lists; the rest are counted ("and 3 more").
const MAX_LISTED_PROBLEMS: usize = 10;

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
/// use tinyagent::tools::schema::SchemaValidator;
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
    ///
    /// The error for a schema that does not compile quotes the offending part only in part, so
    /// its message stays small whatever the schema.
    pub fn new(schema: &Value) -> Result<Self, ToolError> {
        let validator = jsonschema::validator_for(schema).map_err(|e| {
            ToolError::invalid_input(format!(
                "the tool's input schema is not a valid JSON Schema: {}",
                cut(&e.to_string(), 3 * MAX_PROBLEM_CHARS)
            ))
        })?;
        Ok(Self { validator })
    }

    /// Parses raw arguments strictly (see [`parse_arguments`]: duplicate keys, lone
    /// surrogates and numbers out of range are refused) and checks them, returning the parsed
    /// value. Empty input counts as `{}`.
    pub fn validate_str(&self, input: &str) -> Result<Value, ToolError> {
        let value = parse_arguments(input)?;
        self.validate(&value)?;
        Ok(value)
    }

    /// Checks a parsed value, reporting every violation.
    ///
    /// The message stays small whatever the input: each violation is cut to 300 characters
    /// (a huge offending value is quoted only in part) and at most 10 are listed, followed by
    /// how many more there are.
    pub fn validate(&self, instance: &Value) -> Result<(), ToolError> {
        let mut problems = Vec::new();
        let mut count = 0usize;
        for error in self.validator.iter_errors(instance) {
            if problems.len() >= MAX_LISTED_PROBLEMS {
                count += match error.kind() {
                    jsonschema::error::ValidationErrorKind::AdditionalProperties { unexpected } => {
                        unexpected.len().max(1)
                    }
                    _ => 1,
                };
                continue;
            }
            let path = error.instance_path().as_str();
            match error.kind() {
                // Point at the missing or unexpected property itself, not at its parent.
                jsonschema::error::ValidationErrorKind::Required { property } => {
                    let name = property
                        .as_str()
                        .map_or_else(|| property.to_string(), str::to_owned);
                    problems.push(format!(
                        "{path}/{}: required property is missing",
                        cut(&escape_pointer(&name), MAX_PROBLEM_CHARS)
                    ));
                    count += 1;
                }
                jsonschema::error::ValidationErrorKind::AdditionalProperties { unexpected } => {
                    for name in unexpected {
                        count += 1;
                        if problems.len() < MAX_LISTED_PROBLEMS {
                            problems.push(format!(
                                "{path}/{}: unexpected property (the schema does not allow it)",
                                cut(&escape_pointer(name), MAX_PROBLEM_CHARS)
                            ));
                        }
                    }
                }
                _ => {
                    let at = if path.is_empty() { "(root)" } else { path };
                    let at = cut(at, MAX_PROBLEM_CHARS);
                    problems.push(format!(
                        "{at}: {}",
                        cut(&error.to_string(), MAX_PROBLEM_CHARS)
                    ));
                    count += 1;
                }
            }
        }
        if problems.is_empty() {
            return Ok(());
        }
        let noun = if count == 1 { "problem" } else { "problems" };
        let more = count - problems.len();
        let tail = if more > 0 {
            format!("; and {more} more")
        } else {
            String::new()
        };
        Err(ToolError::invalid_input(format!(
            "invalid arguments ({count} {noun}): {}{tail}",
            problems.join("; ")
        )))
    }

    /// Whether a parsed value is valid; faster than [`validate`](Self::validate).
    pub fn is_valid(&self, instance: &Value) -> bool {
        self.validator.is_valid(instance)
    }
}
