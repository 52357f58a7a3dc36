//! One tool of an MCP server as a tinyagent [`Tool`], and what the toolset tells about it.

use std::sync::Arc;
use std::time::Duration;

use rmcp::model::CallToolRequestParams;
use rmcp::{Peer, RoleClient};
use serde_json::Value;
use tinyagent::tools::{ToolInput, ToolOutput};
use tinyagent::{
    BoxFuture, Tool, ToolContext, ToolError, ToolErrorKind, ToolHints, tools::content_text,
};
use tracing::Instrument as _;

use super::bridge::Bridge;
use crate::protocol::content::{bound_parts, result_text, tool_output, truncate_result};
use crate::protocol::errors::service_error;
use crate::protocol::request_id::request_id_text;
use crate::protocol::telemetry;

/// How long a call waits at most, once answered, for its progress to be passed on.
const PROGRESS_SETTLE: std::time::Duration = std::time::Duration::from_secs(1);

/// What an MCP server says about one of its tools, and how the toolset offers it: from
/// [`McpToolset::tool_infos`](crate::McpToolset::tool_infos).
///
/// The offered [`name`](Self::name) differs from the server's
/// [`remote_name`](Self::remote_name) when a prefix is set or the server's name is not a valid
/// tool name for model APIs (`files.read`, `météo`): see
/// [`McpToolset`](crate::McpToolset#tool-names).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct McpToolInfo {
    /// The name the tool is offered under (or would be, when it is not offered).
    pub name: String,
    /// The name the server gives it; calls go out under this name.
    pub remote_name: String,
    /// A human-readable title, when the server gives one (`title`, else the annotations').
    pub title: Option<String>,
    /// The server's description.
    pub description: Option<String>,
    /// The input schema, as the server gives it.
    pub input_schema: Value,
    /// The schema of the tool's structured output, when the server gives one.
    pub output_schema: Option<Value>,
    /// The tool's annotations as hints.
    pub hints: ToolHints,
    /// Why the tool is not offered to the model (`None`: it is offered).
    pub not_offered: Option<String>,
}

impl McpToolInfo {
    /// Whether the offered name differs from the server's (besides the prefix).
    pub fn renamed(&self, prefix: &str) -> bool {
        self.name != format!("{prefix}{}", self.remote_name)
    }
}

/// Where a tool finds its server's connection: the toolset's live one, made again when the
/// server went away.
pub(crate) trait PeerSource: Send + Sync {
    /// The connection now, and its number: connects if there is none (or fails at once while
    /// a server that cannot be reached is waited out).
    fn peer(&self) -> BoxFuture<'_, Result<(Peer<RoleClient>, u64), ToolError>>;

    /// A call found connection `generation` gone: it is made again.
    fn lost(&self, generation: u64, why: &str);
}

/// One tool of an MCP server, as a tinyagent [`Tool`].
pub(crate) struct McpTool {
    pub name: String,
    pub remote: String,
    pub description: String,
    pub title: Option<String>,
    pub output_schema: Option<Value>,
    pub schema: Value,
    pub hints: ToolHints,
    pub link: Arc<dyn PeerSource>,
    pub bridge: Arc<Bridge>,
    pub label: Arc<str>,
    pub call_timeout: Duration,
    pub max_result_bytes: usize,
}

impl Tool for McpTool {
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
        self.hints
    }

    fn title(&self) -> Option<&str> {
        self.title.as_deref()
    }

    fn output_schema(&self) -> Option<&Value> {
        self.output_schema.as_ref()
    }

    fn call<'a>(
        &'a self,
        ctx: &'a ToolContext,
        input: ToolInput,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let arguments = arguments_of(input)?;
            let mut params = CallToolRequestParams::new(self.remote.clone());
            params.arguments = arguments;
            let span = telemetry::client_span(&mut params, &self.label);
            let answer = self.send(params, ctx).instrument(span.clone()).await;
            match &answer {
                Ok(output) if output.is_error() => telemetry::fail(&span, "tool_error"),
                Ok(_) => {}
                Err(err) => telemetry::fail(&span, err.kind().as_str()),
            }
            answer
        })
    }
}

impl McpTool {
    /// Sends the call and reads its answer.
    async fn send(
        &self,
        params: CallToolRequestParams,
        ctx: &ToolContext,
    ) -> Result<ToolOutput, ToolError> {
        // The connection now: a server that went away is connected again first.
        let (peer, generation) = self.link.peer().await?;
        // The call: the server's progress and logs, and what it asks during the call,
        // reach this call's host. rmcp gives the request a progress token of its own,
        // which the call adopts as soon as the request is on its way.
        let call = self.bridge.begin(ctx.host().cloned());
        let label = &self.label;
        let timeout = self.call_timeout;
        let answer = tokio::time::timeout(timeout, async {
            let request = rmcp::model::ClientRequest::CallToolRequest(
                rmcp::model::CallToolRequest::new(params),
            );
            let handle = peer
                .send_request_with_option(request, rmcp::service::PeerRequestOptions::no_options())
                .await?;
            call.adopt(&handle.progress_token);
            let id = handle.id.clone();
            let request_id = request_id_text(&id);
            tracing::Span::current().record("jsonrpc.request.id", request_id.as_str());
            let cancel = CancelOnDrop(Some((peer.clone(), id)));
            let result = handle.await_response().await;
            cancel.disarm();
            result
        })
        .await;
        // Notifications the server sent before its answer are handled on tasks of their
        // own (rmcp spawns one per notification): wait until every progress notification
        // of the call read off the connection before its answer has been passed on (a
        // gateway must not answer before it has relayed it). A host that takes longer
        // than a second to take progress gets no more.
        let _ = tokio::time::timeout(PROGRESS_SETTLE, call.progress_passed_on()).await;
        drop(call);
        let result = match answer {
            Ok(Ok(rmcp::model::ServerResult::CallToolResult(result))) => result,
            Ok(Ok(other)) => {
                return Err(ToolError::failed(format!(
                    "MCP tool `{}` of server `{label}` answered with something other than a \
                         tool result: {}",
                    self.remote,
                    serde_json::to_string(&other).unwrap_or_default()
                )));
            }
            Ok(Err(err)) => {
                let doing = format!("calling tool `{}`", self.remote);
                let err = service_error(label, err, &doing);
                if err.kind() == ToolErrorKind::Unavailable {
                    self.link.lost(generation, err.message());
                }
                return Err(err);
            }
            Err(_) => {
                return Err(ToolError::timed_out(format!(
                    "MCP tool `{}` of server `{label}` did not answer within {timeout:?}",
                    self.remote
                )));
            }
        };
        let text = truncate_result(result_text(&result), self.max_result_bytes);
        if result.is_error == Some(true) {
            let message = if text.is_empty() {
                format!("MCP tool `{}` failed without a message", self.remote)
            } else {
                text
            };
            return Err(ToolError::failed(message));
        }
        let output = tool_output(&result);
        if output.content_parts().iter().all(|p| p.is_text())
            && output.structured_content().is_none()
        {
            return Ok(ToolOutput::text(text));
        }
        // Media, resources or structured content: all of it goes to whoever runs the call
        // (an agent hands images to providers that take them), bounded like text.
        let (_, parts, structured) = output.into_parts();
        let parts = bound_parts(parts, self.max_result_bytes);
        let mut output = if parts.is_empty() {
            ToolOutput::text(text)
        } else {
            let text = truncate_result(content_text(&parts), self.max_result_bytes);
            ToolOutput::parts(parts).with_text(text)
        };
        if let Some(value) = structured.filter(|s| s.to_string().len() <= self.max_result_bytes) {
            output = output.with_structured(value);
        }
        Ok(output)
    }
}

/// The call's arguments as the JSON object MCP sends, read by the core's strict reader
/// (`tools::parse_arguments`: blank means `{}`, duplicate keys and lone surrogates are refused,
/// errors are bounded); `null` counts as no arguments.
fn arguments_of(input: ToolInput) -> Result<Option<serde_json::Map<String, Value>>, ToolError> {
    match input.into_value()? {
        Value::Object(map) => Ok(Some(map)),
        Value::Null => Ok(Some(serde_json::Map::new())),
        other => Err(ToolError::invalid_input(format!(
            "invalid arguments: expected a JSON object, got {}",
            kind_of(&other)
        ))),
    }
}

fn kind_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// Tells the server a call is abandoned (a timeout, the caller gone) unless disarmed: what
/// rmcp's own `call_tool` does, for the call sent here.
struct CancelOnDrop(Option<(Peer<RoleClient>, rmcp::model::RequestId)>);

impl CancelOnDrop {
    fn disarm(mut self) {
        self.0 = None;
    }
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        if let Some((peer, id)) = self.0.take()
            && let Ok(runtime) = tokio::runtime::Handle::try_current()
        {
            runtime.spawn(async move {
                let params = rmcp::model::CancelledNotificationParam::new(
                    Some(id),
                    Some("the call was abandoned".to_owned()),
                );
                let _ = peer.notify_cancelled(params).await;
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmcp::service::ServiceError;

    #[test]
    fn arguments_must_be_a_json_object() {
        let args = |text: &str| arguments_of(ToolInput::from_text(text));
        assert!(args("").unwrap().unwrap().is_empty());
        assert_eq!(args(r#"{"a":1}"#).unwrap().unwrap()["a"], 1);
        let err = args("[1]").unwrap_err();
        assert_eq!(err.kind(), tinyagent::ToolErrorKind::InvalidInput);
        assert!(err.message().contains("an array"), "{err}");
        let err = args("{").unwrap_err();
        assert!(err.message().contains("not valid JSON"), "{err}");
        let err = args(r#"{"a":1,"a":2}"#).unwrap_err();
        assert_eq!(err.kind(), tinyagent::ToolErrorKind::InvalidInput);
    }

    #[test]
    fn transport_errors_name_no_internal_types() {
        let inner = rmcp::transport::DynamicTransportError::from_parts(
            "rmcp::transport::worker::WorkerTransport<X>",
            std::any::TypeId::of::<u8>(),
            Box::new(std::io::Error::other("broken pipe")),
        );
        let err = service_error(
            "srv",
            ServiceError::TransportSend(inner),
            "calling tool `x`",
        );
        assert_eq!(err.kind(), ToolErrorKind::Unavailable);
        assert!(err.message().contains("broken pipe"), "{err}");
        assert!(!err.message().contains("rmcp::"), "{err}");
        assert!(!err.message().contains("Transport ["), "{err}");
    }
}
