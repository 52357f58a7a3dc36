//! Completion of an argument (`completion/complete`): what a client asks
//! ([`McpCompletionRequest`]) and what it is told ([`McpCompletion`]), for a prompt's
//! arguments and a resource template's variables.

use std::collections::HashMap;
use std::sync::Arc;

use rmcp::model::{CompleteRequestParams, CompleteResult, CompletionInfo};
use tinyagent::{BoxFuture, ToolError};

/// What a client asks to complete: one argument of a prompt (or one variable of a resource
/// template), as typed so far, with the values already chosen for the others (MCP's
/// `context.arguments`), which may narrow the choice.
///
/// ```
/// use tinyagent_mcp::McpCompletionRequest;
///
/// let request = McpCompletionRequest::new("name", "D").context_argument("department", "Sales");
/// assert_eq!(request.context["department"], "Sales");
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct McpCompletionRequest {
    /// The argument's name.
    pub argument: String,
    /// What was typed so far.
    pub value: String,
    /// The values of the arguments already chosen.
    pub context: HashMap<String, String>,
}

impl McpCompletionRequest {
    /// A request to complete `argument`, typed so far as `value`.
    pub fn new(argument: impl Into<String>, value: impl Into<String>) -> Self {
        Self {
            argument: argument.into(),
            value: value.into(),
            context: HashMap::new(),
        }
    }

    /// Adds the value already chosen for another argument.
    #[must_use]
    pub fn context_argument(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.context.insert(name.into(), value.into());
        self
    }

    pub(crate) fn from_params(params: &CompleteRequestParams) -> Self {
        Self {
            argument: params.argument.name.clone(),
            value: params.argument.value.clone(),
            context: params
                .context
                .as_ref()
                .and_then(|c| c.arguments.clone())
                .unwrap_or_default(),
        }
    }
}

/// The values offered for an argument: at most 100 go to the client (MCP's limit), with how
/// many there are in all and whether there are more than those sent, when known.
///
/// ```
/// use tinyagent_mcp::McpCompletion;
///
/// let completion = McpCompletion::new(["David", "Eve", "Frank"]).total(3);
/// assert_eq!(completion.values.len(), 3);
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct McpCompletion {
    /// The values, best first.
    pub values: Vec<String>,
    /// How many values there are in all, when known.
    pub total: Option<u32>,
    /// Whether there are more values than those given.
    pub has_more: bool,
}

impl McpCompletion {
    /// These values.
    pub fn new(values: impl IntoIterator<Item = impl Into<String>>) -> Self {
        Self {
            values: values.into_iter().map(Into::into).collect(),
            total: None,
            has_more: false,
        }
    }

    /// Sets how many values there are in all.
    #[must_use]
    pub fn total(mut self, total: u32) -> Self {
        self.total = Some(total);
        self
    }

    /// Sets whether there are more values than those given.
    #[must_use]
    pub fn has_more(mut self, has_more: bool) -> Self {
        self.has_more = has_more;
        self
    }

    pub(crate) fn from_info(info: CompletionInfo) -> Self {
        Self {
            values: info.values,
            total: info.total,
            has_more: info.has_more.unwrap_or(false),
        }
    }

    /// The result sent to the client: the first 100 values; with more, `hasMore` is set and
    /// the total is kept (or counted).
    pub(crate) fn into_result(self) -> CompleteResult {
        let mut values = self.values;
        let mut has_more = self.has_more;
        let mut total = self.total;
        if values.len() > CompletionInfo::MAX_VALUES {
            total = total.or(u32::try_from(values.len()).ok());
            values.truncate(CompletionInfo::MAX_VALUES);
            has_more = true;
        }
        let mut info = CompletionInfo::new(values).unwrap_or_default();
        info.total = total;
        info.has_more = Some(has_more);
        let mut result = CompleteResult::default();
        result.completion = info;
        result
    }
}

/// A prompt's or a template's own completion of its arguments.
pub(crate) type Completer = Arc<
    dyn Fn(McpCompletionRequest) -> BoxFuture<'static, Result<McpCompletion, ToolError>>
        + Send
        + Sync,
>;

/// `f` as a [`Completer`].
pub(crate) fn completer<F, Fut>(f: F) -> Completer
where
    F: Fn(McpCompletionRequest) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = Result<McpCompletion, ToolError>> + Send + 'static,
{
    Arc::new(move |request| Box::pin(f(request)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn at_most_a_hundred_values_go_out_and_the_rest_is_said() {
        let result = McpCompletion::new((0..150).map(|i| i.to_string())).into_result();
        assert_eq!(result.completion.values.len(), 100);
        assert_eq!(result.completion.total, Some(150));
        assert_eq!(result.completion.has_more, Some(true));
        let result = McpCompletion::new(["a"]).into_result();
        assert_eq!(result.completion.values, ["a"]);
        assert_eq!(result.completion.has_more, Some(false));
    }
}
