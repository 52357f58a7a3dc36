//! The toolset against a hand-written rmcp server: tool lists in several pages, odd names and
//! content kinds, and an error result without text.

use std::sync::Arc;

use serde_json::json;
use tinyagent::{Tool, ToolContext, ToolErrorKind};
use tinyagent_mcp::McpToolset;
use tinyagent_mcp::rmcp::handler::server::ServerHandler;
use tinyagent_mcp::rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, EmbeddedResource,
    ListToolsResult, PaginatedRequestParams, ResourceContents, ServerCapabilities, ServerConfig,
    TextContent, Tool as McpTool,
};
use tinyagent_mcp::rmcp::service::{RequestContext, RoleServer};
use tinyagent_mcp::rmcp::transport::streamable_http_server::StreamableHttpService;
use tinyagent_mcp::rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use tinyagent_mcp::rmcp::{ErrorData, model::JsonObject};

#[derive(Clone)]
struct PagedServer;

fn tool(name: &str) -> McpTool {
    let schema: JsonObject = serde_json::from_value(json!({"type": "object"})).unwrap();
    McpTool::new(name.to_owned(), format!("tool {name}"), Arc::new(schema))
}

impl ServerHandler for PagedServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let cursor = request.and_then(|r| r.cursor);
        let (names, next): (&[&str], Option<&str>) = match cursor.as_deref() {
            None => (&["first", "second"], Some("page-2")),
            Some("page-2") => (&["third", "odd name/with:chars"], Some("page-3")),
            Some("page-3") => (&["resources", "silent_error", "..."], None),
            Some(other) => {
                return Err(ErrorData::invalid_params(
                    format!("bad cursor {other}"),
                    None,
                ));
            }
        };
        let mut result = ListToolsResult::with_all_items(names.iter().map(|n| tool(n)).collect());
        result.next_cursor = next.map(str::to_owned);
        Ok(result)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let result = match &*request.name {
            "resources" => CallToolResult::success(vec![
                ContentBlock::Resource(EmbeddedResource::new(ResourceContents::text(
                    "file body",
                    "file:///notes.txt",
                ))),
                ContentBlock::Resource(EmbeddedResource::new(
                    ResourceContents::BlobResourceContents {
                        uri: "file:///a.bin".to_owned(),
                        mime_type: Some("application/octet-stream".to_owned()),
                        blob: "AAAA".to_owned(),
                        meta: None,
                    },
                )),
            ]),
            "silent_error" => CallToolResult::error(vec![]),
            name => CallToolResult::success(vec![ContentBlock::Text(TextContent::new(format!(
                "called {name} with {}",
                serde_json::Value::Object(request.arguments.unwrap_or_default())
            )))]),
        };
        Ok(CallToolResponse::Complete(result))
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_page_is_listed_and_odd_servers_do_not_break_the_toolset() {
    let service: StreamableHttpService<PagedServer, LocalSessionManager> =
        StreamableHttpService::new(|| Ok(PagedServer), Default::default(), Default::default());
    let router = axum::Router::new().nest_service("/mcp", service);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let server = tokio::spawn(async move { axum::serve(listener, router).await });

    let toolset = McpToolset::http(format!("http://{addr}/mcp")).prefix("p_");
    let tools = toolset.tools().await.unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name()).collect();
    assert_eq!(
        names,
        [
            "p_first",
            "p_second",
            "p_third",
            "p_odd_name_with_chars",
            "p_resources",
            "p_silent_error",
            "p____"
        ],
        "three pages, names sanitized"
    );

    let find =
        |name: &str| -> Arc<dyn Tool> { tools.iter().find(|t| t.name() == name).cloned().unwrap() };
    let ctx = ToolContext::new();
    let out = find("p_odd_name_with_chars")
        .handle(&ctx, r#"{"x": 1}"#)
        .await
        .unwrap();
    assert_eq!(
        out, r#"called odd name/with:chars with {"x":1}"#,
        "called by its own name"
    );

    let out = find("p_resources").handle(&ctx, "").await.unwrap();
    assert_eq!(
        out,
        "[resource file:///notes.txt (text/plain)]\nfile body\n\
         [resource file:///a.bin (application/octet-stream), 3 B]"
    );

    let err = find("p_silent_error").handle(&ctx, "{}").await.unwrap_err();
    assert_eq!(err.kind(), ToolErrorKind::Failed);
    assert!(err.message().contains("failed without a message"), "{err}");

    let err = find("p_first").handle(&ctx, "[1, 2]").await.unwrap_err();
    assert_eq!(err.kind(), ToolErrorKind::InvalidInput, "{err}");

    drop(toolset);
    server.abort();
}
