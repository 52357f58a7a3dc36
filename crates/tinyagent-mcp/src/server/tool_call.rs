//! A served `tools/call`: the call's host (progress, logs, sampling, elicitation go to the
//! client that asked) and its cancellation; on protocol 2026-07-28 and later, a call that
//! waits for its client across requests (see `input_required`).

use std::sync::Arc;

use rmcp::ErrorData;
use rmcp::model::CallToolResponse;

use super::McpServer;
use super::host::{ServerHost, is_stateless};
use super::input_required::Call;
use super::log_filter::LogFilter;
use crate::protocol::request_id::request_id_text;

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

    /// A `tools/call` of protocol 2026-07-28 and later: the call runs on a task of its own,
    /// so that it can wait for the client's answers across requests; a retry (with its
    /// `requestState`) resumes it.
    pub(crate) async fn call_waiting(
        &self,
        request: rmcp::model::CallToolRequestParams,
        context: rmcp::service::RequestContext<rmcp::RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let waiting = &self.inner.waiting;
        let call = match &request.request_state {
            Some(state) => waiting.resume(state, &request.name, request.input_responses)?,
            None => {
                let server = self.clone();
                let capabilities = context.meta.client_capabilities();
                let host = ServerHost {
                    peer: context.peer.clone(),
                    progress_token: context.meta.get_progress_token(),
                    log_filter: LogFilter::for_request(&context.meta, true, &self.log_level),
                    stateless: true,
                    tool: request.name.to_string(),
                    asker: None,
                };
                let id = request_id_text(&context.id);
                let name = request.name.clone();
                Call::start(&name, move |asker| async move {
                    let host = ServerHost {
                        asker: Some((capabilities, asker)),
                        ..host
                    };
                    let ctx = tinyagent::ToolContext::new()
                        .with_call_id(id)
                        .with_host(Arc::new(host));
                    server
                        .call_with(&request.name, request.arguments, ctx)
                        .await
                })
            }
        };
        waiting.drive(call, context.ct).await
    }
}
