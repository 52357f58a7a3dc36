//! [`with_validation`]: arguments checked against the tool's schema before the handler runs.

use std::sync::Arc;

use super::{ToolLayer, ToolMiddleware};
use crate::error::ToolError;
use crate::tool::{BoxFuture, Handler, Tool, ToolContext};
use crate::tools::SchemaValidator;

/// Checks every call's arguments against the tool's input schema before the handler runs.
///
/// The schema is compiled once, when the tool is wrapped. Arguments that are not JSON, or do
/// not match, fail with one [`InvalidInput`](crate::ToolErrorKind::InvalidInput) error listing
/// every violation by JSON pointer with what was expected (see [`SchemaValidator`]), so the
/// model can fix them all in one go; the handler never sees them. Empty arguments count as
/// `{}`.
///
/// A tool whose schema does not compile is left unvalidated (a warning is logged when it is
/// wrapped): refusing every call would make the tool unusable over a schema problem the tool
/// itself may tolerate.
///
/// ```
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
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct Validation {
    _private: (),
}

impl Validation {
    /// Validation against each tool's own input schema.
    pub fn new() -> Self {
        Self::default()
    }
}

/// Checks arguments against the tool's schema before the handler runs; see [`Validation`].
pub fn with_validation() -> ToolMiddleware {
    Validation::new().into()
}

impl ToolLayer for Validation {
    fn layer(&self, tool: &dyn Tool, next: Arc<dyn Handler>) -> Arc<dyn Handler> {
        match SchemaValidator::new(tool.input_schema()) {
            Ok(validator) => Arc::new(ValidationHandler { next, validator }),
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
}

impl Handler for ValidationHandler {
    fn handle<'a>(
        &'a self,
        ctx: &'a ToolContext,
        input: &'a str,
    ) -> BoxFuture<'a, Result<String, ToolError>> {
        match self.validator.validate_str(input) {
            Ok(_) => self.next.handle(ctx, input),
            Err(err) => Box::pin(std::future::ready(Err(err))),
        }
    }
}
