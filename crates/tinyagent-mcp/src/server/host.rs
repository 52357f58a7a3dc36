//! The [`ToolHost`] of a tool served over MCP: progress and log messages become notifications
//! to the client, sampling and elicitation become requests to it (on protocol 2026-07-28 and
//! later, input-required results: see `input_required`).

#![allow(deprecated)] // rmcp marks logging and sampling deprecated (SEP-2577); clients use them.

use rmcp::model::{
    ClientCapabilities, CreateMessageRequest, CreateMessageRequestParams, CreateMessageResult,
    ElicitRequest, ElicitRequestParams, ElicitResult, ElicitationAction, InputRequest,
    LoggingMessageNotificationParam, ProgressNotificationParam, ProgressToken,
};
use rmcp::{Peer, RoleServer};
use serde_json::{Value, json};
use tinyagent::{
    BoxFuture, ContentPart, Role, ToolError,
    host::{Elicitation, ElicitationRequest, LogLevel, SamplingReply, SamplingRequest, ToolHost},
};

use super::input_required::Asker;
use super::log_filter::LogFilter;
use crate::protocol::content::{content_block, content_part};
use crate::protocol::errors::service_error;
use crate::protocol::logging::wire_level;

/// Whether the client speaks MCP 2026-07-28 or later, which has no sessions and no requests
/// from server to client (what the initialize handshake's sessions have).
pub(crate) fn is_stateless(peer: &Peer<RoleServer>) -> bool {
    let version = peer
        .peer_info()
        .and_then(|info| serde_json::to_value(&info.protocol_version).ok())
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default();
    // Versions are dates: they sort as text.
    version.as_str() >= "2026-07-28"
}

/// The error of a request to a client that cannot be asked.
fn cannot_ask(what: &str, capability: &str) -> ToolError {
    ToolError::unavailable(format!(
        "{what} is not supported here: the MCP client did not declare the {capability} capability"
    ))
    .retryable(false)
}

/// The host of one `tools/call`.
pub(crate) struct ServerHost {
    pub peer: Peer<RoleServer>,
    pub progress_token: Option<ProgressToken>,
    pub log_filter: LogFilter,
    pub stateless: bool,
    pub tool: String,
    /// On protocol 2026-07-28 and later: the capabilities the request's `_meta` declares, and
    /// how the call asks the client (through input-required results).
    pub asker: Option<(Option<ClientCapabilities>, Asker)>,
}

impl ServerHost {
    /// Whether the client declared `capability` (`sampling` or `elicitation`).
    fn declares(&self, capability: fn(&ClientCapabilities) -> bool) -> bool {
        match &self.asker {
            Some((declared, _)) => declared.as_ref().is_some_and(capability),
            None => {
                !self.stateless
                    && self
                        .peer
                        .peer_info()
                        .is_some_and(|i| capability(&i.capabilities))
            }
        }
    }
}

/// Decodes a JSON value into one of rmcp's (mostly non-exhaustive) wire types.
fn wire<T: tinyagent::serde::de::DeserializeOwned>(
    value: Value,
    what: &str,
) -> Result<T, ToolError> {
    serde_json::from_value(value)
        .map_err(|e| ToolError::invalid_input(format!("invalid {what}: {e}")))
}

impl ToolHost for ServerHost {
    fn progress(
        &self,
        progress: f64,
        total: Option<f64>,
        message: Option<String>,
    ) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            // Without a token the client did not ask for progress.
            let Some(token) = &self.progress_token else {
                return;
            };
            let mut params = json!({"progressToken": token, "progress": progress});
            if let Some(total) = total {
                params["total"] = json!(total);
            }
            if let Some(message) = message {
                params["message"] = json!(message);
            }
            if let Ok(params) = wire::<ProgressNotificationParam>(params, "progress")
                && let Err(e) = self.peer.notify_progress(params).await
            {
                tracing::debug!(tool = %self.tool, error = %e, "progress notification not sent");
            }
        })
    }

    fn log(&self, level: LogLevel, logger: Option<String>, data: Value) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            if !self.log_filter.allows(level) {
                return;
            }
            let mut params = LoggingMessageNotificationParam::new(wire_level(level), data);
            params.logger = Some(logger.unwrap_or_else(|| self.tool.clone()));
            if let Err(e) = self.peer.notify_logging_message(params).await {
                tracing::debug!(tool = %self.tool, error = %e, "log notification not sent");
            }
        })
    }

    fn sample(&self, request: SamplingRequest) -> BoxFuture<'_, Result<SamplingReply, ToolError>> {
        Box::pin(async move {
            if !self.declares(|c| c.sampling.is_some()) {
                return Err(cannot_ask(
                    "sampling (asking the client's model)",
                    "sampling",
                ));
            }
            let messages: Vec<Value> = request
                .messages
                .iter()
                .map(|m| {
                    let content =
                        serde_json::to_value(content_block(&m.content)).unwrap_or(Value::Null);
                    json!({"role": m.role.as_str(), "content": content})
                })
                .collect();
            let mut params = json!({"messages": messages, "maxTokens": request.max_tokens});
            if let Some(system) = &request.system_prompt {
                params["systemPrompt"] = json!(system);
            }
            if let Some(t) = request.temperature {
                params["temperature"] = json!(t);
            }
            let params: CreateMessageRequestParams = wire(params, "sampling request")?;
            let result: CreateMessageResult = match &self.asker {
                Some((_, asker)) => {
                    let request = InputRequest::CreateMessage(CreateMessageRequest::new(params));
                    wire(asker.ask(request).await?, "sampling answer from the client")?
                }
                None => self
                    .peer
                    .create_message(params)
                    .await
                    .map_err(|e| service_error("client", e, "asking the client's model"))?,
            };
            sampling_reply(result)
        })
    }

    fn elicit(&self, request: ElicitationRequest) -> BoxFuture<'_, Result<Elicitation, ToolError>> {
        Box::pin(async move {
            if !self.declares(|c| c.elicitation.is_some()) {
                return Err(cannot_ask("elicitation (asking the user)", "elicitation"));
            }
            let params: ElicitRequestParams = wire(
                json!({"mode": "form", "message": request.message,
                       "requestedSchema": request.schema}),
                "elicitation request (the schema must be a flat object of primitive properties)",
            )?;
            let result: ElicitResult = match &self.asker {
                Some((_, asker)) => {
                    let request = InputRequest::Elicitation(ElicitRequest::new(params));
                    wire(
                        asker.ask(request).await?,
                        "elicitation answer from the client",
                    )?
                }
                None => self
                    .peer
                    .create_elicitation(params)
                    .await
                    .map_err(|e| service_error("client", e, "asking the user"))?,
            };
            Ok(match result.action {
                ElicitationAction::Accept => {
                    Elicitation::Accept(result.content.unwrap_or(Value::Null))
                }
                ElicitationAction::Decline => Elicitation::Decline,
                _ => Elicitation::Cancel,
            })
        })
    }
}

/// The client's sampling answer as ours: its first content block (text, image or audio).
fn sampling_reply(result: CreateMessageResult) -> Result<SamplingReply, ToolError> {
    let message = serde_json::to_value(&result.message).unwrap_or(Value::Null);
    let role = match message["role"].as_str() {
        Some("user") => Role::User,
        _ => Role::Assistant,
    };
    let first = match &message["content"] {
        Value::Array(items) => items.first().cloned(),
        other => Some(other.clone()),
    };
    let content = first
        .and_then(|block| serde_json::from_value::<rmcp::model::ContentBlock>(block).ok())
        .map_or_else(|| ContentPart::text(""), |block| content_part(&block));
    let mut reply = SamplingReply::text("", result.model);
    reply.role = role;
    reply.content = content;
    reply.stop_reason = result.stop_reason;
    Ok(reply)
}
