//! The test tools of the MCP conformance suite (`@modelcontextprotocol/conformance`), written
//! with tinyagent's public API and served over streamable HTTP by `McpServer`.
//!
//! ```text
//! cargo run -p tinyagent-mcp --example conformance_server                   # 127.0.0.1:3001
//! cargo run -p tinyagent-mcp --example conformance_server -- 127.0.0.1:4000
//! npx @modelcontextprotocol/conformance server --url http://127.0.0.1:3001/mcp
//! ```
//!
//! `scripts/conformance.sh` builds it, starts it and runs the suite. The tools: text, image,
//! audio, embedded resource and mixed content; an error; logging and progress during a call;
//! sampling and elicitation (asking the client); and a tool whose input schema uses JSON
//! Schema 2020-12 (`$defs`, `$ref`). Besides tools it offers the suite's prompts (plain, with
//! arguments and their completion, with an embedded resource, with an image) and resources
//! (text, binary, a template, one to subscribe to).

use std::sync::Arc;
use std::time::Duration;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use tinyagent::tools::{self, ToolOutput};
use tinyagent::{
    ContentPart, Tool, ToolContext, ToolError,
    host::{Elicitation, LogLevel, SamplingRequest},
};
use tinyagent_mcp::{
    McpPrompt, McpPromptMessage, McpResource, McpResourceTemplate, McpServer, PromptRole,
    ResourceBody,
};

/// A 1×1 red PNG.
const RED_PIXEL_PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8AARAAA//8DAAX/Af8AAAAASUVORK5CYII=";
/// A WAV file of silence (a header and no samples).
const SILENT_WAV: &str = "UklGRiQAAABXQVZFZm10IBAAAAABAAEAQB8AAIA+AAACABAAZGF0YQAAAAA=";

#[derive(Deserialize, JsonSchema)]
struct NoArguments {}

#[derive(Deserialize, JsonSchema)]
struct Prompt {
    /// The prompt to send to the LLM
    prompt: String,
}

#[derive(Deserialize, JsonSchema)]
struct Ask {
    /// The message to show the user
    message: String,
}

/// A tool of no arguments returning what `f` makes.
fn fixed(name: &'static str, description: &'static str, f: fn() -> ToolOutput) -> Arc<dyn Tool> {
    Arc::new(tools::new_func(
        name,
        description,
        move |_: NoArguments| async move { Ok::<_, ToolError>(f()) },
    ))
}

/// What the client answered, as the suite wants it read back.
fn answer_text(prefix: &str, answer: &Elicitation) -> String {
    match answer {
        Elicitation::Accept(content) => format!("{prefix}action=accept, content={content}"),
        Elicitation::Decline => format!("{prefix}action=decline, content={{}}"),
        _ => format!("{prefix}action=cancel, content={{}}"),
    }
}

/// The suite's test tools: content of each kind, tools that talk to the client during a call,
/// elicitation, and a JSON Schema 2020-12 input schema.
fn conformance_tools() -> Result<Vec<Arc<dyn Tool>>, ToolError> {
    let mut all = content_tools();
    all.extend(tools_that_talk_during_a_call());
    all.extend(elicitation_tools());
    all.push(json_schema_2020_12_tool()?);
    Ok(all)
}

/// Tools of no arguments returning each kind of content: text, an image, a sound, an embedded
/// resource, all of them mixed, and an error.
fn content_tools() -> Vec<Arc<dyn Tool>> {
    vec![
        fixed("test_simple_text", "Returns simple text", || {
            ToolOutput::text("This is a simple text response for testing.")
        }),
        fixed("test_image_content", "Returns an image", || {
            ToolOutput::image(RED_PIXEL_PNG, "image/png")
        }),
        fixed("test_audio_content", "Returns a sound", || {
            ToolOutput::parts([ContentPart::audio(SILENT_WAV, "audio/wav")])
        }),
        fixed(
            "test_embedded_resource",
            "Returns an embedded resource",
            || {
                ToolOutput::parts([ContentPart::resource_text(
                    "test://embedded-resource",
                    Some("text/plain".into()),
                    "This is an embedded resource content.",
                )])
            },
        ),
        fixed(
            "test_multiple_content_types",
            "Returns text, an image and a resource",
            || {
                ToolOutput::text("Multiple content types test:")
                    .with_part(ContentPart::image(RED_PIXEL_PNG, "image/png"))
                    .with_part(ContentPart::resource_text(
                        "test://mixed-content-resource",
                        Some("application/json".into()),
                        r#"{"test":"data","value":123}"#,
                    ))
            },
        ),
        fixed("test_error_handling", "Always fails", || {
            ToolOutput::error("This tool intentionally returns an error for testing")
        }),
    ]
}

/// Tools that log, report progress, pause, or ask the client's model while they run.
fn tools_that_talk_during_a_call() -> Vec<Arc<dyn Tool>> {
    vec![
        Arc::new(tools::new_func(
            "test_tool_with_logging",
            "Logs three messages while it runs",
            |ctx: ToolContext, _: NoArguments| async move {
                ctx.log(LogLevel::Info, "Tool execution started").await;
                tokio::time::sleep(Duration::from_millis(50)).await;
                ctx.log(LogLevel::Info, "Tool processing data").await;
                tokio::time::sleep(Duration::from_millis(50)).await;
                ctx.log(LogLevel::Info, "Tool execution completed").await;
                Ok::<_, ToolError>("Logging test completed")
            },
        )),
        Arc::new(tools::new_func(
            "test_tool_with_progress",
            "Reports progress while it runs",
            |ctx: ToolContext, _: NoArguments| async move {
                for (i, done) in [0.0, 50.0, 100.0].into_iter().enumerate() {
                    if i > 0 {
                        tokio::time::sleep(Duration::from_millis(50)).await;
                    }
                    ctx.progress(done, Some(100.0), None).await;
                }
                Ok::<_, ToolError>("Progress test completed")
            },
        )),
        Arc::new(tools::new_func(
            "test_reconnection",
            "Answers after a pause (the suite's SSE polling check)",
            |_: NoArguments| async move {
                tokio::time::sleep(Duration::from_millis(100)).await;
                Ok::<_, ToolError>("Reconnection test completed")
            },
        )),
        Arc::new(tools::new_func(
            "test_sampling",
            "Asks the client's model",
            |ctx: ToolContext, p: Prompt| async move {
                let reply = ctx.sample(SamplingRequest::text(p.prompt, 100)).await?;
                Ok::<_, ToolError>(format!("LLM response: {}", reply.as_text()))
            },
        )),
    ]
}

/// Tools that ask the user: a free answer, a form with defaults, and choices of each shape.
fn elicitation_tools() -> Vec<Arc<dyn Tool>> {
    vec![
        Arc::new(tools::new_func(
            "test_elicitation",
            "Asks the user",
            |ctx: ToolContext, a: Ask| async move {
                let schema = json!({
                    "type": "object",
                    "properties": {
                        "username": {"type": "string", "description": "User's response"},
                        "email": {"type": "string", "description": "User's email address"}
                    },
                    "required": ["username", "email"]
                });
                let answer = ctx.elicit(a.message, schema).await?;
                Ok::<_, ToolError>(answer_text("User response: ", &answer))
            },
        )),
        elicitation_tool(
            "test_elicitation_sep1034_defaults",
            "Asks the user, with defaults",
            json!({
                "type": "object",
                "properties": {
                    "name": {"type": "string", "default": "John Doe"},
                    "age": {"type": "integer", "default": 30},
                    "score": {"type": "number", "default": 95.5},
                    "status": {"type": "string", "enum": ["active", "inactive", "pending"], "default": "active"},
                    "verified": {"type": "boolean", "default": true}
                }
            }),
        ),
        elicitation_tool(
            "test_elicitation_sep1330_enums",
            "Asks the user to choose",
            json!({
                "type": "object",
                "properties": {
                    "untitledSingle": {"type": "string", "enum": ["option1", "option2", "option3"]},
                    "titledSingle": {"type": "string", "oneOf": [
                        {"const": "value1", "title": "First Option"},
                        {"const": "value2", "title": "Second Option"},
                        {"const": "value3", "title": "Third Option"}
                    ]},
                    "legacyEnum": {"type": "string", "enum": ["opt1", "opt2", "opt3"],
                                   "enumNames": ["Option One", "Option Two", "Option Three"]},
                    "untitledMulti": {"type": "array", "items": {"type": "string", "enum": ["option1", "option2", "option3"]}},
                    "titledMulti": {"type": "array", "items": {"anyOf": [
                        {"const": "value1", "title": "First Choice"},
                        {"const": "value2", "title": "Second Choice"},
                        {"const": "value3", "title": "Third Choice"}
                    ]}}
                }
            }),
        ),
    ]
}

/// A tool whose input schema uses JSON Schema 2020-12 (`$defs`, `$ref`); it echoes its input.
fn json_schema_2020_12_tool() -> Result<Arc<dyn Tool>, ToolError> {
    Ok(Arc::new(tools::try_new_tool(
        "json_schema_2020_12_tool",
        "Tool with JSON Schema 2020-12 features",
        json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "$defs": {
                "address": {
                    "type": "object",
                    "properties": {"street": {"type": "string"}, "city": {"type": "string"}}
                }
            },
            "properties": {
                "name": {"type": "string"},
                "address": {"$ref": "#/$defs/address"}
            },
            "additionalProperties": false
        }),
        |_ctx: ToolContext, input: String| async move {
            Ok::<_, ToolError>(format!("received {input}"))
        },
    )?))
}

/// A tool of no arguments that asks the user with `schema`.
fn elicitation_tool(name: &'static str, description: &'static str, schema: Value) -> Arc<dyn Tool> {
    Arc::new(tools::new_func(
        name,
        description,
        move |ctx: ToolContext, _: NoArguments| {
            let schema = schema.clone();
            async move {
                let answer = ctx
                    .elicit("Please review and update the form fields", schema)
                    .await?;
                Ok::<_, ToolError>(answer_text("Elicitation completed: ", &answer))
            }
        },
    ))
}

/// The suite's prompts and resources.
fn with_prompts_and_resources(server: McpServer) -> McpServer {
    let user = |content| McpPromptMessage::new(PromptRole::User, content);
    server
        .prompt(
            McpPrompt::new("test_simple_prompt", |_| async move {
                Ok(vec![McpPromptMessage::user("This is a simple prompt for testing.")])
            })
            .description("A prompt without arguments"),
        )
        .prompt(
            McpPrompt::new("test_prompt_with_arguments", |args| async move {
                Ok(vec![McpPromptMessage::user(format!(
                    "Prompt with arguments: arg1='{}', arg2='{}'",
                    args["arg1"], args["arg2"]
                ))])
            })
            .description("A prompt with two arguments")
            .completed_argument("arg1", "First test argument", true, ["test", "testing", "other"])
            .argument("arg2", "Second test argument", true),
        )
        .prompt(
            McpPrompt::new("test_prompt_with_embedded_resource", move |args| async move {
                let uri = args["resourceUri"].clone();
                Ok(vec![
                    user(ContentPart::resource_text(
                        uri,
                        Some("text/plain".to_owned()),
                        "Embedded resource content for testing.",
                    )),
                    McpPromptMessage::user("Please process the embedded resource above."),
                ])
            })
            .description("A prompt embedding a resource")
            .argument("resourceUri", "URI of the resource to embed", true),
        )
        .prompt(
            McpPrompt::new("test_prompt_with_image", move |_| async move {
                Ok(vec![
                    user(ContentPart::image(RED_PIXEL_PNG, "image/png")),
                    McpPromptMessage::user("Please analyze the image above."),
                ])
            })
            .description("A prompt with an image"),
        )
        .resource(
            McpResource::text(
                "test://static-text",
                "static text",
                "text/plain",
                "This is the content of the static text resource.",
            )
            .description("A text resource"),
        )
        .resource(
            McpResource::new("test://static-binary", "static binary", "image/png", || async {
                use base64::Engine as _;
                let png = base64::engine::general_purpose::STANDARD
                    .decode(RED_PIXEL_PNG)
                    .map_err(|e| ToolError::failed(e.to_string()))?;
                Ok(ResourceBody::Bytes(png))
            })
            .description("A binary resource"),
        )
        .resource(
            McpResource::text("test://watched-resource", "watched", "text/plain", "unchanged")
                .description("A resource to subscribe to"),
        )
        .resource_template(
            McpResourceTemplate::new("test://template/{id}/data", "data by id", "application/json", |vars| async move {
                let id = &vars["id"];
                let data = json!({"id": id, "templateTest": true, "data": format!("Data for ID: {id}")});
                Ok(ResourceBody::Text(data.to_string()))
            })
            .description("Data for an id"),
        )
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let addr = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:3001".to_owned());
    let server = with_prompts_and_resources(McpServer::new(conformance_tools()?))
        .server_name("tinyagent-conformance")
        .serve_http(addr.as_str())
        .await?;
    println!("listening on {}", server.url());
    tokio::signal::ctrl_c().await?;
    server.shutdown().await;
    Ok(())
}
