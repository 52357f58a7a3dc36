//! A server's prompts and resources, read through an [`McpToolset`]: for Rust code, and for
//! agents through a tool that reads resources.

use std::sync::Arc;

use rmcp::model::{
    ArgumentInfo, CompleteRequestParams, CompletionContext, GetPromptRequestParams,
    ReadResourceRequestParams, Reference, ResourceContents, Role, ServerCapabilities,
};
use rmcp::service::ServiceError;
use rmcp::{Peer, RoleClient};
use serde_json::{Map, Value, json};
use tinyagent::tools::{ToolInput, ToolOutput};
use tinyagent::{BoxFuture, ContentPart, Tool, ToolContext, ToolError, ToolHints};

use super::McpToolset;
use crate::protocol::completion::{McpCompletion, McpCompletionRequest};
use crate::protocol::content::content_part;
use crate::protocol::errors::service_error;
use crate::protocol::prompt_message::{McpPromptMessage, PromptRole};

/// A prompt a server offers: its name, what it is for and its arguments.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct McpPromptInfo {
    /// The prompt's name.
    pub name: String,
    /// What it is for.
    pub description: Option<String>,
    /// Its arguments: name, description, whether required.
    pub arguments: Vec<(String, Option<String>, bool)>,
}

/// A resource a server offers (or a template of resources, its URI then an RFC 6570
/// template).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct McpResourceInfo {
    /// The resource's URI, or the template's.
    pub uri: String,
    /// Its name.
    pub name: String,
    /// What it is.
    pub description: Option<String>,
    /// Its MIME type.
    pub mime_type: Option<String>,
}

impl McpToolset {
    /// The connected server's peer and the connection's number (connecting first if needed).
    async fn peer(&self) -> Result<(Peer<RoleClient>, u64), ToolError> {
        self.inner.live_peer().await
    }

    /// `err`, of a request on connection `generation` while `doing`, as an error; a
    /// connection found gone is made again.
    pub(super) fn failed(&self, generation: u64, err: ServiceError, doing: &str) -> ToolError {
        let error = service_error(self.name(), err, doing);
        self.inner.check_error(generation, &error);
        error
    }

    /// What the server says it supports (its capabilities from the handshake); connects
    /// first if needed.
    pub async fn server_capabilities(&self) -> Result<ServerCapabilities, ToolError> {
        let (peer, _) = self.peer().await?;
        Ok(peer
            .peer_info()
            .map(|info| info.capabilities.clone())
            .unwrap_or_default())
    }

    /// The values the server offers for an argument of its prompt `prompt`
    /// (`completion/complete`), given what was typed and the other arguments' values.
    ///
    /// ```no_run
    /// use tinyagent_mcp::{McpCompletionRequest, McpToolset};
    ///
    /// # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
    /// let toolset = McpToolset::stdio("npx -y @modelcontextprotocol/server-everything stdio")?;
    /// let request = McpCompletionRequest::new("name", "").context_argument("department", "Sales");
    /// let names = toolset.complete_prompt("completable-prompt", request).await?;
    /// println!("{:?}", names.values);
    /// # Ok(()) }
    /// ```
    pub async fn complete_prompt(
        &self,
        prompt: &str,
        request: McpCompletionRequest,
    ) -> Result<McpCompletion, ToolError> {
        let doing = format!("completing an argument of its prompt {prompt:?}");
        self.complete(Reference::for_prompt(prompt), request, &doing)
            .await
    }

    /// The values the server offers for a variable of its resource template `template` (its
    /// URI template, such as `file:///{path}`).
    pub async fn complete_resource(
        &self,
        template: &str,
        request: McpCompletionRequest,
    ) -> Result<McpCompletion, ToolError> {
        let doing = format!("completing a variable of its resource template {template:?}");
        self.complete(Reference::for_resource(template), request, &doing)
            .await
    }

    async fn complete(
        &self,
        reference: Reference,
        request: McpCompletionRequest,
        doing: &str,
    ) -> Result<McpCompletion, ToolError> {
        let (peer, generation) = self.peer().await?;
        let mut params = CompleteRequestParams::new(
            reference,
            ArgumentInfo::new(request.argument, request.value),
        );
        if !request.context.is_empty() {
            params = params.with_context(CompletionContext::with_arguments(request.context));
        }
        let answer = tokio::time::timeout(self.inner.call_timeout, peer.complete(params)).await;
        match answer {
            Ok(Ok(result)) => Ok(McpCompletion::from_info(result.completion)),
            Ok(Err(err)) => Err(self.failed(generation, err, doing)),
            Err(_) => Err(ToolError::timed_out(format!(
                "MCP server `{}` did not answer within {:?} while {doing}",
                self.name(),
                self.inner.call_timeout
            ))),
        }
    }

    /// The prompts the server offers (none when it offers no prompts).
    pub async fn prompts(&self) -> Result<Vec<McpPromptInfo>, ToolError> {
        let (peer, generation) = self.peer().await?;
        if peer
            .peer_info()
            .is_some_and(|i| i.capabilities.prompts.is_none())
        {
            return Ok(Vec::new());
        }
        let listed = peer
            .list_all_prompts()
            .await
            .map_err(|e| self.failed(generation, e, "listing its prompts"))?;
        Ok(listed
            .into_iter()
            .map(|p| McpPromptInfo {
                name: p.name,
                description: p.description,
                arguments: p
                    .arguments
                    .unwrap_or_default()
                    .into_iter()
                    .map(|a| (a.name, a.description, a.required.unwrap_or(false)))
                    .collect(),
            })
            .collect())
    }

    /// The prompt `name` rendered with `arguments`: its messages, for an agent's history or
    /// instruction ([`McpPromptMessage::content`] says what each holds).
    pub async fn prompt(
        &self,
        name: &str,
        arguments: impl IntoIterator<Item = (impl Into<String>, impl Into<String>)>,
    ) -> Result<Vec<McpPromptMessage>, ToolError> {
        let (peer, generation) = self.peer().await?;
        let arguments: Map<String, Value> = arguments
            .into_iter()
            .map(|(k, v)| (k.into(), Value::String(v.into())))
            .collect();
        let mut params = GetPromptRequestParams::new(name);
        params.arguments = Some(arguments);
        let response = peer
            .get_prompt(params)
            .await
            .map_err(|e| self.failed(generation, e, &format!("rendering its prompt {name:?}")))?;
        let result = response;
        Ok(result
            .messages
            .iter()
            .map(|m| {
                let role = match m.role {
                    Role::User => PromptRole::User,
                    Role::Assistant => PromptRole::Assistant,
                };
                McpPromptMessage::new(role, content_part(&m.content))
            })
            .collect())
    }

    /// The resources the server lists, then its resource templates.
    pub async fn resources(&self) -> Result<Vec<McpResourceInfo>, ToolError> {
        let (peer, generation) = self.peer().await?;
        if peer
            .peer_info()
            .is_some_and(|i| i.capabilities.resources.is_none())
        {
            return Ok(Vec::new());
        }
        let failed = |e| self.failed(generation, e, "listing its resources");
        let mut out: Vec<McpResourceInfo> = peer
            .list_all_resources()
            .await
            .map_err(failed)?
            .into_iter()
            .map(|r| McpResourceInfo {
                uri: r.uri.clone(),
                name: r.name.clone(),
                description: r.description.clone(),
                mime_type: r.mime_type.clone(),
            })
            .collect();
        // Templates are optional: a server that has none may not answer the method at all.
        let templates = match peer.list_all_resource_templates().await {
            Ok(templates) => templates,
            Err(err) => {
                tracing::debug!(server = %self.name(), error = %err, "no resource templates");
                Vec::new()
            }
        };
        out.extend(templates.into_iter().map(|t| McpResourceInfo {
            uri: t.uri_template.clone(),
            name: t.name.clone(),
            description: t.description.clone(),
            mime_type: t.mime_type.clone(),
        }));
        Ok(out)
    }

    /// Reads the resource at `uri`: its contents as content parts (text or base64 bytes,
    /// each with its URI and MIME type).
    pub async fn read_resource(&self, uri: &str) -> Result<Vec<ContentPart>, ToolError> {
        let (peer, generation) = self.peer().await?;
        let response = peer
            .read_resource(ReadResourceRequestParams::new(uri))
            .await
            .map_err(|e| self.failed(generation, e, &format!("reading {uri:?}")))?;
        let result = response;
        Ok(result
            .contents
            .into_iter()
            .map(|c| match c {
                ResourceContents::TextResourceContents {
                    uri,
                    mime_type,
                    text,
                    ..
                } => ContentPart::resource_text(uri, mime_type, text),
                ResourceContents::BlobResourceContents {
                    uri,
                    mime_type,
                    blob,
                    ..
                } => ContentPart::resource_blob(uri, mime_type, blob),
                other => ContentPart::text(format!(
                    "[resource contents of a kind this client does not know: {}]",
                    serde_json::to_string(&other).unwrap_or_default()
                )),
            })
            .collect())
    }

    /// A tool that reads the server's resources, for an agent: `{"uri"}` → the contents. Its
    /// description lists the resources the server offers (when it lists any), so the model
    /// knows what it may read. Offer it with the agent's other tools.
    pub async fn resource_tool(&self) -> Result<Arc<dyn Tool>, ToolError> {
        let listed = self.resources().await?;
        let mut description = format!(
            "Reads a resource of the MCP server `{}` by its URI and returns its contents",
            self.name()
        );
        if !listed.is_empty() {
            description.push_str(". Resources: ");
            let shown: Vec<String> = listed
                .iter()
                .take(50)
                .map(|r| match &r.description {
                    Some(d) => format!("{} ({d})", r.uri),
                    None => r.uri.clone(),
                })
                .collect();
            description.push_str(&shown.join("; "));
        }
        Ok(Arc::new(ResourceTool {
            toolset: self.clone(),
            name: format!("{}read_resource", self.inner.prefix),
            description,
            schema: json!({
                "type": "object",
                "properties": {"uri": {"type": "string", "description": "the resource's URI"}},
                "required": ["uri"]
            }),
        }))
    }
}

/// `read_resource`: reads one of a toolset's resources.
struct ResourceTool {
    toolset: McpToolset,
    name: String,
    description: String,
    schema: Value,
}

impl Tool for ResourceTool {
    fn name(&self) -> &str {
        &self.name
    }

    fn description(&self) -> &str {
        &self.description
    }

    fn input_schema(&self) -> &Value {
        &self.schema
    }

    fn hints(&self) -> ToolHints {
        ToolHints::READ_ONLY
    }

    fn call<'a>(
        &'a self,
        _ctx: &'a ToolContext,
        input: ToolInput,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let value = input.into_value()?;
            let uri = value
                .get("uri")
                .and_then(Value::as_str)
                .ok_or_else(|| ToolError::invalid_input("missing field `uri` (a string)"))?;
            Ok(ToolOutput::parts(self.toolset.read_resource(uri).await?))
        })
    }
}
