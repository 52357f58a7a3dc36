//! [`IntoTool`]: what an agent, a toolset or [`wrap_tool`](crate::wrap_tool) takes as a
//! tool.

use std::sync::Arc;

use crate::Tool;

/// Anything that can be stored as a tool: every [`Tool`] (moved into an `Arc`), an
/// `Arc<dyn Tool>` (kept as it is) and an `Arc` of a concrete tool (kept for inspection).
///
/// It lets `LlmAgentBuilder::tool` and
/// [`tools::wrap_tool`](crate::wrap_tool) take a tool as it was made, the way
/// `.model(..)` takes any model:
///
/// ```
/// use std::sync::Arc;
/// use tinyagent::Tool;
/// use tinyagent::tools::{self, IntoTool};
/// # #[derive(serde::Deserialize, schemars::JsonSchema)] struct Q { id: u64 }
///
/// let lookup = tools::new_func("lookup", "Finds an order", |q: Q| async move {
///     Ok::<_, String>(format!("order {}", q.id))
/// });
/// let stored: Arc<dyn Tool> = lookup.into_tool();
/// let same: Arc<dyn Tool> = stored.clone().into_tool();
/// assert!(Arc::ptr_eq(&stored, &same));
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a tool",
    label = "expected a tool",
    note = "a tool implements `tinyagent::Tool` (as `tools::new_func`, `tools::new_tool` and `#[tool]` make), or is an `Arc<dyn Tool>`"
)]
pub trait IntoTool {
    /// The tool, ready to be stored.
    fn into_tool(self) -> Arc<dyn Tool>;
}

impl<T: Tool + 'static> IntoTool for T {
    fn into_tool(self) -> Arc<dyn Tool> {
        Arc::new(self)
    }
}

impl IntoTool for Arc<dyn Tool> {
    fn into_tool(self) -> Arc<dyn Tool> {
        self
    }
}

impl<T: Tool + 'static> IntoTool for Arc<T> {
    fn into_tool(self) -> Arc<dyn Tool> {
        self
    }
}
