//! `--tool-search`: when the tools are many (an MCP server with hundreds), each model call is
//! offered the few most relevant to the conversation, plus `search_tools` and `call_tool` to
//! reach the rest, instead of every definition in every request.

use std::sync::Arc;

use tinyagent::tools::middleware::ApprovalLayer;
use tinyagent::tools::{ToolResolver, ToolSearch, resolver_fn};
use tinyagent::{Invocation, Tool, ToolError};
use tinyagent_mcp::McpToolset;

use crate::cli::{SearchArgs, ToolSearchMode};

/// The tools an agent is given: its own, the MCP servers', and how many there are in all.
pub struct ToolSource {
    /// The built-in and A2A tools.
    pub tools: Vec<Arc<dyn Tool>>,
    /// The MCP servers, whose tools are resolved per run.
    pub toolsets: Vec<McpToolset>,
    /// How many tools there are now, all sources together.
    pub count: usize,
}

/// Whether `count` tools are searched rather than all offered.
fn searches(args: &SearchArgs, count: usize) -> bool {
    match args.tool_search {
        ToolSearchMode::Above(n) => count > n,
        ToolSearchMode::Off => false,
    }
}

/// A search over all the tools of `sources` when `--tool-search` says they are too many, each
/// in `confirm`'s approval (the agent's own middleware would only see `call_tool`); the
/// sources back otherwise. The search keeps following the MCP servers' tools: while they are
/// no more than the threshold, all are offered.
pub fn searched_tools(
    args: &SearchArgs,
    sources: ToolSource,
    confirm: Option<ApprovalLayer>,
) -> Result<ToolSearch, ToolSource> {
    if !searches(args, sources.count) {
        return Err(sources);
    }
    let own = sources.tools;
    let mut resolvers: Vec<Arc<dyn ToolResolver>> =
        vec![Arc::new(resolver_fn(move |_inv: &Invocation| {
            let tools = own.clone();
            async move { Ok::<_, ToolError>(tools) }
        }))];
    resolvers.extend(
        sources
            .toolsets
            .into_iter()
            .map(|t| Arc::new(t) as Arc<dyn ToolResolver>),
    );
    let offer_all_up_to = match args.tool_search {
        ToolSearchMode::Above(n) => n,
        ToolSearchMode::Off => usize::MAX,
    };
    let mut search = ToolSearch::from_resolvers(resolvers)
        .offer_all_up_to(offer_all_up_to)
        .max_tools(usize::from(args.tool_search_results));
    if let Some(layer) = confirm {
        search = search.middleware([layer.into()]);
    }
    Ok(search)
}

/// For `eval`: a search over `tools` when `--tool-search` says they are too many.
pub fn eval_search(args: &SearchArgs, tools: &[Arc<dyn Tool>]) -> Option<ToolSearch> {
    let ToolSearchMode::Above(n) = args.tool_search else {
        return None;
    };
    searches(args, tools.len()).then(|| {
        ToolSearch::new(tools.iter().cloned())
            .offer_all_up_to(n)
            .max_tools(usize::from(args.tool_search_results))
    })
}
