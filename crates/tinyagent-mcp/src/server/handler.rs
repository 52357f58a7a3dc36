//! The MCP server's handler: rmcp's [`ServerHandler`] for [`McpServer`], each request handed
//! to the part of the server that answers it.

use rmcp::ErrorData;
use rmcp::handler::server::ServerHandler;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CustomRequest, CustomResult, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig, SubscriptionFilter,
};
use rmcp::service::{RequestContext, RoleServer};
use tracing::Instrument as _;

use super::McpServer;
use super::catalog::value_text;
use super::errors::custom_request_error;
use crate::protocol::logging::log_level;
use crate::protocol::request_id::request_id_text;
use crate::protocol::telemetry;

impl ServerHandler for McpServer {
    #[allow(deprecated)] // rmcp marks logging deprecated (SEP-2577); clients use it.
    fn get_info(&self) -> ServerConfig {
        let mut capabilities = ServerCapabilities::builder()
            .enable_tools()
            .enable_logging()
            .build();
        let catalog = &self.inner.catalog;
        if !catalog.prompts.is_empty() {
            capabilities.prompts = Some(Default::default());
        }
        if catalog.completes() {
            capabilities.completions = Some(Default::default());
        }
        if !catalog.resources.is_empty() || !catalog.templates.is_empty() {
            let mut resources = rmcp::model::ResourcesCapability::default();
            resources.subscribe = catalog.subscribable().then_some(true);
            capabilities.resources = Some(resources);
        }
        let config =
            ServerConfig::new(capabilities).with_server_info(self.inner.implementation.clone());
        match &self.inner.instructions {
            Some(instructions) => config.with_instructions(instructions.clone()),
            None => config,
        }
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(
            self.inner.tools.iter().map(|t| t.listed.clone()).collect(),
        ))
    }

    fn get_tool(&self, name: &str) -> Option<rmcp::model::Tool> {
        self.inner
            .by_name
            .get(name)
            .map(|&i| self.inner.tools[i].listed.clone())
    }

    #[allow(deprecated)] // rmcp marks logging deprecated (SEP-2577); clients use it.
    async fn set_level(
        &self,
        request: rmcp::model::SetLevelRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.log_level.set(log_level(request.level));
        Ok(())
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::ListPromptsResult, ErrorData> {
        Ok(self.inner.catalog.list_prompts())
    }

    async fn get_prompt(
        &self,
        request: rmcp::model::GetPromptRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::GetPromptResponse, ErrorData> {
        let arguments = request.arguments.unwrap_or_default().into_iter();
        let arguments = arguments.map(|(k, v)| (k, value_text(v))).collect();
        self.inner
            .catalog
            .get_prompt(&request.name, arguments)
            .await
            .map(Into::into)
    }

    async fn complete(
        &self,
        request: rmcp::model::CompleteRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::CompleteResult, ErrorData> {
        if !self.inner.catalog.completes() {
            return Err(ErrorData::new(
                rmcp::model::ErrorCode::METHOD_NOT_FOUND,
                "Method not found: completion/complete (this server completes no argument)",
                None,
            ));
        }
        self.inner.catalog.complete(&request).await
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::ListResourcesResult, ErrorData> {
        Ok(self.inner.catalog.list_resources())
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::ListResourceTemplatesResult, ErrorData> {
        Ok(self.inner.catalog.list_templates())
    }

    async fn read_resource(
        &self,
        request: rmcp::model::ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::ReadResourceResponse, ErrorData> {
        self.inner.catalog.read(&request.uri).await.map(Into::into)
    }

    async fn subscribe(
        &self,
        request: rmcp::model::SubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.session_subscribe(&request.uri, context.peer).await
    }

    async fn unsubscribe(
        &self,
        request: rmcp::model::UnsubscribeRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.session_unsubscribe(&request.uri).await
    }

    fn accepted_subscription_filter(
        &self,
        requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        Some(self.listen_filter(requested))
    }

    async fn listen(&self, context: rmcp::service::SubscriptionContext) -> Result<(), ErrorData> {
        self.listen_to(context).await;
        Ok(())
    }

    async fn on_custom_request(
        &self,
        request: CustomRequest,
        _context: RequestContext<RoleServer>,
    ) -> Result<CustomResult, ErrorData> {
        Err(custom_request_error(&request))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let id = request_id_text(&context.id);
        let span = telemetry::server_span(&request, &context.meta, &id);
        let answer = self
            .answer_call(request, context)
            .instrument(span.clone())
            .await;
        telemetry::end_response(&span, &answer);
        answer
    }
}
