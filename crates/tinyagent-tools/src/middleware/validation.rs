//! [`ValidationLayer`]: arguments checked against the tool's schema before the handler runs.

use std::sync::Arc;

use super::layer::ToolLayer;
use crate::context::ToolContext;
use crate::error::ToolError;
use crate::parse_arguments;
use crate::schema::SchemaValidator;
use crate::util::BoxFuture;
use crate::{Handler, Tool, ToolInput, ToolOutput};

use serde_json::{Map, Value};

/// Checks every call's arguments against the tool's input schema before the handler runs.
///
/// The schema is compiled once, when the tool is wrapped. Arguments must be strict JSON (see
/// [`parse_arguments`]: no duplicate keys, no lone surrogates, no numbers out of range) that
/// passes the schema; anything else fails with one
/// [`InvalidInput`](crate::error::ToolErrorKind::InvalidInput) error listing the violations by JSON
/// pointer with what was expected (see [`SchemaValidator`]), so the model can fix them in one
/// go; the handler never sees them. Empty arguments count as `{}`. A `null` the schema does
/// not allow counts as left out (models in OpenAI's strict mode send `null` for every optional
/// field): when the arguments pass the schema only without their `null` members, the handler
/// gets them without those members; a `null` for a required property is still an error.
///
/// What the handler gets is exactly what was checked: the arguments without surrounding
/// whitespace (`{}` for empty ones; re-serialized when `null` members were dropped), and a
/// typed tool ([`new_func`](crate::new_func),
/// [`json_adapter`](crate::json_adapter)) decodes the very value that passed the
/// schema instead of parsing the text again.
///
/// Plain text goes through only to a tool whose [hints](crate::ToolHints::plain_text) declare
/// that it takes plain text (agent tools, whose message it is); even there, a JSON object must
/// pass the schema, and text that starts like an object (`{`) must be one.
///
/// A tool whose schema does not compile cannot be checked against it (a warning is logged when
/// it is wrapped); its arguments must still be a strict JSON object.
///
/// ```
/// use tinyagent::{ToolContext, ToolErrorKind, tools};
///
/// let calc = tools::wrap_tool(tinyagent_demo::calculator_tool(), [tools::middleware::ValidationLayer::new().into()]);
/// # tokio_test::block_on(async {
/// let err = calc.handle(&ToolContext::default(), r#"{"operation":"modulo","a":"ten"}"#)
///     .await.unwrap_err();
/// assert_eq!(err.kind(), ToolErrorKind::InvalidInput);
/// assert!(err.message().contains("/operation"), "{err}");
/// assert!(err.message().contains("/a"), "{err}");
/// # });
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct ValidationLayer {
    _private: (),
}

impl ValidationLayer {
    /// Validation against each tool's own input schema.
    pub fn new() -> Self {
        Self::default()
    }
}

impl ToolLayer for ValidationLayer {
    fn layer(&self, tool: &dyn Tool, next: Arc<dyn Handler>) -> Arc<dyn Handler> {
        let validator = match SchemaValidator::new(tool.input_schema()) {
            Ok(validator) => Some(validator),
            Err(err) => {
                tracing::warn!(
                    gen_ai.tool.name = tool.name(),
                    error = %err,
                    "input schema does not compile; calls are only checked to be JSON objects"
                );
                None
            }
        };
        Arc::new(ValidationHandler {
            next,
            validator,
            plain_text: tool.hints().plain_text,
        })
    }
}

struct ValidationHandler {
    next: Arc<dyn Handler>,
    validator: Option<SchemaValidator>,
    plain_text: bool,
}

impl ValidationHandler {
    /// The input to forward, read and checked, or `None` when the input goes on as plain
    /// text.
    fn check(&self, input: &ToolInput) -> Result<Option<ToolInput>, ToolError> {
        let (text, value) = match input.value() {
            Some(value) => (input.text(), value.clone()),
            None => {
                let trimmed = crate::arguments::trim_json_whitespace(input.text());
                if trimmed.is_empty() {
                    let value = Value::Object(Map::new());
                    self.check_value(&value)?;
                    return Ok(Some(ToolInput::from_value(value)));
                }
                match parse_arguments(trimmed) {
                    Ok(value) => (trimmed, value),
                    Err(_) if self.plain_text && !trimmed.starts_with('{') => return Ok(None),
                    Err(err) => return Err(err),
                }
            }
        };
        if self.plain_text && !value.is_object() {
            // A JSON string, number or array: the message itself, for a tool that takes text.
            return Ok(None);
        }
        let Err(first) = self.check_value(&value) else {
            return Ok(Some(input.read(text, value)));
        };
        // `null` where the schema wants no null: read it as left out.
        let Some(cleaned) = without_nulls(&value) else {
            return Err(first);
        };
        self.check_value(&cleaned)?;
        Ok(Some(ToolInput::from_value(cleaned)))
    }

    fn check_value(&self, value: &Value) -> Result<(), ToolError> {
        match &self.validator {
            Some(validator) => validator.validate(value),
            None if value.is_object() => Ok(()),
            None => Err(ToolError::invalid_input(
                "invalid arguments: expected a JSON object with the tool's arguments",
            )),
        }
    }
}

/// `value` without the `null` members of its objects, at any depth; `None` when it has none.
#[doc(hidden)]
pub fn without_nulls(value: &Value) -> Option<Value> {
    fn strip(value: &Value, changed: &mut bool) -> Value {
        match value {
            Value::Object(map) => {
                let mut out = Map::new();
                for (k, v) in map {
                    if v.is_null() {
                        *changed = true;
                    } else {
                        out.insert(k.clone(), strip(v, changed));
                    }
                }
                Value::Object(out)
            }
            Value::Array(items) => Value::Array(items.iter().map(|v| strip(v, changed)).collect()),
            other => other.clone(),
        }
    }
    let mut changed = false;
    let out = strip(value, &mut changed);
    changed.then_some(out)
}

impl Handler for ValidationHandler {
    fn call<'a>(
        &'a self,
        ctx: &'a ToolContext,
        input: ToolInput,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        match self.check(&input) {
            Ok(None) => self.next.call(ctx, input),
            Ok(Some(checked)) => self.next.call(ctx, checked),
            Err(err) => Box::pin(std::future::ready(Err(err))),
        }
    }
}
