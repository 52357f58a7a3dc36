//! A served `tools/call`: the call's host (progress, logs, sampling, elicitation go to the
//! client that asked) and its cancellation.

use std::sync::Arc;

use crate::server::{McpServer, request_id_text};
use crate::server_host::{LogFilter, ServerHost, is_stateless};

impl McpServer {
    /// Answers a `tools/call`: its request id is the call id, a cancelled request drops the
    /// tool's future, and the tool's progress, logs, sampling and elicitation go to this
    /// client (through input-required results for a client of 2026-07-28).
    pub(crate) async fn answer_call(
        &self,
        request: rmcp::model::CallToolRequestParams,
        context: rmcp::service::RequestContext<rmcp::RoleServer>,
    ) -> Result<rmcp::model::CallToolResponse, rmcp::ErrorData> {
        let stateless = is_stateless(&context.peer);
        if stateless {
            return self.call_waiting(request, context).await;
        }
        let host = ServerHost {
            peer: context.peer.clone(),
            progress_token: context.meta.get_progress_token(),
            log_filter: LogFilter::for_request(&context.meta, stateless, &self.log_level),
            stateless,
            tool: request.name.to_string(),
            asker: None,
        };
        let ctx = tinyagent::ToolContext::new()
            .with_call_id(request_id_text(&context.id))
            .with_host(Arc::new(host));
        tokio::select! {
            result = self.call_with(&request.name, request.arguments, ctx) => {
                result.map(rmcp::model::CallToolResponse::Complete)
            }
            () = context.ct.cancelled() => Err(rmcp::ErrorData::internal_error(
                format!("the call to `{}` was cancelled", request.name),
                None,
            )),
        }
    }
}
