//! [`with_validation`]: arguments checked against the tool's schema before the handler runs.

use std::sync::Arc;

use super::{ToolLayer, ToolMiddleware};
use crate::context::ToolContext;
use crate::error::ToolError;
use crate::tools::schema::allow_null_optionals;
use crate::tools::{Handler, Tool};
use crate::tools::{SchemaValidator, normalize_arguments};
use crate::util::BoxFuture;

use serde_json::Value;

/// Checks every call's arguments against the tool's input schema before the handler runs.
///
/// The schema is compiled once, when the tool is wrapped. Arguments that are not JSON, or do
/// not match, fail with one [`InvalidInput`](crate::ToolErrorKind::InvalidInput) error listing
/// every violation by JSON pointer with what was expected (see [`SchemaValidator`]), so the
/// model can fix them all in one go; the handler never sees them. Empty arguments count as
/// `{}`, and `null` is accepted wherever a property may be left out (typed tools read it as
/// `None`, and models in OpenAI's strict mode send it for every optional field).
///
/// With [`pass_plain_text`](Self::pass_plain_text), arguments that are not JSON at all go to
/// the tool unchecked, for tools that take plain text too (agent tools take it as the
/// message); agents validate this way.
///
/// A tool whose schema does not compile is left unvalidated (a warning is logged when it is
/// wrapped): refusing every call would make the tool unusable over a schema problem the tool
/// itself may tolerate.
///
/// ```
/// # #[cfg(feature = "demo")] {
/// use tinyagent::{ToolContext, ToolErrorKind, tools};
///
/// let calc = tools::wrap_tool(tinyagent::demo::calculator_tool(), [tools::with_validation()]);
/// # tokio_test::block_on(async {
/// let err = calc.handle(&ToolContext::default(), r#"{"operation":"modulo","a":"ten"}"#)
///     .await.unwrap_err();
/// assert_eq!(err.kind(), ToolErrorKind::InvalidInput);
/// assert!(err.message().contains("/operation"), "{err}");
/// assert!(err.message().contains("/a"), "{err}");
/// # });
/// # }
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct ValidationLayer {
    pass_plain_text: bool,
}

impl ValidationLayer {
    /// Validation against each tool's own input schema.
    pub fn new() -> Self {
        Self::default()
    }

    /// Whether arguments that are not JSON go to the tool unchecked (default `false`: they are
    /// refused).
    #[must_use]
    pub fn pass_plain_text(mut self, pass: bool) -> Self {
        self.pass_plain_text = pass;
        self
    }
}

/// Checks arguments against the tool's schema before the handler runs; see [`ValidationLayer`].
pub fn with_validation() -> ToolMiddleware {
    ValidationLayer::new().into()
}

impl ToolLayer for ValidationLayer {
    fn layer(&self, tool: &dyn Tool, next: Arc<dyn Handler>) -> Arc<dyn Handler> {
        match SchemaValidator::new(&allow_null_optionals(tool.input_schema())) {
            Ok(validator) => Arc::new(ValidationHandler {
                next,
                validator,
                pass_plain_text: self.pass_plain_text,
            }),
            Err(err) => {
                tracing::warn!(
                    gen_ai.tool.name = tool.name(),
                    error = %err,
                    "input schema does not compile; calls will not be validated"
                );
                next
            }
        }
    }
}

struct ValidationHandler {
    next: Arc<dyn Handler>,
    validator: SchemaValidator,
    pass_plain_text: bool,
}

impl Handler for ValidationHandler {
    fn handle<'a>(
        &'a self,
        ctx: &'a ToolContext,
        input: &'a str,
    ) -> BoxFuture<'a, Result<String, ToolError>> {
        let checked = match serde_json::from_str::<Value>(normalize_arguments(input)) {
            Ok(value) => self.validator.validate(&value),
            Err(_) if self.pass_plain_text => Ok(()),
            Err(_) => self.validator.validate_str(input).map(drop),
        };
        match checked {
            Ok(()) => self.next.handle(ctx, input),
            Err(err) => Box::pin(std::future::ready(Err(err))),
        }
    }
}
