//! The catalog of an [`McpServer`](crate::McpServer)'s prompts, resources and resource
//! templates: listed, rendered, read, and their arguments completed.

use std::collections::HashMap;

use base64::Engine as _;
use rmcp::ErrorData;
use rmcp::model::{
    CompleteRequestParams, CompleteResult, ErrorCode, GetPromptResult, ListPromptsResult,
    ListResourceTemplatesResult, ListResourcesResult, Prompt, PromptMessage, ReadResourceResult,
    Reference, Resource, ResourceContents, ResourceTemplate, Role,
};
use serde_json::Value;
use tinyagent::ToolError;

use super::prompt::McpPrompt;
use super::resource::{McpResource, McpResourceTemplate, ResourceBody, Watch};
use crate::protocol::completion::{McpCompletion, McpCompletionRequest};
use crate::protocol::content::content_block;
use crate::protocol::prompt_message::PromptRole;

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

    /// Whether a prompt or template completes its arguments.
    pub(crate) fn completes(&self) -> bool {
        self.prompts.iter().any(McpPrompt::completes)
            || self.templates.iter().any(|t| t.completer.is_some())
    }

    /// Whether a resource or template takes subscriptions.
    pub(crate) fn subscribable(&self) -> bool {
        self.resources.iter().any(|r| r.watch.subscribable)
            || self.templates.iter().any(|t| t.watch.subscribable)
    }

    /// How subscriptions to `uri` are handled: its resource's, or its template's.
    pub(crate) fn watch_of(&self, uri: &str) -> Option<&Watch> {
        self.resources
            .iter()
            .find(|r| r.uri == uri)
            .map(|r| &r.watch)
            .or_else(|| {
                self.templates
                    .iter()
                    .find(|t| t.matches(uri).is_some())
                    .map(|t| &t.watch)
            })
    }

    /// The values offered for an argument of a prompt or a template: its completer's, or
    /// those of its static list starting with what was typed (case-insensitively).
    pub(crate) async fn complete(
        &self,
        request: &CompleteRequestParams,
    ) -> Result<CompleteResult, ErrorData> {
        let asked = McpCompletionRequest::from_params(request);
        let completion = match &request.r#ref {
            Reference::Prompt(reference) => {
                let prompt = self.prompts.iter().find(|p| p.name == reference.name);
                match prompt.and_then(|p| p.completer.as_ref()) {
                    Some(complete) => complete(asked).await.map_err(|e| failed(&e))?,
                    None => McpCompletion::new(static_values(prompt, &asked)),
                }
            }
            Reference::Resource(reference) => {
                let template = self.templates.iter().find(|t| t.template == reference.uri);
                match template.and_then(|t| t.completer.as_ref()) {
                    Some(complete) => complete(asked).await.map_err(|e| failed(&e))?,
                    None => McpCompletion::default(),
                }
            }
            _ => McpCompletion::default(),
        };
        Ok(completion.into_result())
    }
}

/// The static values of a prompt's argument that start with what was typed.
fn static_values(prompt: Option<&McpPrompt>, asked: &McpCompletionRequest) -> Vec<String> {
    let typed = asked.value.to_lowercase();
    prompt
        .and_then(|p| p.arguments.iter().find(|(a, _)| a.name == asked.argument))
        .map(|(_, values)| {
            values
                .iter()
                .filter(|v| v.to_lowercase().starts_with(&typed))
                .cloned()
                .collect()
        })
        .unwrap_or_default()
}

/// A prompt argument's value as text (a client may send a number or a flag).
pub(crate) fn value_text(value: Value) -> String {
    match value {
        Value::String(text) => text,
        other => other.to_string(),
    }
}
