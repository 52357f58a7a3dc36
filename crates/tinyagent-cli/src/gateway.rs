//! `serve-mcp` as a gateway: the prompts and resources of the servers it fronts, served as its
//! own, each read from its server when a client asks; completion of their arguments and
//! subscriptions to the resources go to the server too, and its updates come back.

use base64::Engine as _;
use tinyagent::{ContentPart, ToolError};
use tinyagent_mcp::{
    McpPrompt, McpResource, McpResourceInfo, McpResourceTemplate, McpServer, McpToolset,
    ResourceBody,
};
use tokio::sync::broadcast::error::RecvError;

/// What an upstream server supports beyond listing and reading.
#[derive(Clone, Copy, Default)]
struct Supports {
    /// `completion/complete`.
    completions: bool,
    /// `resources/subscribe`.
    subscriptions: bool,
}

impl Supports {
    async fn of(toolset: &McpToolset) -> Self {
        match toolset.server_capabilities().await {
            Ok(capabilities) => Self {
                completions: capabilities.completions.is_some(),
                subscriptions: capabilities
                    .resources
                    .as_ref()
                    .and_then(|r| r.subscribe)
                    .unwrap_or(false),
            },
            Err(err) => {
                tracing::warn!(server = %toolset.name(), %err, "capabilities unknown");
                Self::default()
            }
        }
    }
}

/// `server` with the prompts, resources and resource templates of `toolsets` passed through,
/// with completion and subscriptions where the server fronted supports them. A server that
/// cannot list them is skipped (with a warning), as is a prompt or resource whose name or URI
/// another server already gave.
pub async fn pass_through(mut server: McpServer, toolsets: &[McpToolset]) -> McpServer {
    let mut prompts = std::collections::HashSet::new();
    let mut uris = std::collections::HashSet::new();
    for toolset in toolsets {
        let supports = Supports::of(toolset).await;
        match toolset.prompts().await {
            Ok(listed) => {
                for info in listed {
                    if !prompts.insert(info.name.clone()) {
                        tracing::warn!(server = %toolset.name(), prompt = %info.name,
                            "prompt offered by another server first; not served");
                        continue;
                    }
                    let (upstream, name) = (toolset.clone(), info.name.clone());
                    let mut prompt = McpPrompt::new(info.name.clone(), move |args| {
                        let (upstream, name) = (upstream.clone(), name.clone());
                        async move { upstream.prompt(&name, args).await }
                    });
                    if let Some(description) = info.description {
                        prompt = prompt.description(description);
                    }
                    if supports.completions {
                        let (upstream, name) = (toolset.clone(), info.name.clone());
                        prompt = prompt.completion(move |request| {
                            let (upstream, name) = (upstream.clone(), name.clone());
                            async move { upstream.complete_prompt(&name, request).await }
                        });
                    }
                    for (name, description, required) in info.arguments {
                        prompt =
                            prompt.argument(name, description.as_deref().unwrap_or(""), required);
                    }
                    server = server.prompt(prompt);
                }
            }
            Err(err) => {
                tracing::warn!(server = %toolset.name(), %err, "prompts not passed through")
            }
        }
        match toolset.resources().await {
            Ok(listed) => {
                for info in listed {
                    if !uris.insert(info.uri.clone()) {
                        continue;
                    }
                    server = if info.uri.contains('{') {
                        server.resource_template(template(toolset, info, supports))
                    } else {
                        server.resource(resource(toolset, info, supports))
                    };
                }
            }
            Err(err) => {
                tracing::warn!(server = %toolset.name(), %err, "resources not passed through")
            }
        }
    }
    server
}

/// Tells the clients subscribed to a resource of `toolsets` when its server says it changed,
/// until the server stops.
pub fn forward_updates(server: &McpServer, toolsets: &[McpToolset]) {
    for toolset in toolsets {
        let mut updates = toolset.resource_updates();
        let (server, name) = (server.clone(), toolset.name().to_owned());
        tokio::spawn(async move {
            loop {
                match updates.recv().await {
                    Ok(uri) => {
                        let told = server.resource_updated(&uri).await;
                        tracing::debug!(server = %name, %uri, told, "resource update passed on");
                    }
                    Err(RecvError::Lagged(missed)) => {
                        tracing::warn!(server = %name, missed, "resource updates missed")
                    }
                    Err(RecvError::Closed) => break,
                }
            }
        });
    }
}

fn resource(toolset: &McpToolset, info: McpResourceInfo, supports: Supports) -> McpResource {
    let (upstream, uri) = (toolset.clone(), info.uri.clone());
    let mime = info.mime_type.unwrap_or_else(|| "text/plain".to_owned());
    let resource = McpResource::new(info.uri, info.name, mime, move || {
        let (upstream, uri) = (upstream.clone(), uri.clone());
        async move { body(upstream.read_resource(&uri).await?) }
    });
    let resource = match info.description {
        Some(description) => resource.description(description),
        None => resource,
    };
    if !supports.subscriptions {
        return resource.subscribable(false);
    }
    let (on, off) = (toolset.clone(), toolset.clone());
    resource
        .on_subscribe(move |uri| {
            let upstream = on.clone();
            async move { upstream.subscribe(&uri).await }
        })
        .on_unsubscribe(move |uri| {
            let upstream = off.clone();
            async move { upstream.unsubscribe(&uri).await }
        })
}

fn template(
    toolset: &McpToolset,
    info: McpResourceInfo,
    supports: Supports,
) -> McpResourceTemplate {
    let (upstream, pattern) = (toolset.clone(), info.uri.clone());
    let mime = info.mime_type.unwrap_or_else(|| "text/plain".to_owned());
    let mut template = McpResourceTemplate::new(info.uri.clone(), info.name, mime, move |vars| {
        let upstream = upstream.clone();
        let uri = fill(&pattern, &vars);
        async move { body(upstream.read_resource(&uri).await?) }
    });
    if let Some(description) = info.description {
        template = template.description(description);
    }
    if supports.completions {
        let (upstream, pattern) = (toolset.clone(), info.uri);
        template = template.completion(move |request| {
            let (upstream, pattern) = (upstream.clone(), pattern.clone());
            async move { upstream.complete_resource(&pattern, request).await }
        });
    }
    if !supports.subscriptions {
        return template.subscribable(false);
    }
    let (on, off) = (toolset.clone(), toolset.clone());
    template
        .on_subscribe(move |uri| {
            let upstream = on.clone();
            async move { upstream.subscribe(&uri).await }
        })
        .on_unsubscribe(move |uri| {
            let upstream = off.clone();
            async move { upstream.unsubscribe(&uri).await }
        })
}

/// `pattern` with each `{name}` replaced by its value, in one pass from the left (a value
/// that itself holds `{…}` is not replaced again).
fn fill(pattern: &str, vars: &std::collections::HashMap<String, String>) -> String {
    let mut out = String::with_capacity(pattern.len());
    let mut rest = pattern;
    while let Some(open) = rest.find('{') {
        let Some(close) = rest[open..].find('}').map(|i| open + i) else {
            break;
        };
        out.push_str(&rest[..open]);
        match vars.get(&rest[open + 1..close]) {
            Some(value) => out.push_str(value),
            None => out.push_str(&rest[open..=close]),
        }
        rest = &rest[close + 1..];
    }
    out.push_str(rest);
    out
}

/// The first contents a server read, as a body to serve again.
fn body(parts: Vec<ContentPart>) -> Result<ResourceBody, ToolError> {
    match parts.into_iter().next() {
        Some(ContentPart::Resource {
            blob: Some(blob), ..
        }) => base64::engine::general_purpose::STANDARD
            .decode(blob)
            .map(ResourceBody::Bytes)
            .map_err(|e| ToolError::failed(format!("the server sent bad base64: {e}"))),
        Some(ContentPart::Resource {
            text: Some(text), ..
        }) => Ok(ResourceBody::Text(text)),
        Some(other) => Ok(ResourceBody::Text(
            other.as_text().unwrap_or_default().to_owned(),
        )),
        None => Ok(ResourceBody::Text(String::new())),
    }
}

#[cfg(test)]
mod tests {
    use super::fill;

    #[test]
    fn a_template_is_filled_once_from_the_left() {
        let vars = [("id", "{name}"), ("name", "x")]
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect();
        assert_eq!(
            fill("orders://{id}/{name}/{missing}", &vars),
            "orders://{name}/x/{missing}"
        );
    }
}
