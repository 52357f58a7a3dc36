//! What the code `#[tool]` generates calls; not a public API.

use schemars::JsonSchema;
use serde::de::DeserializeOwned;

use crate::error::ToolError;
use crate::{
    ToolHints,
    tools::{
        FuncTool, IntoToolError, IntoToolOutput, JsonAdapter, ToolFn, ToolOutput, WithContext,
        generate_schema, json_adapter,
    },
};

/// What a `#[tool]` fn may return.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not what a #[tool] fn returns",
    label = "a #[tool] fn returns `Result<T, E>`",
    note = "`T` is the result: text, `Json<T>`, `ToolOutput` or any `Serialize` value; `E` is `ToolError`, `String` or an error type implementing `ToolErrorKindHint`"
)]
pub trait ToolReturn {
    /// The result, or the error.
    fn into_tool_result(self) -> Result<ToolOutput, ToolError>;
}

impl<O: IntoToolOutput, E: IntoToolError> ToolReturn for Result<O, E> {
    fn into_tool_result(self) -> Result<ToolOutput, ToolError> {
        match self {
            Ok(output) => output.into_output(),
            Err(err) => Err(err.into_tool_error()),
        }
    }
}

/// What a `#[tool]` fn returned, as a tool's result; the generated call is spanned at the
/// fn's return type, so a return type that is not a tool's is an error there.
pub fn into_tool_result<R: ToolReturn>(returned: R) -> Result<ToolOutput, ToolError> {
    returned.into_tool_result()
}

/// The tool of a `#[tool]` fn; the name was checked when the macro ran.
pub fn tool_from_parts<I, F>(
    name: &'static str,
    description: &'static str,
    hints: ToolHints,
    f: F,
) -> FuncTool<JsonAdapter<F, I, WithContext>>
where
    I: DeserializeOwned + JsonSchema + Send + 'static,
    F: ToolFn<I, WithContext> + 'static,
{
    FuncTool::from_parts(
        name.to_owned(),
        description.to_owned(),
        generate_schema::<I>(),
        hints,
        json_adapter(f),
    )
}
