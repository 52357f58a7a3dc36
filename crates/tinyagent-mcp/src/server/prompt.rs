//! A prompt an [`McpServer`](crate::McpServer) serves: [`McpPrompt`].

use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::sync::Arc;

use rmcp::model::PromptArgument;
use tinyagent::{BoxFuture, ToolError};

use crate::protocol::completion::{Completer, McpCompletion, McpCompletionRequest, completer};
use crate::protocol::prompt_message::McpPromptMessage;

pub(super) type Render = Arc<
    dyn Fn(HashMap<String, String>) -> BoxFuture<'static, Result<Vec<McpPromptMessage>, ToolError>>
        + Send
        + Sync,
>;

/// A prompt an [`McpServer`](crate::McpServer) offers: a name, arguments (each with the
/// values a client may complete it with), and an async function that renders its messages
/// from the arguments given. A required argument that is missing is an error before the
/// function runs.
///
/// ```
/// use tinyagent_mcp::{McpPrompt, McpPromptMessage};
///
/// let review = McpPrompt::new("code_review", |args| async move {
///     Ok(vec![McpPromptMessage::user(format!(
///         "Review this {} code for bugs:\n{}",
///         args.get("language").map_or("", String::as_str),
///         args["code"]
///     ))])
/// })
/// .description("Asks for a code review")
/// .argument("code", "the code to review", true)
/// .completed_argument("language", "its language", false, ["rust", "python", "go"]);
/// # let _ = review;
/// ```
#[derive(Clone)]
pub struct McpPrompt {
    pub(super) name: String,
    pub(super) description: Option<String>,
    pub(super) arguments: Vec<(PromptArgument, Vec<String>)>,
    pub(super) render: Render,
    pub(super) completer: Option<Completer>,
}

impl fmt::Debug for McpPrompt {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("McpPrompt")
            .field("name", &self.name)
            .field("arguments", &self.arguments.len())
            .finish_non_exhaustive()
    }
}

impl McpPrompt {
    /// A prompt named `name`, rendered by `render` from its arguments.
    pub fn new<F, Fut>(name: impl Into<String>, render: F) -> Self
    where
        F: Fn(HashMap<String, String>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Vec<McpPromptMessage>, ToolError>> + Send + 'static,
    {
        Self {
            name: name.into(),
            description: None,
            arguments: Vec::new(),
            render: Arc::new(move |args| Box::pin(render(args))),
            completer: None,
        }
    }

    /// Sets what the prompt is for.
    #[must_use]
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }

    /// Adds an argument.
    #[must_use]
    pub fn argument(self, name: impl Into<String>, description: &str, required: bool) -> Self {
        self.completed_argument(name, description, required, Vec::<String>::new())
    }

    /// Adds an argument with the values completion offers for it (those starting with what
    /// the client typed, case-insensitively).
    #[must_use]
    pub fn completed_argument(
        mut self,
        name: impl Into<String>,
        description: &str,
        required: bool,
        values: impl IntoIterator<Item = impl Into<String>>,
    ) -> Self {
        let argument = PromptArgument::new(name)
            .with_description(description)
            .with_required(required);
        self.arguments
            .push((argument, values.into_iter().map(Into::into).collect()));
        self
    }

    /// Completes the prompt's arguments with the async function `f`, which is given the
    /// argument, what was typed so far and the values of the other arguments already chosen
    /// (it takes over from the values of [`completed_argument`](Self::completed_argument)).
    ///
    /// ```
    /// use tinyagent_mcp::{McpCompletion, McpPrompt, McpPromptMessage};
    ///
    /// let promote = McpPrompt::new("promote", |args| async move {
    ///     Ok(vec![McpPromptMessage::user(format!("Promote {}", args["name"]))])
    /// })
    /// .argument("department", "the department", true)
    /// .argument("name", "who", true)
    /// .completion(|request| async move {
    ///     let names: &[&str] = match request.context.get("department").map(String::as_str) {
    ///         Some("Sales") => &["David", "Eve", "Frank"],
    ///         _ => &[],
    ///     };
    ///     Ok(McpCompletion::new(names.iter().filter(|n| n.starts_with(&request.value)).copied()))
    /// });
    /// # let _ = promote;
    /// ```
    #[must_use]
    pub fn completion<F, Fut>(mut self, f: F) -> Self
    where
        F: Fn(McpCompletionRequest) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<McpCompletion, ToolError>> + Send + 'static,
    {
        self.completer = Some(completer(f));
        self
    }

    /// The prompt's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Whether it completes any argument.
    pub(super) fn completes(&self) -> bool {
        self.completer.is_some() || self.arguments.iter().any(|(_, values)| !values.is_empty())
    }
}
