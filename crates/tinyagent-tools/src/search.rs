//! [`ToolSearch`]: a large set of tools behind a search, so that a request carries the few
//! tools the conversation needs instead of hundreds of definitions.

use std::sync::{Arc, Mutex};

use serde_json::{Value, json};

use super::middleware::ToolMiddleware;
use super::search_index::Index;
use super::{ToolInput, ToolOutput, ToolResolver, wrap_tool};
use crate::context::{Invocation, ToolContext};
use crate::error::ToolError;
use crate::message::Role;
use crate::util::BoxFuture;
use crate::{Tool, ToolHints};

/// Default of [`ToolSearch::max_tools`].
pub const DEFAULT_SEARCH_RESULTS: usize = 8;
/// Default of [`ToolSearch::offer_all_up_to`].
pub const DEFAULT_OFFER_ALL_UP_TO: usize = 20;

/// The name of the search tool a [`ToolSearch`] offers.
pub const SEARCH_TOOL: &str = "search_tools";
/// The name of the tool that calls any tool of a [`ToolSearch`] by name.
pub const CALL_TOOL: &str = "call_tool";

/// A [`ToolResolver`] over many tools (from MCP servers, a registry, anywhere): each
/// invocation is offered the tools most relevant to the conversation, found by BM25 over the
/// tools' names, descriptions and parameters (no external service), plus two tools to reach
/// the rest: `search_tools` (`{"query"}` → the matching tools with their schemas) and
/// `call_tool` (`{"name", "arguments"}` → calls any of them, its arguments checked as usual by
/// the tool itself). With [`offer_all_up_to`](Self::offer_all_up_to) tools or fewer, all are
/// offered and nothing is searched.
///
/// The agent's middleware wraps `call_tool` as one tool, so a rule keyed on a tool's name (an
/// approval policy, a limit) does not see the tool `call_tool` calls: give the tools their own
/// middleware before indexing them ([`wrap_tool`](super::wrap_tool)). A name indexed twice is
/// indexed once (the first); a tool the agent also offers statically should not be indexed.
///
/// The text searched is the current message and the user's two messages before it. Words are
/// split on case, digits and punctuation; Chinese, Japanese and Korean text is matched by
/// characters and pairs of characters, so "北京天气怎么样？" finds a tool described as "获取指定城
/// 市的当前天气".
///
/// ```
/// use std::sync::Arc;
/// use tinyagent::{Invocation, Session, Tool, ToolError, tools};
/// use tinyagent::tools::{ToolResolver, ToolSearch};
///
/// let mut many: Vec<Arc<dyn Tool>> = (0..300)
///     .map(|i| tools::new_tool(format!("report_{i}"), format!("Builds sales report number {i}"),
///         serde_json::json!({"type": "object"}),
///         |_ctx, _input: String| async move { Ok::<_, ToolError>("done".to_owned()) }))
///     .collect();
/// many.push(tools::new_tool("get_weather", "The current weather of a city",
///     serde_json::json!({"type": "object", "properties": {"city": {"type": "string"}}}),
///     |_ctx, _input: String| async move { Ok::<_, ToolError>("sunny".to_owned()) }));
/// let search = ToolSearch::new(many).max_tools(3);
/// # tokio_test::block_on(async {
/// let inv = Invocation::new(Session::new(), "What's the weather in Paris?");
/// let offered: Vec<String> = search.resolve_tools(&inv).await?.iter().map(|t| t.name().to_owned()).collect();
/// assert_eq!(offered[0], "get_weather");
/// assert!(offered.len() <= 5 && offered.contains(&"search_tools".to_owned()));
/// # Ok::<(), ToolError>(())
/// # }).unwrap();
/// ```
#[derive(Clone)]
pub struct ToolSearch {
    source: Source,
    middleware: Arc<[ToolMiddleware]>,
    max_tools: usize,
    offer_all_up_to: usize,
}

/// Where a search's tools come from.
#[derive(Clone)]
enum Source {
    /// Tools given once, indexed once.
    Fixed(Arc<Index>),
    /// Tools resolvers give each invocation; the index of the last set, kept while the set
    /// stays the same tools.
    Resolved {
        resolvers: Arc<[Arc<dyn ToolResolver>]>,
        last: Arc<Mutex<Option<Indexed>>>,
    },
}

/// An index and the tools it was built from, by address (the index holds them, so no other
/// tool can take an address while it is kept).
struct Indexed {
    tools: Vec<usize>,
    index: Arc<Index>,
}

impl std::fmt::Debug for ToolSearch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let tools = self.last_index().map_or(0, |index| index.tools.len());
        f.debug_struct("ToolSearch")
            .field("tools", &tools)
            .field("resolved", &matches!(self.source, Source::Resolved { .. }))
            .field("max_tools", &self.max_tools)
            .field("offer_all_up_to", &self.offer_all_up_to)
            .finish()
    }
}

impl ToolSearch {
    /// A search over `tools` (indexed once, here).
    pub fn new(tools: impl IntoIterator<Item = Arc<dyn Tool>>) -> Self {
        let tools: Vec<Arc<dyn Tool>> = tools.into_iter().collect();
        Self::from_source(Source::Fixed(Arc::new(Index::new(tools.clone(), tools))))
    }

    /// A search over the tools `resolvers` give each invocation, in order (MCP toolsets,
    /// whose tools change when a server says so, or [`resolver_fn`](super::resolver_fn)
    /// returning fixed tools). The tools are indexed again only when the set changes: the
    /// same tools (the same `Arc`s) keep the index. A resolver that fails fails the
    /// invocation, as it would without the search.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use tinyagent::{Invocation, Session, Tool, ToolError, tools};
    /// use tinyagent::tools::{ToolResolver, ToolSearch, resolver_fn};
    ///
    /// let many: Arc<[Arc<dyn Tool>]> = (0..100)
    ///     .map(|i| tools::new_tool(format!("report_{i}"), format!("Builds sales report {i}"),
    ///         serde_json::json!({"type": "object"}),
    ///         |_ctx, _input: String| async move { Ok::<_, ToolError>("done".to_owned()) }))
    ///     .collect();
    /// let registry = resolver_fn(move |_inv: &Invocation| {
    ///     let tools = many.to_vec();
    ///     async move { Ok::<_, ToolError>(tools) }
    /// });
    /// let search = ToolSearch::from_resolvers([Arc::new(registry) as Arc<dyn ToolResolver>]);
    /// # tokio_test::block_on(async {
    /// let inv = Invocation::new(Session::new(), "the sales report 42");
    /// let offered = search.resolve_tools(&inv).await?;
    /// assert_eq!(offered[0].name(), "report_42");
    /// # Ok::<(), ToolError>(())
    /// # }).unwrap();
    /// ```
    pub fn from_resolvers(resolvers: impl IntoIterator<Item = Arc<dyn ToolResolver>>) -> Self {
        Self::from_source(Source::Resolved {
            resolvers: resolvers.into_iter().collect(),
            last: Arc::new(Mutex::new(None)),
        })
    }

    fn from_source(source: Source) -> Self {
        Self {
            source,
            middleware: Arc::from([]),
            max_tools: DEFAULT_SEARCH_RESULTS,
            offer_all_up_to: DEFAULT_OFFER_ALL_UP_TO,
        }
    }

    /// Wraps every tool searched in `middleware` (the first listed outermost), so that rules
    /// keyed on a tool's name (an approval policy, a limit) see the calls `call_tool` makes
    /// too: the agent's own middleware sees only `call_tool`. Replaces middleware set before.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use tinyagent::{Tool, ToolError, tools};
    /// use tinyagent::tools::ToolSearch;
    /// use tinyagent::tools::middleware::{Approval, ApprovalLayer, ApprovalRequest, approval_fn};
    ///
    /// let tools: Vec<Arc<dyn Tool>> = vec![tools::new_tool("send_email", "Sends an email",
    ///     serde_json::json!({"type": "object"}),
    ///     |_ctx, _input: String| async move { Ok::<_, ToolError>("sent".to_owned()) })];
    /// let ask = ApprovalLayer::new(approval_fn(|req: ApprovalRequest| async move {
    ///     Approval::defer(format!("{} waits for a person", req.tool))
    /// }));
    /// let search = ToolSearch::new(tools).middleware([ask.into()]);
    /// # let _ = search;
    /// ```
    #[must_use]
    pub fn middleware(mut self, middleware: impl IntoIterator<Item = ToolMiddleware>) -> Self {
        self.middleware = middleware.into_iter().collect();
        self.source = match &self.source {
            Source::Fixed(index) => Source::Fixed(Arc::new(Index::new(
                index
                    .unwrapped
                    .iter()
                    .map(|tool| self.wrap(tool.clone()))
                    .collect(),
                index.unwrapped.clone(),
            ))),
            Source::Resolved { resolvers, .. } => Source::Resolved {
                resolvers: resolvers.clone(),
                last: Arc::new(Mutex::new(None)),
            },
        };
        self
    }

    /// `tool` in the search's middleware.
    fn wrap(&self, tool: Arc<dyn Tool>) -> Arc<dyn Tool> {
        wrap_tool(tool, self.middleware.iter().cloned())
    }

    /// The index searched: the fixed tools', or the one of the tools resolved last.
    fn last_index(&self) -> Option<Arc<Index>> {
        match &self.source {
            Source::Fixed(index) => Some(index.clone()),
            Source::Resolved { last, .. } => lock(last).as_ref().map(|l| l.index.clone()),
        }
    }

    /// The index of the tools for `inv`: for resolved tools, theirs, built again only when
    /// they changed.
    async fn index_for(&self, inv: &Invocation) -> Result<Arc<Index>, ToolError> {
        let (resolvers, last) = match &self.source {
            Source::Fixed(index) => return Ok(index.clone()),
            Source::Resolved { resolvers, last } => (resolvers, last),
        };
        let mut tools = Vec::new();
        for resolver in resolvers.iter() {
            tools.extend(resolver.resolve_tools(inv).await?);
        }
        let addresses: Vec<usize> = tools
            .iter()
            .map(|t| Arc::as_ptr(t).cast::<()>().addr())
            .collect();
        if let Some(indexed) = lock(last).as_ref() {
            if indexed.tools == addresses {
                return Ok(indexed.index.clone());
            }
        }
        let wrapped = tools.iter().map(|tool| self.wrap(tool.clone())).collect();
        let index = Arc::new(Index::new(wrapped, tools));
        *lock(last) = Some(Indexed {
            tools: addresses,
            index: index.clone(),
        });
        Ok(index)
    }

    /// Sets how many found tools are offered per invocation, and returned per search
    /// (default 8).
    #[must_use]
    pub fn max_tools(mut self, n: usize) -> Self {
        self.max_tools = n.max(1);
        self
    }

    /// Sets up to how many tools all are offered without searching (default 20).
    #[must_use]
    pub fn offer_all_up_to(mut self, n: usize) -> Self {
        self.offer_all_up_to = n;
        self
    }

    /// The names of the tools most relevant to `query`, best first (at most
    /// [`max_tools`](Self::max_tools); only tools that match at all). A search
    /// [`from_resolvers`](Self::from_resolvers) searches the tools they gave last (none before
    /// its first invocation).
    pub fn search(&self, query: &str) -> Vec<String> {
        let Some(index) = self.last_index() else {
            return Vec::new();
        };
        index
            .search(query, self.max_tools)
            .into_iter()
            .map(|i| index.tools[i].name().to_owned())
            .collect()
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

impl ToolResolver for ToolSearch {
    fn resolve_tools<'a>(
        &'a self,
        inv: &'a Invocation,
    ) -> BoxFuture<'a, Result<Vec<Arc<dyn Tool>>, ToolError>> {
        Box::pin(async move {
            let index = self.index_for(inv).await?;
            if index.tools.len() <= self.offer_all_up_to {
                return Ok(index.tools.clone());
            }
            let mut query = inv.message().text();
            let earlier = inv.session().messages();
            for message in earlier
                .iter()
                .rev()
                .filter(|m| m.role == Role::User)
                .take(2)
            {
                query.push(' ');
                query.push_str(&message.text());
            }
            let mut offered: Vec<Arc<dyn Tool>> = index
                .search(&query, self.max_tools)
                .into_iter()
                .map(|i| index.tools[i].clone())
                .collect();
            offered.push(Arc::new(SearchTool {
                index: index.clone(),
                max_tools: self.max_tools,
                schema: json!({
                    "type": "object",
                    "properties": {"query": {"type": "string", "description": "what the tool should do, in a few words"}},
                    "required": ["query"]
                }),
            }));
            offered.push(Arc::new(CallTool {
                index,
                schema: json!({
                    "type": "object",
                    "properties": {
                        "name": {"type": "string", "description": "the tool's name, as search_tools gave it"},
                        "arguments": {"type": "object", "description": "the tool's arguments, as its input schema says"}
                    },
                    "required": ["name", "arguments"]
                }),
            }));
            Ok(offered)
        })
    }
}

/// `search_tools`: the tools matching a query, with their schemas.
struct SearchTool {
    index: Arc<Index>,
    max_tools: usize,
    schema: Value,
}

impl Tool for SearchTool {
    fn name(&self) -> &str {
        SEARCH_TOOL
    }

    fn description(&self) -> &str {
        "Finds tools for a task among many more than are listed: give what the tool should do; \
         call one of them with call_tool"
    }

    fn input_schema(&self) -> &Value {
        &self.schema
    }

    fn hints(&self) -> ToolHints {
        ToolHints::READ_ONLY.open_world(false)
    }

    fn call<'a>(
        &'a self,
        _ctx: &'a ToolContext,
        input: ToolInput,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let value = input.into_value()?;
            let query = value
                .get("query")
                .and_then(Value::as_str)
                .ok_or_else(|| ToolError::invalid_input("missing field `query` (a string)"))?;
            let found: Vec<Value> = self
                .index
                .search(query, self.max_tools)
                .into_iter()
                .map(|i| {
                    let tool = &self.index.tools[i];
                    json!({
                        "name": tool.name(),
                        "description": tool.description(),
                        "input_schema": tool.input_schema(),
                    })
                })
                .collect();
            Ok(ToolOutput::structured(json!({ "tools": found })))
        })
    }
}

/// `call_tool`: calls any of the tools by name.
struct CallTool {
    index: Arc<Index>,
    schema: Value,
}

impl Tool for CallTool {
    fn name(&self) -> &str {
        CALL_TOOL
    }

    fn description(&self) -> &str {
        "Calls a tool found with search_tools, by its name, with arguments for its input schema"
    }

    fn input_schema(&self) -> &Value {
        &self.schema
    }

    fn call<'a>(
        &'a self,
        ctx: &'a ToolContext,
        input: ToolInput,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let value = input.into_value()?;
            let name = value
                .get("name")
                .and_then(Value::as_str)
                .ok_or_else(|| ToolError::invalid_input("missing field `name` (a string)"))?;
            let Some(&i) = self.index.by_name.get(name) else {
                return Err(ToolError::not_found(format!(
                    "no tool is named {name:?}; find one with search_tools"
                )));
            };
            let arguments = value.get("arguments").cloned().unwrap_or_else(|| json!({}));
            let tool = &self.index.tools[i];
            super::call_catching_panics(tool.as_ref(), ctx, ToolInput::from_value(arguments)).await
        })
    }
}
