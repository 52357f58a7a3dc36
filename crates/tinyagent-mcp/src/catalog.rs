//! What an [`McpServer`](crate::McpServer) serves besides tools: prompts ([`McpPrompt`]),
//! resources ([`McpResource`]) and resource templates ([`McpResourceTemplate`]), with
//! completion of prompt arguments and resource subscriptions.

use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::sync::Arc;

use base64::Engine as _;
use rmcp::ErrorData;
use rmcp::model::{
    CompleteRequestParams, CompleteResult, CompletionInfo, ErrorCode, GetPromptResult,
    ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult, Prompt, PromptArgument,
    PromptMessage, ReadResourceResult, Reference, Resource, ResourceContents, ResourceTemplate,
    Role,
};
use serde_json::Value;
use tinyagent::{BoxFuture, ContentPart, ToolError};

use crate::content::content_block;

/// Who says a prompt's message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PromptRole {
    /// The user.
    User,
    /// The assistant.
    Assistant,
}

/// One message of a rendered prompt: who says it and what (text, an image, audio or an
/// embedded resource).
#[derive(Debug, Clone, PartialEq)]
pub struct McpPromptMessage {
    /// Who says it.
    pub role: PromptRole,
    /// What is said.
    pub content: ContentPart,
}

impl McpPromptMessage {
    /// A message of the user with this text.
    pub fn user(text: impl Into<String>) -> Self {
        Self {
            role: PromptRole::User,
            content: ContentPart::text(text),
        }
    }

    /// A message of the assistant with this text.
    pub fn assistant(text: impl Into<String>) -> Self {
        Self {
            role: PromptRole::Assistant,
            content: ContentPart::text(text),
        }
    }

    /// A message of `role` with any content.
    pub fn new(role: PromptRole, content: ContentPart) -> Self {
        Self { role, content }
    }
}

type Render = Arc<
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
    name: String,
    description: Option<String>,
    arguments: Vec<(PromptArgument, Vec<String>)>,
    render: Render,
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

    /// The prompt's name.
    pub fn name(&self) -> &str {
        &self.name
    }
}

/// What reading a resource gives: text or bytes, with a MIME type.
#[derive(Debug, Clone, PartialEq)]
pub enum ResourceBody {
    /// Text.
    Text(String),
    /// Bytes (sent base64-encoded).
    Bytes(Vec<u8>),
}

type Read = Arc<
    dyn Fn(HashMap<String, String>) -> BoxFuture<'static, Result<ResourceBody, ToolError>>
        + Send
        + Sync,
>;

/// A resource an [`McpServer`](crate::McpServer) offers at a fixed URI.
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
    uri: String,
    name: String,
    description: Option<String>,
    mime_type: String,
    read: Read,
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
    template: String,
    name: String,
    description: Option<String>,
    mime_type: String,
    read: Read,
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
        }
    }

    /// Sets what the resources are.
    #[must_use]
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }

    /// The values of the template's variables in `uri`, when `uri` is one of its resources.
    fn matches(&self, uri: &str) -> Option<HashMap<String, String>> {
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

/// The prompts and resources of a server.
#[derive(Clone, Default, Debug)]
pub(crate) struct Catalog {
    pub(crate) prompts: Vec<McpPrompt>,
    pub(crate) resources: Vec<McpResource>,
    pub(crate) templates: Vec<McpResourceTemplate>,
}

fn not_found(what: &str) -> ErrorData {
    ErrorData::new(ErrorCode::RESOURCE_NOT_FOUND, what.to_owned(), None)
}

fn failed(err: &ToolError) -> ErrorData {
    ErrorData::internal_error(err.message().to_owned(), None)
}

impl Catalog {
    pub(crate) fn list_prompts(&self) -> ListPromptsResult {
        ListPromptsResult::with_all_items(
            self.prompts
                .iter()
                .map(|p| {
                    let arguments = p.arguments.iter().map(|(a, _)| a.clone()).collect();
                    Prompt::new(&p.name, p.description.clone(), Some(arguments))
                })
                .collect(),
        )
    }

    pub(crate) async fn get_prompt(
        &self,
        name: &str,
        arguments: HashMap<String, String>,
    ) -> Result<GetPromptResult, ErrorData> {
        let prompt = self
            .prompts
            .iter()
            .find(|p| p.name == name)
            .ok_or_else(|| {
                ErrorData::invalid_params(format!("no prompt is named {name:?}"), None)
            })?;
        if let Some((missing, _)) = prompt
            .arguments
            .iter()
            .find(|(a, _)| a.required == Some(true) && !arguments.contains_key(&a.name))
        {
            return Err(ErrorData::invalid_params(
                format!("prompt {name:?} needs the argument {:?}", missing.name),
                None,
            ));
        }
        let messages = (prompt.render)(arguments).await.map_err(|e| failed(&e))?;
        let messages = messages
            .iter()
            .map(|m| {
                let role = match m.role {
                    PromptRole::User => Role::User,
                    PromptRole::Assistant => Role::Assistant,
                };
                PromptMessage::new(role, content_block(&m.content))
            })
            .collect();
        let mut result = GetPromptResult::new(messages);
        result.description = prompt.description.clone();
        Ok(result)
    }

    pub(crate) fn list_resources(&self) -> ListResourcesResult {
        ListResourcesResult::with_all_items(
            self.resources
                .iter()
                .map(|r| {
                    let mut resource = Resource::new(&r.uri, &r.name);
                    resource.description = r.description.clone();
                    resource.mime_type = Some(r.mime_type.clone());
                    resource
                })
                .collect(),
        )
    }

    pub(crate) fn list_templates(&self) -> ListResourceTemplatesResult {
        ListResourceTemplatesResult::with_all_items(
            self.templates
                .iter()
                .map(|t| {
                    let mut template = ResourceTemplate::new(&t.template, &t.name);
                    template.description = t.description.clone();
                    template.mime_type = Some(t.mime_type.clone());
                    template
                })
                .collect(),
        )
    }

    /// Whether `uri` is a resource of this server (listed, or under a template).
    pub(crate) fn knows(&self, uri: &str) -> bool {
        self.resources.iter().any(|r| r.uri == uri)
            || self.templates.iter().any(|t| t.matches(uri).is_some())
    }

    pub(crate) async fn read(&self, uri: &str) -> Result<ReadResourceResult, ErrorData> {
        let (body, mime_type) = if let Some(r) = self.resources.iter().find(|r| r.uri == uri) {
            ((r.read)(HashMap::new()), &r.mime_type)
        } else if let Some((t, vars)) = self
            .templates
            .iter()
            .find_map(|t| t.matches(uri).map(|vars| (t, vars)))
        {
            ((t.read)(vars), &t.mime_type)
        } else {
            return Err(not_found(&format!("no resource has the URI {uri:?}")));
        };
        let contents = match body.await.map_err(|e| failed(&e))? {
            ResourceBody::Text(text) => ResourceContents::TextResourceContents {
                uri: uri.to_owned(),
                mime_type: Some(mime_type.clone()),
                text,
                meta: None,
            },
            ResourceBody::Bytes(bytes) => ResourceContents::BlobResourceContents {
                uri: uri.to_owned(),
                mime_type: Some(mime_type.clone()),
                blob: base64::engine::general_purpose::STANDARD.encode(bytes),
                meta: None,
            },
        };
        Ok(ReadResourceResult::new(vec![contents]))
    }

    pub(crate) fn complete(&self, request: &CompleteRequestParams) -> CompleteResult {
        let typed = request.argument.value.to_lowercase();
        let values: Vec<String> = match &request.r#ref {
            Reference::Prompt(reference) => self
                .prompts
                .iter()
                .find(|p| p.name == reference.name)
                .and_then(|p| {
                    p.arguments
                        .iter()
                        .find(|(a, _)| a.name == request.argument.name)
                })
                .map(|(_, values)| {
                    values
                        .iter()
                        .filter(|v| v.to_lowercase().starts_with(&typed))
                        .take(CompletionInfo::MAX_VALUES)
                        .cloned()
                        .collect()
                })
                .unwrap_or_default(),
            _ => Vec::new(),
        };
        let mut result = CompleteResult::default();
        result.completion = CompletionInfo::new(values).unwrap_or_default();
        result
    }
}

/// A prompt argument's value as text (a client may send a number or a flag).
pub(crate) fn value_text(value: Value) -> String {
    match value {
        Value::String(text) => text,
        other => other.to_string(),
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
