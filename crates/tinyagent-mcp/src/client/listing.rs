//! A server's tool list as the tools a toolset offers: each a [`McpTool`] under a valid,
//! unique name, with its hints, and what the toolset tells about it ([`McpToolInfo`]).

use std::sync::Arc;

use serde_json::Value;
use tinyagent::{Tool, ToolHints};

use super::connection::Inner;
use super::naming::offered_names;
use super::remote_tool::{McpTool, McpToolInfo, PeerSource};
use super::restart::Link;
use super::stdio::ChildOutput;

/// The tools a server lists, as offered to a model (those left out by the toolset's filter,
/// or needing MCP task support, are not), and what the toolset tells about each.
pub(super) fn offered_tools(
    inner: &Arc<Inner>,
    listed: Vec<rmcp::model::Tool>,
    output: Option<&ChildOutput>,
) -> (Vec<Arc<dyn Tool>>, Vec<McpToolInfo>) {
    let link: Arc<dyn PeerSource> = Arc::new(Link::new(inner));
    let label: Arc<str> = Arc::from(inner.label.as_str());
    let remote: Vec<&str> = listed.iter().map(|t| t.name.as_ref()).collect();
    let names = offered_names(&inner.prefix, &remote);
    let mut tools: Vec<Arc<dyn Tool>> = Vec::with_capacity(listed.len());
    let mut infos = Vec::with_capacity(listed.len());
    for (tool, name) in listed.iter().zip(names) {
        let remote = tool.name.to_string();
        let Some(name) = name else {
            tracing::warn!(server = %inner.label, tool = %remote,
                "the MCP server lists this tool twice; offering the first");
            continue;
        };
        let title = tool
            .title
            .clone()
            .or_else(|| tool.annotations.as_ref().and_then(|a| a.title.clone()));
        let hints = tool
            .annotations
            .as_ref()
            .map_or_else(ToolHints::default, |a| {
                let d = ToolHints::default();
                d.read_only(a.read_only_hint.unwrap_or(d.read_only))
                    .destructive(a.destructive_hint.unwrap_or(d.destructive))
                    .idempotent(a.idempotent_hint.unwrap_or(d.idempotent))
                    .open_world(a.open_world_hint.unwrap_or(d.open_world))
            });
        let not_offered = if inner.filter.as_ref().is_some_and(|keep| !keep(&remote)) {
            Some("left out by the toolset's filter".to_owned())
        } else if output.is_some_and(|o| o.task_required(&remote)) {
            Some(
                "it requires MCP task support (execution.taskSupport = required), which \
                 this client does not have"
                    .to_owned(),
            )
        } else {
            None
        };
        let schema = Value::Object((*tool.input_schema).clone());
        let info = McpToolInfo {
            name: name.clone(),
            remote_name: remote.clone(),
            title: title.clone(),
            description: tool.description.as_deref().map(str::to_owned),
            input_schema: schema.clone(),
            output_schema: tool
                .output_schema
                .as_ref()
                .map(|s| Value::Object((**s).clone())),
            hints,
            not_offered: not_offered.clone(),
        };
        if let Some(reason) = &not_offered {
            tracing::debug!(server = %inner.label, tool = %remote, %reason, "MCP tool not offered");
        } else {
            if info.renamed(&inner.prefix) {
                tracing::debug!(server = %inner.label, tool = %remote, name = %name,
                    "MCP tool offered under a valid name");
            }
            tools.push(Arc::new(McpTool {
                name,
                remote,
                description: info
                    .description
                    .clone()
                    .or(title.clone())
                    .unwrap_or_default(),
                title,
                output_schema: info.output_schema.clone(),
                schema,
                hints,
                link: Arc::clone(&link),
                bridge: Arc::clone(&inner.bridge),
                label: Arc::clone(&label),
                call_timeout: inner.call_timeout,
                max_result_bytes: inner.max_result_bytes,
            }));
        }
        infos.push(info);
    }
    (tools, infos)
}
