//! What is stored and called: [`Tool`], [`Handler`], [`HandleFunc`], and the
//! [`ToolHints`] a tool declares.

use std::fmt;
use std::future::Future;
use std::sync::Arc;

use serde_json::Value;

use super::{ToolInput, ToolOutput};
use crate::context::ToolContext;
use crate::error::ToolError;
use crate::model::ToolDefinition;
use crate::util::BoxFuture;

/// Something a model can call.
///
/// A tool has a unique [`name`](Self::name) the model calls it by, a
/// [`description`](Self::description) the model reads to decide when to call it, a JSON Schema
/// of its input ([`input_schema`](Self::input_schema), built once when the tool is made), and
/// an async [`call`](Self::call) that takes the call's [`ToolInput`] (the model's text and, once
/// read, its JSON value) and gives one [`ToolOutput`] (text, content parts such as images, and
/// structured content). [`handle`](Self::handle) is a text-in, text-out shortcut onto it.
///
/// The trait is object safe; tools are stored and passed around as `Arc<dyn Tool>`. Most tools
/// are made with [`tools::new_func`](crate::new_func) (typed) or
/// [`tools::new_tool`](crate::new_tool) (hand-written schema), but implementing the trait
/// by hand is fine too:
///
/// ```
/// use std::sync::Arc;
/// use serde_json::{json, Value};
/// use tinyagent::{BoxFuture, Tool, ToolContext, ToolError};
/// use tinyagent::tools::{ToolInput, ToolOutput};
///
/// struct Echo {
///     schema: Value,
/// }
///
/// impl Tool for Echo {
///     fn name(&self) -> &str { "echo" }
///     fn description(&self) -> &str { "Returns its input unchanged" }
///     fn input_schema(&self) -> &Value { &self.schema }
///     fn call<'a>(&'a self, _ctx: &'a ToolContext, input: ToolInput)
///         -> BoxFuture<'a, Result<ToolOutput, ToolError>>
///     {
///         Box::pin(async move { Ok(ToolOutput::text(input.text())) })
///     }
/// }
///
/// # tokio_test::block_on(async {
/// let tool: Arc<dyn Tool> = Arc::new(Echo { schema: json!({"type": "object"}) });
/// let out = tool.call(&ToolContext::default(), ToolInput::from_text(r#"{"x":1}"#)).await?;
/// assert_eq!(out.as_text(), r#"{"x":1}"#);
/// assert_eq!(tool.handle(&ToolContext::default(), "{}").await?, "{}");
/// # Ok::<(), ToolError>(())
/// # }).unwrap();
/// ```
pub trait Tool: Send + Sync {
    /// The unique name the model calls the tool by (`^[a-zA-Z0-9_-]{1,64}$`).
    fn name(&self) -> &str;

    /// What the tool does, written for the model.
    fn description(&self) -> &str;

    /// The JSON Schema of the tool's input; its root is an object. Computed once, not per call.
    fn input_schema(&self) -> &Value;

    /// What calling the tool may do to the world (MCP's tool annotations).
    ///
    /// The default assumes the worst: the tool writes, may destroy, is not idempotent and
    /// reaches outside the process.
    fn hints(&self) -> ToolHints {
        ToolHints::default()
    }

    /// A human-readable name for user interfaces (MCP's `title`); the model calls the tool
    /// by [`name`](Self::name). None by default.
    fn title(&self) -> Option<&str> {
        None
    }

    /// The JSON Schema of the tool's structured content (MCP's `outputSchema`), when its
    /// results carry structured content. None by default.
    fn output_schema(&self) -> Option<&Value> {
        None
    }

    /// What a model is told of this tool: its name, description, input schema, title and
    /// output schema, as the methods above give them.
    fn definition(&self) -> ToolDefinition {
        let mut definition =
            ToolDefinition::new(self.name(), self.description(), self.input_schema().clone());
        if let Some(title) = self.title() {
            definition = definition.title(title);
        }
        if let Some(schema) = self.output_schema() {
            definition = definition.output_schema(schema.clone());
        }
        definition
    }

    /// Runs the tool on one call's input.
    fn call<'a>(
        &'a self,
        ctx: &'a ToolContext,
        input: ToolInput,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>>;

    /// Runs the tool on the model's raw arguments and gives the text of its output (content
    /// parts as their text rendering; an error output as an error). A shortcut onto
    /// [`call`](Self::call).
    fn handle<'a>(
        &'a self,
        ctx: &'a ToolContext,
        input: &'a str,
    ) -> BoxFuture<'a, Result<String, ToolError>> {
        Box::pin(async move { text_of(self.call(ctx, ToolInput::from_text(input)).await) })
    }
}

/// The text of a call's outcome, an error output being an error.
fn text_of(outcome: Result<ToolOutput, ToolError>) -> Result<String, ToolError> {
    outcome.and_then(ToolOutput::into_result)
}

impl fmt::Debug for dyn Tool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Tool")
            .field("name", &self.name())
            .field("description", &self.description())
            .finish_non_exhaustive()
    }
}

/// The execution half of a tool, on its own so that it can be composed.
///
/// Middleware wraps a handler in another handler; [`tools::json_adapter`](crate::json_adapter)
/// turns a typed function into one; [`handler_fn`] turns a text-in, text-out closure into one.
///
/// A handler with state of its own implements the trait directly:
///
/// ```
/// use std::sync::atomic::{AtomicU64, Ordering};
/// use tinyagent::{BoxFuture, Handler, ToolContext, ToolError};
/// use tinyagent::tools::{ToolInput, ToolOutput};
///
/// /// Numbers the calls it handles.
/// #[derive(Default)]
/// struct Ticket(AtomicU64);
///
/// impl Handler for Ticket {
///     fn call<'a>(&'a self, _ctx: &'a ToolContext, input: ToolInput)
///         -> BoxFuture<'a, Result<ToolOutput, ToolError>>
///     {
///         let n = self.0.fetch_add(1, Ordering::Relaxed) + 1;
///         Box::pin(async move { Ok(ToolOutput::text(format!("ticket {n}: {}", input.text()))) })
///     }
/// }
///
/// # tokio_test::block_on(async {
/// let tickets = Ticket::default();
/// let ctx = ToolContext::default();
/// assert_eq!(tickets.handle(&ctx, "printer jam").await?, "ticket 1: printer jam");
/// assert_eq!(tickets.handle(&ctx, "no coffee").await?, "ticket 2: no coffee");
/// # Ok::<(), ToolError>(())
/// # }).unwrap();
/// ```
pub trait Handler: Send + Sync {
    /// Handles one call.
    fn call<'a>(
        &'a self,
        ctx: &'a ToolContext,
        input: ToolInput,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>>;

    /// Handles one call given as raw text and gives the text of its output. A shortcut onto
    /// [`call`](Self::call).
    fn handle<'a>(
        &'a self,
        ctx: &'a ToolContext,
        input: &'a str,
    ) -> BoxFuture<'a, Result<String, ToolError>> {
        Box::pin(async move { text_of(self.call(ctx, ToolInput::from_text(input)).await) })
    }
}

impl<H: Handler + ?Sized> Handler for Arc<H> {
    fn call<'a>(
        &'a self,
        ctx: &'a ToolContext,
        input: ToolInput,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        (**self).call(ctx, input)
    }
}

impl<H: Handler + ?Sized> Handler for Box<H> {
    fn call<'a>(
        &'a self,
        ctx: &'a ToolContext,
        input: ToolInput,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        (**self).call(ctx, input)
    }
}

/// A closure made into a [`Handler`]; made by [`handler_fn`].
#[derive(Clone, Copy)]
pub struct HandleFunc<F>(F);

/// Makes a closure `Fn(ToolContext, String) -> impl Future<Output = Result<String, ToolError>>`
/// into a [`Handler`], the way tower's `service_fn` makes a closure into a service: a
/// text-in, text-out shape, on the typed seam (the closure gets the input's text; its text is
/// the output).
///
/// The closure gets its own clone of the context and its own copy of the input, so the future
/// it returns may hold them across awaits.
///
/// ```
/// use tinyagent::{Handler, ToolContext, ToolError, handler_fn};
///
/// let hello = handler_fn(|_ctx: ToolContext, input: String| async move {
///     Ok::<_, ToolError>(format!("hello, {input}"))
/// });
/// # tokio_test::block_on(async {
/// assert_eq!(hello.handle(&ToolContext::default(), "world").await?, "hello, world");
/// # Ok::<(), ToolError>(())
/// # }).unwrap();
/// ```
pub fn handler_fn<F, Fut>(f: F) -> HandleFunc<F>
where
    F: Fn(ToolContext, String) -> Fut + Send + Sync,
    Fut: Future<Output = Result<String, ToolError>> + Send + 'static,
{
    HandleFunc(f)
}

impl<F> fmt::Debug for HandleFunc<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("HandleFunc(..)")
    }
}

impl<F, Fut> Handler for HandleFunc<F>
where
    F: Fn(ToolContext, String) -> Fut + Send + Sync,
    Fut: Future<Output = Result<String, ToolError>> + Send + 'static,
{
    fn call<'a>(
        &'a self,
        ctx: &'a ToolContext,
        input: ToolInput,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        let text = (self.0)(ctx.clone(), input.text().to_owned());
        Box::pin(async move { text.await.map(ToolOutput::text) })
    }
}

/// What calling a tool may do, mirroring MCP's tool annotations.
///
/// Middleware and the agent loop read these: a cache only keeps results of read-only or
/// idempotent tools, retries only repeat idempotent or read-only ones, and tool calls run in
/// parallel only when no tool in the batch is marked as needing exclusive, ordered execution.
///
/// The default is the safe assumption for an unknown tool, the same as MCP's: not read-only,
/// destructive, not idempotent, open-world.
///
/// ```
/// use tinyagent::ToolHints;
///
/// let lookup = ToolHints::READ_ONLY;
/// assert!(lookup.read_only && !lookup.destructive && lookup.idempotent);
/// assert!(!ToolHints::default().read_only);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct ToolHints {
    /// The tool does not change its environment.
    pub read_only: bool,
    /// The tool may perform destructive updates (only meaningful when not read-only).
    pub destructive: bool,
    /// Calling the tool again with the same arguments has no further effect.
    pub idempotent: bool,
    /// The tool interacts with an open world of external entities (the web, other services).
    pub open_world: bool,
    /// Besides the JSON object its schema describes, the tool takes plain text as its input
    /// (agent tools take it as the message). Only such a tool is handed arguments that are
    /// not a JSON object; any other tool's arguments must be JSON that passes its schema, or
    /// the tool does not run. Not an MCP annotation.
    pub plain_text: bool,
    /// The tool blocks the thread it runs on (synchronous I/O, heavy computation,
    /// `std::thread::sleep`). An agent runs its calls on Tokio's blocking thread pool, so that
    /// a timeout returns on time and the other calls of the step go on; see
    /// [`SpawnBlockingLayer`](crate::middleware::SpawnBlockingLayer). Not an MCP
    /// annotation.
    pub blocking: bool,
}

impl Default for ToolHints {
    fn default() -> Self {
        Self {
            read_only: false,
            destructive: true,
            idempotent: false,
            open_world: true,
            plain_text: false,
            blocking: false,
        }
    }
}

impl ToolHints {
    /// Hints of a tool that only reads: read-only, not destructive, idempotent, open-world.
    pub const READ_ONLY: Self = Self {
        read_only: true,
        destructive: false,
        idempotent: true,
        open_world: true,
        plain_text: false,
        blocking: false,
    };

    /// Sets [`read_only`](Self::read_only).
    #[must_use]
    pub const fn read_only(mut self, value: bool) -> Self {
        self.read_only = value;
        self
    }

    /// Sets [`destructive`](Self::destructive).
    #[must_use]
    pub const fn destructive(mut self, value: bool) -> Self {
        self.destructive = value;
        self
    }

    /// Sets [`idempotent`](Self::idempotent).
    #[must_use]
    pub const fn idempotent(mut self, value: bool) -> Self {
        self.idempotent = value;
        self
    }

    /// Sets [`open_world`](Self::open_world).
    #[must_use]
    pub const fn open_world(mut self, value: bool) -> Self {
        self.open_world = value;
        self
    }

    /// Sets [`plain_text`](Self::plain_text).
    #[must_use]
    pub const fn plain_text(mut self, value: bool) -> Self {
        self.plain_text = value;
        self
    }

    /// Sets [`blocking`](Self::blocking).
    #[must_use]
    pub const fn blocking(mut self, value: bool) -> Self {
        self.blocking = value;
        self
    }

    /// Whether repeating a call is harmless: the tool is read-only or idempotent.
    pub const fn is_repeatable(&self) -> bool {
        self.read_only || self.idempotent
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_hints_assume_the_worst() {
        let h = ToolHints::default();
        assert!(!h.read_only && h.destructive && !h.idempotent && h.open_world);
        assert!(!h.is_repeatable());
        assert!(ToolHints::READ_ONLY.is_repeatable());
    }
}
