//! What is stored and called: [`Tool`], [`Handler`], [`HandleFunc`], and the
//! [`ToolHints`] a tool declares.

use std::fmt;
use std::future::Future;
use std::sync::Arc;

use serde_json::Value;

use crate::context::ToolContext;
use crate::error::ToolError;
use crate::util::BoxFuture;

/// Something a model can call: TinyAgent's `Tool` interface.
///
/// A tool has a unique [`name`](Self::name) the model calls it by, a
/// [`description`](Self::description) the model reads to decide when to call it, a JSON Schema
/// of its input ([`input_schema`](Self::input_schema), built once when the tool is made), and
/// an async [`handle`](Self::handle) that takes the model's raw JSON arguments and returns text.
/// Strings are the lingua franca between model and tool.
///
/// The trait is object safe; tools are stored and passed around as `Arc<dyn Tool>`. Most tools
/// are made with [`tools::new_func`](crate::tools::new_func) (typed) or
/// [`tools::new_tool`](crate::tools::new_tool) (hand-written schema), but implementing the trait
/// by hand is fine too:
///
/// ```
/// use std::sync::Arc;
/// use serde_json::{json, Value};
/// use tinyagent::{BoxFuture, Tool, ToolContext, ToolError};
///
/// struct Echo {
///     schema: Value,
/// }
///
/// impl Tool for Echo {
///     fn name(&self) -> &str { "echo" }
///     fn description(&self) -> &str { "Returns its input unchanged" }
///     fn input_schema(&self) -> &Value { &self.schema }
///     fn handle<'a>(&'a self, _ctx: &'a ToolContext, input: &'a str)
///         -> BoxFuture<'a, Result<String, ToolError>>
///     {
///         Box::pin(async move { Ok(input.to_owned()) })
///     }
/// }
///
/// # tokio_test::block_on(async {
/// let tool: Arc<dyn Tool> = Arc::new(Echo { schema: json!({"type": "object"}) });
/// let out = tool.handle(&ToolContext::default(), r#"{"x":1}"#).await?;
/// assert_eq!(out, r#"{"x":1}"#);
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

    /// Runs the tool on the model's raw JSON arguments.
    fn handle<'a>(
        &'a self,
        ctx: &'a ToolContext,
        input: &'a str,
    ) -> BoxFuture<'a, Result<String, ToolError>>;
}

impl fmt::Debug for dyn Tool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Tool")
            .field("name", &self.name())
            .field("description", &self.description())
            .finish_non_exhaustive()
    }
}

/// The execution half of a tool, on its own so that it can be composed (TinyAgent's `Handler`).
///
/// Middleware wraps a handler in another handler; [`tools::json_adapter`](crate::tools::json_adapter)
/// turns a typed function into one; [`handler_fn`] turns a closure into one.
///
/// A handler with state of its own implements the trait directly:
///
/// ```
/// use std::sync::atomic::{AtomicU64, Ordering};
/// use tinyagent::{BoxFuture, Handler, ToolContext, ToolError};
///
/// /// Numbers the calls it handles.
/// #[derive(Default)]
/// struct Ticket(AtomicU64);
///
/// impl Handler for Ticket {
///     fn handle<'a>(&'a self, _ctx: &'a ToolContext, input: &'a str)
///         -> BoxFuture<'a, Result<String, ToolError>>
///     {
///         let n = self.0.fetch_add(1, Ordering::Relaxed) + 1;
///         Box::pin(async move { Ok(format!("ticket {n}: {input}")) })
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
    /// Handles one call with the raw input.
    fn handle<'a>(
        &'a self,
        ctx: &'a ToolContext,
        input: &'a str,
    ) -> BoxFuture<'a, Result<String, ToolError>>;
}

impl<H: Handler + ?Sized> Handler for Arc<H> {
    fn handle<'a>(
        &'a self,
        ctx: &'a ToolContext,
        input: &'a str,
    ) -> BoxFuture<'a, Result<String, ToolError>> {
        (**self).handle(ctx, input)
    }
}

impl<H: Handler + ?Sized> Handler for Box<H> {
    fn handle<'a>(
        &'a self,
        ctx: &'a ToolContext,
        input: &'a str,
    ) -> BoxFuture<'a, Result<String, ToolError>> {
        (**self).handle(ctx, input)
    }
}

/// A closure made into a [`Handler`] (TinyAgent's `HandleFunc`); made by [`handler_fn`].
#[derive(Clone, Copy)]
pub struct HandleFunc<F>(F);

/// Makes a closure `Fn(ToolContext, String) -> impl Future<Output = Result<String, ToolError>>`
/// into a [`Handler`], the way tower's `service_fn` makes a closure into a service.
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
    fn handle<'a>(
        &'a self,
        ctx: &'a ToolContext,
        input: &'a str,
    ) -> BoxFuture<'a, Result<String, ToolError>> {
        Box::pin((self.0)(ctx.clone(), input.to_owned()))
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
/// let lookup = ToolHints::read_only();
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
    /// [`tools::with_spawn_blocking`](crate::tools::with_spawn_blocking). Not an MCP annotation.
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
    pub const fn read_only() -> Self {
        Self {
            read_only: true,
            destructive: false,
            idempotent: true,
            open_world: true,
            plain_text: false,
            blocking: false,
        }
    }

    /// Sets [`read_only`](Self::read_only).
    #[must_use]
    pub const fn with_read_only(mut self, value: bool) -> Self {
        self.read_only = value;
        self
    }

    /// Sets [`destructive`](Self::destructive).
    #[must_use]
    pub const fn with_destructive(mut self, value: bool) -> Self {
        self.destructive = value;
        self
    }

    /// Sets [`idempotent`](Self::idempotent).
    #[must_use]
    pub const fn with_idempotent(mut self, value: bool) -> Self {
        self.idempotent = value;
        self
    }

    /// Sets [`open_world`](Self::open_world).
    #[must_use]
    pub const fn with_open_world(mut self, value: bool) -> Self {
        self.open_world = value;
        self
    }

    /// Sets [`plain_text`](Self::plain_text).
    #[must_use]
    pub const fn with_plain_text(mut self, value: bool) -> Self {
        self.plain_text = value;
        self
    }

    /// Sets [`blocking`](Self::blocking).
    #[must_use]
    pub const fn with_blocking(mut self, value: bool) -> Self {
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
        assert!(ToolHints::read_only().is_repeatable());
    }
}
