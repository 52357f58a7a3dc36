//! Tools chosen per invocation: [`ToolResolver`], and [`resolver_fn`] for closures.

use std::fmt;
use std::future::Future;
use std::sync::Arc;

use crate::Tool;
use crate::context::Invocation;
use crate::error::ToolError;
use crate::util::BoxFuture;

/// Decides which tools an agent offers in one invocation: by the user's role in the session
/// state, by the topic, or by asking an MCP server.
///
/// An agent calls each of its resolvers once per invocation, before the first model call, and
/// merges the tools they return with its static tools; a name offered twice is an error naming
/// both sources. The set is then fixed for the invocation: the model may call only those
/// tools, and a tool offered in another invocation never runs in this one.
///
/// Most resolvers are closures, through [`resolver_fn`]; one with state of its own implements
/// the trait. Here a resolver offers a topic's tools when the user's message mentions it:
///
/// ```
/// use std::sync::Arc;
/// use tinyagent::{BoxFuture, Invocation, Session, Tool, ToolContext, ToolError, tools};
/// use tinyagent::tools::ToolResolver;
///
/// struct ByTopic(Vec<(&'static str, Arc<dyn Tool>)>);
///
/// impl ToolResolver for ByTopic {
///     fn resolve_tools<'a>(&'a self, inv: &'a Invocation)
///         -> BoxFuture<'a, Result<Vec<Arc<dyn Tool>>, ToolError>>
///     {
///         let text = inv.message().text().to_lowercase();
///         let offered = self.0.iter()
///             .filter(|(topic, _)| text.contains(topic))
///             .map(|(_, tool)| tool.clone())
///             .collect();
///         Box::pin(async move { Ok(offered) })
///     }
/// }
///
/// let tool = |name: &'static str| tools::new_tool(name, name, serde_json::json!({"type": "object"}),
///     |_ctx: ToolContext, _input: String| async move { Ok::<_, ToolError>(String::new()) });
/// let resolver = ByTopic(vec![("weather", tool("get_weather")), ("invoice", tool("find_invoice"))]);
///
/// # tokio_test::block_on(async {
/// let inv = Invocation::new(Session::new(), "What's the weather in Paris?");
/// let names: Vec<String> = resolver.resolve_tools(&inv).await?.iter().map(|t| t.name().to_owned()).collect();
/// assert_eq!(names, ["get_weather"]);
/// # Ok::<(), ToolError>(())
/// # }).unwrap();
/// ```
pub trait ToolResolver: Send + Sync {
    /// The tools to offer in `inv`.
    fn resolve_tools<'a>(
        &'a self,
        inv: &'a Invocation,
    ) -> BoxFuture<'a, Result<Vec<Arc<dyn Tool>>, ToolError>>;
}

impl<R: ToolResolver + ?Sized> ToolResolver for Arc<R> {
    fn resolve_tools<'a>(
        &'a self,
        inv: &'a Invocation,
    ) -> BoxFuture<'a, Result<Vec<Arc<dyn Tool>>, ToolError>> {
        (**self).resolve_tools(inv)
    }
}

/// Makes a closure `Fn(&Invocation) -> impl Future<Output = Result<Vec<Arc<dyn Tool>>, ToolError>>`
/// into a [`ToolResolver`].
///
/// The closure gets the invocation by reference and returns a future that owns what it needs
/// (read the session state before the `async` block), so it may outlive the borrow.
///
/// A role-based resolver: everyone gets the search tool, an admin also gets the database
/// tools.
///
/// ```
/// use std::sync::Arc;
/// use tinyagent::{Invocation, Session, Tool, ToolContext, ToolError, tools};
/// use tinyagent::tools::{ToolResolver, resolver_fn};
///
/// let tool = |name: &'static str| tools::new_tool(name, name, serde_json::json!({"type": "object"}),
///     |_ctx: ToolContext, _input: String| async move { Ok::<_, ToolError>(String::new()) });
/// let (search, db_query) = (tool("search"), tool("db_query"));
///
/// let by_role = resolver_fn(move |inv: &Invocation| {
///     let mut offered = vec![search.clone()];
///     if inv.session().get_str("role").as_deref() == Some("admin") {
///         offered.push(db_query.clone());
///     }
///     async move { Ok::<_, ToolError>(offered) }
/// });
///
/// # tokio_test::block_on(async {
/// let admin = Session::new();
/// admin.set("role", "admin");
/// let names = |tools: Vec<Arc<dyn Tool>>| tools.iter().map(|t| t.name().to_owned()).collect::<Vec<_>>();
/// assert_eq!(names(by_role.resolve_tools(&Invocation::new(admin, "hi")).await?), ["search", "db_query"]);
/// assert_eq!(names(by_role.resolve_tools(&Invocation::new(Session::new(), "hi")).await?), ["search"]);
/// # Ok::<(), ToolError>(())
/// # }).unwrap();
/// ```
pub fn resolver_fn<F, Fut>(f: F) -> ResolverFn<F>
where
    F: Fn(&Invocation) -> Fut + Send + Sync,
    Fut: Future<Output = Result<Vec<Arc<dyn Tool>>, ToolError>> + Send + 'static,
{
    ResolverFn(f)
}

/// A closure made into a [`ToolResolver`]; made by [`resolver_fn`].
#[derive(Clone, Copy)]
pub struct ResolverFn<F>(F);

impl<F> fmt::Debug for ResolverFn<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ResolverFn(..)")
    }
}

impl<F, Fut> ToolResolver for ResolverFn<F>
where
    F: Fn(&Invocation) -> Fut + Send + Sync,
    Fut: Future<Output = Result<Vec<Arc<dyn Tool>>, ToolError>> + Send + 'static,
{
    fn resolve_tools<'a>(
        &'a self,
        inv: &'a Invocation,
    ) -> BoxFuture<'a, Result<Vec<Arc<dyn Tool>>, ToolError>> {
        Box::pin((self.0)(inv))
    }
}
