//! The [`ToolHost`] an agent attaches to each tool call: progress becomes an
//! [`Event::ToolProgress`], log messages go to `tracing`, and sampling and elicitation go to
//! the host the agent itself runs under (an MCP server serving the agent as a tool), if any.

use std::sync::Arc;

use serde_json::Value;

use super::Event;
use crate::context::{
    Elicitation, ElicitationRequest, LogLevel, SamplingReply, SamplingRequest, ToolHost,
};
use crate::error::ToolError;
use crate::util::BoxFuture;

/// The host of one call.
pub(super) struct AgentHost {
    pub call_id: String,
    pub emit: Arc<dyn Fn(Event) + Send + Sync>,
    pub outer: Option<Arc<dyn ToolHost>>,
}

impl ToolHost for AgentHost {
    fn progress(
        &self,
        progress: f64,
        total: Option<f64>,
        message: Option<String>,
    ) -> BoxFuture<'_, ()> {
        (self.emit)(Event::ToolProgress {
            call_id: self.call_id.clone(),
            progress,
            total,
            message: message.clone(),
        });
        Box::pin(async move {
            if let Some(outer) = &self.outer {
                outer.progress(progress, total, message).await;
            }
        })
    }

    fn log(&self, level: LogLevel, logger: Option<String>, data: Value) -> BoxFuture<'_, ()> {
        let logger_name = logger.as_deref().unwrap_or("");
        match level {
            LogLevel::Debug => {
                tracing::debug!(gen_ai.tool.call.id = %self.call_id, logger = logger_name, "{data}");
            }
            LogLevel::Info | LogLevel::Notice => {
                tracing::info!(gen_ai.tool.call.id = %self.call_id, logger = logger_name, "{data}");
            }
            LogLevel::Warning => {
                tracing::warn!(gen_ai.tool.call.id = %self.call_id, logger = logger_name, "{data}");
            }
            _ => {
                tracing::error!(gen_ai.tool.call.id = %self.call_id, logger = logger_name, "{data}");
            }
        }
        Box::pin(async move {
            if let Some(outer) = &self.outer {
                outer.log(level, logger, data).await;
            }
        })
    }

    fn sample(&self, request: SamplingRequest) -> BoxFuture<'_, Result<SamplingReply, ToolError>> {
        match &self.outer {
            Some(outer) => outer.sample(request),
            None => Box::pin(async {
                Err(crate::context::unsupported_request(
                    "sampling (asking the client's model)",
                ))
            }),
        }
    }

    fn elicit(&self, request: ElicitationRequest) -> BoxFuture<'_, Result<Elicitation, ToolError>> {
        match &self.outer {
            Some(outer) => outer.elicit(request),
            None => Box::pin(async {
                Err(crate::context::unsupported_request(
                    "elicitation (asking the user)",
                ))
            }),
        }
    }
}
