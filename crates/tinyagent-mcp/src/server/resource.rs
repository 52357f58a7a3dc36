//! What an [`McpServer`](crate::McpServer) serves as resources: [`McpResource`] at a fixed
//! URI, [`McpResourceTemplate`] under a URI template, and what a client's subscription to them
//! sets off.

use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::sync::Arc;

use tinyagent::{BoxFuture, ToolError};

use crate::protocol::completion::{Completer, McpCompletion, McpCompletionRequest, completer};

/// What reading a resource gives: text or bytes, with a MIME type.
#[derive(Debug, Clone, PartialEq)]
pub enum ResourceBody {
    /// Text.
    Text(String),
    /// Bytes (sent base64-encoded).
    Bytes(Vec<u8>),
}

pub(crate) type Read = Arc<
    dyn Fn(HashMap<String, String>) -> BoxFuture<'static, Result<ResourceBody, ToolError>>
        + Send
        + Sync,
>;

/// What subscribing to a resource sets off, run with the resource's URI.
pub(crate) type Hook =
    Arc<dyn Fn(String) -> BoxFuture<'static, Result<(), ToolError>> + Send + Sync>;

fn hook<F, Fut>(f: F) -> Hook
where
    F: Fn(String) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<(), ToolError>> + Send + 'static,
{
    Arc::new(move |uri| Box::pin(f(uri)))
}

/// Whether clients may subscribe to a resource, and what the first subscription and the end
/// of the last one set off.
#[derive(Clone)]
pub(crate) struct Watch {
    pub(crate) subscribable: bool,
    pub(crate) on_subscribe: Option<Hook>,
    pub(crate) on_unsubscribe: Option<Hook>,
}

impl Default for Watch {
    fn default() -> Self {
        Self {
            subscribable: true,
            on_subscribe: None,
            on_unsubscribe: None,
        }
    }
}

/// A resource an [`McpServer`](crate::McpServer) offers at a fixed URI.
///
/// Clients may subscribe to it (`resources/subscribe`); tell them it changed with
/// [`McpServer::resource_updated`](crate::McpServer::resource_updated).
///
/// ```
/// use tinyagent_mcp::McpResource;
///
/// let readme = McpResource::text("file:///README.md", "README", "text/markdown", "# Hello");
/// let logo = McpResource::bytes("file:///logo.png", "logo", "image/png", vec![0x89, b'P', b'N', b'G']);
/// # let _ = (readme, logo);
/// ```
#[derive(Clone)]
pub struct McpResource {
    pub(crate) uri: String,
    pub(crate) name: String,
    pub(crate) description: Option<String>,
    pub(crate) mime_type: String,
    pub(crate) read: Read,
    pub(crate) watch: Watch,
}

impl fmt::Debug for McpResource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("McpResource")
            .field("uri", &self.uri)
            .field("mime_type", &self.mime_type)
            .finish_non_exhaustive()
    }
}

impl McpResource {
    /// A resource whose content is read by the async function `read` each time a client
    /// reads it.
    pub fn new<F, Fut>(
        uri: impl Into<String>,
        name: impl Into<String>,
        mime_type: impl Into<String>,
        read: F,
    ) -> Self
    where
        F: Fn() -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<ResourceBody, ToolError>> + Send + 'static,
    {
        Self {
            uri: uri.into(),
            name: name.into(),
            description: None,
            mime_type: mime_type.into(),
            read: Arc::new(move |_| Box::pin(read())),
            watch: Watch::default(),
        }
    }

    /// A resource with fixed text.
    pub fn text(
        uri: impl Into<String>,
        name: impl Into<String>,
        mime_type: impl Into<String>,
        text: impl Into<String>,
    ) -> Self {
        let text = text.into();
        Self::new(uri, name, mime_type, move || {
            std::future::ready(Ok(ResourceBody::Text(text.clone())))
        })
    }

    /// A resource with fixed bytes.
    pub fn bytes(
        uri: impl Into<String>,
        name: impl Into<String>,
        mime_type: impl Into<String>,
        bytes: Vec<u8>,
    ) -> Self {
        Self::new(uri, name, mime_type, move || {
            std::future::ready(Ok(ResourceBody::Bytes(bytes.clone())))
        })
    }

    /// Sets what the resource is.
    #[must_use]
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }

    /// The resource's URI.
    pub fn uri(&self) -> &str {
        &self.uri
    }

    /// Whether clients may subscribe to the resource (default: yes). A server says it
    /// supports subscriptions when one of its resources or templates takes them.
    #[must_use]
    pub fn subscribable(mut self, subscribable: bool) -> Self {
        self.watch.subscribable = subscribable;
        self
    }

    /// Runs `f(uri)` when the first client subscribes to the resource (start watching it
    /// there); an error refuses that subscription, with the error's message.
    ///
    /// ```
    /// use tinyagent_mcp::McpResource;
    ///
    /// let log = McpResource::text("file:///app.log", "log", "text/plain", "")
    ///     .on_subscribe(|uri| async move {
    ///         println!("watching {uri}");
    ///         Ok(())
    ///     })
    ///     .on_unsubscribe(|uri| async move {
    ///         println!("no one watches {uri} now");
    ///         Ok(())
    ///     });
    /// # let _ = log;
    /// ```
    #[must_use]
    pub fn on_subscribe<F, Fut>(mut self, f: F) -> Self
    where
        F: Fn(String) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<(), ToolError>> + Send + 'static,
    {
        self.watch.on_subscribe = Some(hook(f));
        self
    }

    /// Runs `f(uri)` when the last subscriber leaves (it unsubscribes, or disconnects); an
    /// error is logged.
    #[must_use]
    pub fn on_unsubscribe<F, Fut>(mut self, f: F) -> Self
    where
        F: Fn(String) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<(), ToolError>> + Send + 'static,
    {
        self.watch.on_unsubscribe = Some(hook(f));
        self
    }
}

/// Resources an [`McpServer`](crate::McpServer) offers under a URI template (RFC 6570 level
/// 1: `{name}` stands for one path segment), read by an async function of the template's
/// values.
///
/// ```
/// use tinyagent_mcp::{McpResourceTemplate, ResourceBody};
///
/// let orders = McpResourceTemplate::new("orders://{id}/summary", "order summary", "text/plain", |vars| async move {
///     Ok(ResourceBody::Text(format!("order {} is on its way", vars["id"])))
/// });
/// # let _ = orders;
/// ```
#[derive(Clone)]
pub struct McpResourceTemplate {
    pub(crate) template: String,
    pub(crate) name: String,
    pub(crate) description: Option<String>,
    pub(crate) mime_type: String,
    pub(crate) read: Read,
    pub(crate) watch: Watch,
    pub(crate) completer: Option<Completer>,
}

impl fmt::Debug for McpResourceTemplate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("McpResourceTemplate")
            .field("template", &self.template)
            .finish_non_exhaustive()
    }
}

impl McpResourceTemplate {
    /// Resources under `template`, read by `read` from the template's values.
    pub fn new<F, Fut>(
        template: impl Into<String>,
        name: impl Into<String>,
        mime_type: impl Into<String>,
        read: F,
    ) -> Self
    where
        F: Fn(HashMap<String, String>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<ResourceBody, ToolError>> + Send + 'static,
    {
        Self {
            template: template.into(),
            name: name.into(),
            description: None,
            mime_type: mime_type.into(),
            read: Arc::new(move |vars| Box::pin(read(vars))),
            watch: Watch::default(),
            completer: None,
        }
    }

    /// Sets what the resources are.
    #[must_use]
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }

    /// Completes the template's variables (`completion/complete` with a `ref/resource` of
    /// this template) with the async function `f`; the server then declares the
    /// `completions` capability.
    ///
    /// ```
    /// use tinyagent_mcp::{McpCompletion, McpResourceTemplate, ResourceBody};
    ///
    /// let orders = McpResourceTemplate::new("orders://{id}", "order", "text/plain", |vars| async move {
    ///     Ok(ResourceBody::Text(format!("order {}", vars["id"])))
    /// })
    /// .completion(|request| async move {
    ///     let ids = ["1001", "1002", "2001"];
    ///     Ok(McpCompletion::new(ids.into_iter().filter(|id| id.starts_with(&request.value))))
    /// });
    /// # let _ = orders;
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

    /// Whether clients may subscribe to the template's resources (default: yes).
    #[must_use]
    pub fn subscribable(mut self, subscribable: bool) -> Self {
        self.watch.subscribable = subscribable;
        self
    }

    /// Runs `f(uri)` when the first client subscribes to one of the template's resources; an
    /// error refuses that subscription. See [`McpResource::on_subscribe`].
    #[must_use]
    pub fn on_subscribe<F, Fut>(mut self, f: F) -> Self
    where
        F: Fn(String) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<(), ToolError>> + Send + 'static,
    {
        self.watch.on_subscribe = Some(hook(f));
        self
    }

    /// Runs `f(uri)` when the last subscriber of one of the template's resources leaves.
    #[must_use]
    pub fn on_unsubscribe<F, Fut>(mut self, f: F) -> Self
    where
        F: Fn(String) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<(), ToolError>> + Send + 'static,
    {
        self.watch.on_unsubscribe = Some(hook(f));
        self
    }

    /// The values of the template's variables in `uri`, when `uri` is one of its resources.
    pub(crate) fn matches(&self, uri: &str) -> Option<HashMap<String, String>> {
        let mut vars = HashMap::new();
        let mut rest = uri;
        let mut pattern = self.template.as_str();
        while let Some(open) = pattern.find('{') {
            let literal = &pattern[..open];
            rest = rest.strip_prefix(literal)?;
            let close = open + pattern[open..].find('}')?;
            let name = &pattern[open + 1..close];
            pattern = &pattern[close + 1..];
            let next = pattern.find('{').map_or(pattern, |i| &pattern[..i]);
            let end = if next.is_empty() {
                rest.find('/').unwrap_or(rest.len())
            } else {
                rest.find(next)?
            };
            let value = &rest[..end];
            if value.is_empty() || value.contains('/') {
                return None;
            }
            vars.insert(name.to_owned(), value.to_owned());
            rest = &rest[end..];
        }
        (rest == pattern).then_some(vars)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn templates_match_one_segment_per_variable() {
        let t = McpResourceTemplate::new("test://template/{id}/data", "t", "text/plain", |_| {
            std::future::ready(Ok(ResourceBody::Text(String::new())))
        });
        assert_eq!(t.matches("test://template/123/data").unwrap()["id"], "123");
        assert!(t.matches("test://template/1/2/data").is_none());
        assert!(t.matches("test://template//data").is_none());
        assert!(t.matches("test://template/123/other").is_none());
        let t = McpResourceTemplate::new("orders://{id}", "o", "text/plain", |_| {
            std::future::ready(Ok(ResourceBody::Text(String::new())))
        });
        assert_eq!(t.matches("orders://42").unwrap()["id"], "42");
        assert!(t.matches("orders://42/x").is_none());
    }
}
