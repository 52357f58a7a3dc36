//! From a [`ModelRequest`] to a chat for the model's template and an output contract, and from
//! the model's output back to message parts.

use serde_json::{Map, Value, json};
use tinyagent::tools::schema::SchemaValidator;
use tinyagent::{
    Message, ModelError, ModelRequest, Part, Role, ToolCall,
    model::{ModelErrorKind, ToolChoice, ToolDefinition},
    store::new_id,
};

use crate::LlamaConfig;

mod answer;
mod confirm;
mod direct;
mod grounding;
mod schema;

pub(crate) use answer::*;
pub(crate) use confirm::{CONFIRM_NO, CONFIRM_YES, confirm_chat};
use direct::capabilities_note;
pub(crate) use grounding::invented_arguments;
pub(crate) use schema::*;

/// One message for the chat template: a role name and its text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ChatTurn {
    pub role: &'static str,
    pub content: String,
}

/// What the model must produce this step.
#[derive(Debug)]
pub(crate) enum Output {
    /// Free text, until the model's end-of-turn token.
    Text,
    /// One JSON object: `{"answer": "…"}` (when `allow_answer`) or
    /// `{"name": "<tool>", "arguments": {…}}` for one of `tools`.
    Json(JsonOutput),
}

/// The JSON output contract of a tool-calling step.
#[derive(Debug)]
pub(crate) struct JsonOutput {
    /// The tools the model may name (those offered by the request, after `tool_choice`).
    pub tools: Vec<ToolDefinition>,
    /// Whether `{"answer": "…"}` is allowed.
    pub allow_answer: bool,
    /// The JSON Schema every output must match; turned into a grammar.
    pub schema: Value,
}

/// A prepared step: the chat to render and the output contract.
#[derive(Debug)]
pub(crate) struct Plan {
    pub chat: Vec<ChatTurn>,
    pub output: Output,
}

const DEFAULT_INSTRUCTION: &str = "You are a helpful assistant.";

/// What the option of answering directly says, listed with the tools in [`Format::Json`]:
/// an answer is chosen the way a tool is, by the model's own reading of the list.
const ANSWER_DESCRIPTION: &str = "reply to the user yourself, when none of the tools above is \
     needed: greetings, thanks, small talk, questions about you, and requests the tools cannot \
     serve";

/// How the tools and the output protocol are written for the model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Style {
    /// The call syntax.
    pub format: Format,
    /// Leave the arguments' descriptions out of the tool list.
    pub terse: bool,
    /// Show one example call per tool, its values derived from the tool's schema.
    pub examples: bool,
    /// Ask for the answer in the language of the question.
    pub follow_language: bool,
}

/// The call syntax the prompt teaches (resolved from [`crate::ToolFormat`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Format {
    /// `{"name": …, "arguments": {…}}` or `{"answer": …}`, tools listed in words.
    Json,
    /// The tools as JSON inside `<tools></tools>`, calls inside `<tool_call>[…]</tool_call>`
    /// (`[]` for none).
    Tagged,
    /// The Hermes format Qwen 2.5 and Hermes-style models are trained on, word for word as
    /// their chat templates write it: one `{"type": "function", …}` line per tool inside
    /// `<tools></tools>`, each call `<tool_call>\n{"name": …, "arguments": {…}}\n</tool_call>`,
    /// results inside `<tool_response></tool_response>`; no call is an answer in plain text.
    Hermes,
}

impl Format {
    /// The syntax a chat template teaches: Hermes when it has `<tool_call>` and
    /// `<tool_response>` sections (not a `<tool_call>[` list), tagged for other `<tool_call>` or
    /// `<tools>` templates, else JSON.
    pub(crate) fn of_template(template: &str) -> Self {
        let calls = template.contains("<tool_call>");
        if calls && template.contains("<tool_response>") && !template.contains("<tool_call>[") {
            Self::Hermes
        } else if calls || template.contains("<tools>") {
            Self::Tagged
        } else {
            Self::Json
        }
    }
}

impl Format {
    /// The text of a call to `name` up to where its arguments begin.
    pub fn call_prefix(self, name: &str) -> String {
        let name = Value::String(name.to_owned());
        match self {
            Self::Json => format!("{{\"name\": {name}, \"arguments\": "),
            Self::Tagged => format!("<tool_call>[{{\"name\": {name}, \"arguments\": "),
            Self::Hermes => format!("{HERMES_OPEN}{{\"name\": {name}, \"arguments\": "),
        }
    }

    /// The text of a call to `name` up to the end of the name: what tool choice scores.
    pub fn choice(self, name: &str) -> String {
        let name = Value::String(name.to_owned());
        match self {
            Self::Json => format!("{{\"name\": {name}"),
            Self::Tagged => format!("<tool_call>[{{\"name\": {name}"),
            Self::Hermes => format!("{HERMES_OPEN}{{\"name\": {name}"),
        }
    }

    /// The text that says "no tool, an answer": what tool choice scores against the calls.
    /// `None` when an answer is anything but a call: its score is then the probability that
    /// the reply does not open with [`Format::call_opening`].
    pub fn no_call(self) -> Option<&'static str> {
        match self {
            Self::Json => Some("{\"answer\""),
            Self::Tagged => Some("<tool_call>[]"),
            Self::Hermes => None,
        }
    }

    /// How every call begins.
    pub fn call_opening(self) -> &'static str {
        match self {
            Self::Json => "{\"name\"",
            Self::Tagged => "<tool_call>[",
            Self::Hermes => "<tool_call>",
        }
    }

    /// An assistant's call as the history shows it.
    fn show_call(self, call: &ToolCall) -> String {
        match self {
            Self::Json => call_json(call),
            Self::Tagged => format!("<tool_call>[{}]</tool_call>", call_json(call)),
            Self::Hermes => format!("{HERMES_OPEN}{}\n</tool_call>", call_json(call)),
        }
    }
}

/// How a call opens in [`Format::Hermes`].
const HERMES_OPEN: &str = "<tool_call>\n";

/// Decides the output contract and writes the chat for `req`.
pub(crate) fn plan(
    req: &ModelRequest,
    config: &LlamaConfig,
    style: Style,
) -> Result<Plan, ModelError> {
    let output = output_for(req, config)?;
    let chat = chat_for(req, &output, style, false);
    Ok(Plan { chat, output })
}

/// The chat for a plain-text answer to `req` (no tool may be called).
pub(crate) fn answer_plan(req: &ModelRequest, style: Style) -> Plan {
    let output = Output::Text;
    let chat = chat_for(req, &output, style, false);
    Plan { chat, output }
}

/// The chat for an answer given instead of a tool call: as [`answer_plan`], told what the
/// offered tools can do (so that a request none of them serves is answered with that, not as
/// if it were done).
pub(crate) fn direct_answer_plan(req: &ModelRequest, style: Style) -> Plan {
    let output = Output::Text;
    let chat = chat_for(req, &output, style, true);
    Plan { chat, output }
}

fn output_for(req: &ModelRequest, config: &LlamaConfig) -> Result<Output, ModelError> {
    if req.tools.is_empty() {
        return match &req.tool_choice {
            Some(ToolChoice::Required | ToolChoice::Tool(_)) => Err(invalid(
                "tool_choice asks for a tool call but the request offers no tools",
            )),
            _ => Ok(Output::Text),
        };
    }
    let (tools, allow_answer) = match &req.tool_choice {
        Some(ToolChoice::None) => return Ok(Output::Text),
        Some(ToolChoice::Required) => (req.tools.to_vec(), false),
        Some(ToolChoice::Tool(name)) => {
            let Some(tool) = req.tools.iter().find(|t| &t.name == name) else {
                return Err(invalid(format!(
                    "tool_choice names the tool {name:?}, which the request does not offer \
                     (offered: {})",
                    names(&req.tools)
                )));
            };
            (vec![tool.clone()], false)
        }
        _ => {
            if tool_rounds(&req.messages) >= config.max_tool_rounds as usize {
                return Ok(Output::Text);
            }
            (req.tools.to_vec(), true)
        }
    };
    let schema = output_schema(&tools, allow_answer);
    Ok(Output::Json(JsonOutput {
        tools,
        allow_answer,
        schema,
    }))
}

/// Assistant tool-call messages since the user's last message.
fn tool_rounds(messages: &[Message]) -> usize {
    messages
        .iter()
        .rev()
        .take_while(|m| m.role != Role::User)
        .filter(|m| m.role == Role::Assistant && m.has_tool_calls())
        .count()
}

fn names(tools: &[ToolDefinition]) -> String {
    tools
        .iter()
        .map(|t| t.name.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

fn invalid(message: impl Into<String>) -> ModelError {
    ModelError::new(ModelErrorKind::InvalidRequest, message.into())
}

/// The system message: the instruction, then the tools and the call syntax, or what the
/// answer must be (`direct`: an answer given instead of a tool call).
fn system_prompt(req: &ModelRequest, output: &Output, style: Style, direct: bool) -> String {
    let mut text = if req.instruction.trim().is_empty() {
        DEFAULT_INSTRUCTION.to_owned()
    } else {
        req.instruction.trim().to_owned()
    };
    match output {
        Output::Json(out) => {
            match style.format {
                Format::Json => json_tool_list(&mut text, out, style),
                Format::Tagged => tagged_tool_list(&mut text, out, style),
                Format::Hermes => hermes_tool_list(&mut text, out, style),
            }
            if style.examples {
                text.push_str("\nExamples:");
                for tool in &out.tools {
                    let call = example_call(tool);
                    text.push_str(&format!("\n{}", style.format.show_call(&call)));
                }
            }
        }
        Output::Text => answer_note(&mut text, req, style, direct),
    }
    text
}

/// The tools as a list of names, descriptions and arguments, answering as one more entry, and
/// the JSON object to reply with ([`Format::Json`]).
fn json_tool_list(text: &mut String, out: &JsonOutput, style: Style) {
    text.push_str("\n\nYou can use these tools:\n");
    for tool in &out.tools {
        text.push_str(&format!("- {}: {}\n", tool.name, tool.description));
        describe_arguments(text, &tool.input_schema, style.terse);
    }
    // Answering is one more entry of the list: the model weighs it against the tools as it
    // weighs the tools against each other.
    if out.allow_answer {
        text.push_str(&format!(
            "- {}: {ANSWER_DESCRIPTION}\n  - text (\"string\", required)\n",
            answer_name(&out.tools)
        ));
    }
    text.push_str(
        "\nReply with one JSON object and nothing else. To call a tool: \
         {\"name\": \"<tool name>\", \"arguments\": {<arguments>}}.",
    );
}

/// The tools as a JSON array in `<tools>`, calls in `<tool_call>` ([`Format::Tagged`]).
fn tagged_tool_list(text: &mut String, out: &JsonOutput, style: Style) {
    let listed: Vec<Value> = out
        .tools
        .iter()
        .map(|t| {
            json!({
                "name": t.name,
                "description": t.description,
                "parameters": listed_schema(&t.input_schema, style),
            })
        })
        .collect();
    text.push_str(&format!(
        "\n\nYou have access to the following tools:\n<tools>{}</tools>\n\n\
         To call a tool, reply with the call in this format and nothing else:\n\
         <tool_call>[{{\"name\": \"func_name\", \"arguments\": {{\"argument1\": \"value1\"}}}}]</tool_call>",
        Value::Array(listed)
    ));
    if out.allow_answer {
        text.push_str(
            "\nIf no tool is needed, reply with <tool_call>[]</tool_call> and then answer.",
        );
    }
}

/// The tools as Qwen's chat template lists them, one function signature a line
/// ([`Format::Hermes`]).
fn hermes_tool_list(text: &mut String, out: &JsonOutput, style: Style) {
    text.push_str(
        "\n\n# Tools\n\nYou may call one or more functions to assist with the user \
         query.\n\nYou are provided with function signatures within <tools></tools> \
         XML tags:\n<tools>",
    );
    for tool in &out.tools {
        let listed = json!({
            "type": "function",
            "function": {
                "name": tool.name,
                "description": tool.description,
                "parameters": listed_schema(&tool.input_schema, style),
            },
        });
        text.push('\n');
        text.push_str(&listed.to_string());
    }
    text.push_str(
        "\n</tools>\n\nFor each function call, return a json object with function \
         name and arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n\
         {\"name\": <function-name>, \"arguments\": <args-json-object>}\n</tool_call>",
    );
}

/// A tool's schema as listed: without its descriptions when the style is terse.
fn listed_schema(schema: &Value, style: Style) -> Value {
    if style.terse {
        without_descriptions(schema)
    } else {
        schema.clone()
    }
}

/// What a plain-text answer is asked for: the fields of a shaped answer, what the agent can do
/// when answering directly, or the tool results' values; in the user's language.
fn answer_note(text: &mut String, req: &ModelRequest, style: Style, direct: bool) {
    if let Some(format) = &req.response_format {
        // The grammar of the schema holds the answer to its shape; this says what the
        // fields mean.
        text.push_str("\n\nAnswer with one JSON object and nothing else, with these fields:\n");
        describe_arguments(text, &format.schema, style.terse);
    } else if direct {
        text.push_str(&capabilities_note(&req.tools));
    } else if req.messages.iter().any(|m| m.role == Role::Tool) {
        let only_failures = recent_results(req).is_empty() && !recent_errors(req).is_empty();
        text.push_str(if only_failures {
            "\n\nThe tool call failed. In one short sentence of plain text, tell the \
             user that you could not get the answer, and why, from the tool's error. \
             Do not make up any value."
        } else {
            "\n\nAnswer the user's question in one short sentence of plain text, \
             giving the values of the tool results."
        });
    }
    if let Some(language) = last_user_text(req)
        .and_then(|t| language_of(&t))
        .filter(|_| style.follow_language)
    {
        text.push_str(&format!(" Answer in {language}."));
    }
}

/// The JSON an assistant's tool call is shown as in the history (the output contract's form).
pub(crate) fn call_json(call: &ToolCall) -> String {
    let arguments = serde_json::from_str::<Value>(&call.arguments)
        .unwrap_or_else(|_| Value::String(call.arguments.clone()));
    let mut object = Map::new();
    object.insert("name".into(), Value::String(call.name.clone()));
    object.insert("arguments".into(), arguments);
    Value::Object(object).to_string()
}

fn chat_for(req: &ModelRequest, output: &Output, style: Style, direct: bool) -> Vec<ChatTurn> {
    let mut chat = vec![ChatTurn {
        role: "system",
        content: system_prompt(req, output, style, direct),
    }];
    // Each call's arguments by its id: a plain-text answer reads a result beside the call
    // that asked for it ("再乘以 2 呢？" is answered from `{"a":56,"b":2}` and 112, not from 112
    // alone, which a small model then mixes with the previous answer's numbers).
    let arguments: std::collections::HashMap<&str, &str> = req
        .messages
        .iter()
        .flat_map(|m| m.tool_calls())
        .map(|call| (call.id.as_str(), call.arguments.as_str()))
        .collect();
    for message in &req.messages {
        let turn = match message.role {
            Role::System => ChatTurn {
                role: "system",
                content: message.text(),
            },
            Role::User => ChatTurn {
                role: "user",
                content: message.text(),
            },
            Role::Assistant => {
                let mut lines: Vec<String> = Vec::new();
                let text = message.text();
                if !text.is_empty() {
                    lines.push(text);
                }
                // When the reply is to be plain text, earlier calls are told in words: shown as
                // JSON, a small model answers with more JSON.
                let in_words = matches!(output, Output::Text);
                lines.extend(message.tool_calls().map(|call| {
                    if in_words {
                        format!(
                            "I will call the tool {} with {}.",
                            call.name, call.arguments
                        )
                    } else {
                        style.format.show_call(call)
                    }
                }));
                ChatTurn {
                    role: "assistant",
                    content: lines.join("\n"),
                }
            }
            // Small chat models know only system, user and assistant: tool results are shown
            // to them as a user turn that says where each result comes from.
            Role::Tool => {
                let hermes = style.format == Format::Hermes && !matches!(output, Output::Text);
                let lines: Vec<String> = message
                    .tool_results()
                    .map(|r| {
                        if hermes {
                            return format!("<tool_response>\n{}\n</tool_response>", r.content);
                        }
                        let verb = if r.is_error { "failed" } else { "returned" };
                        if !matches!(output, Output::Text) {
                            return format!("Tool {} {verb}: {}", r.name, r.content);
                        }
                        // For the answer, each result is said to answer the question above
                        // it: told only what a call returned, a small model may apply the
                        // question to the result once more ("再乘以 2 呢？" answered by 56 × 2
                        // = 112 became "112 乘以 2 等于 224").
                        let called = arguments
                            .get(r.call_id.as_str())
                            .map(|a| a.trim())
                            .filter(|a| !matches!(*a, "" | "{}"))
                            .map(|a| format!(", called with {a}"))
                            .unwrap_or_default();
                        if r.is_error {
                            format!(
                                "For the question above, the tool {}{called}, failed: {}",
                                r.name, r.content
                            )
                        } else {
                            format!(
                                "The question above was answered by the tool {}{called}; it \
                                 returned: {}",
                                r.name, r.content
                            )
                        }
                    })
                    .collect();
                ChatTurn {
                    role: "user",
                    content: lines.join("\n"),
                }
            }
        };
        if matches!(output, Output::Text) {
            // When the reply is to be plain text, a turn that only made tool calls is left out
            // (a small model would repeat it) and the results join the user's turn: the
            // question and the facts to answer it with, side by side.
            if turn.role == "assistant" && message.has_tool_calls() && message.text().is_empty() {
                continue;
            }
            if message.role == Role::Tool {
                if let Some(last) = chat.last_mut().filter(|t| t.role == "user") {
                    last.content.push_str("\n\n");
                    last.content.push_str(&turn.content);
                    continue;
                }
            }
        }
        chat.push(turn);
    }
    chat
}

/// Turns a JSON output into message parts, checking it against the contract.
pub(crate) fn parse_json_output(
    text: &str,
    out: &JsonOutput,
    validators: &[(String, SchemaValidator)],
) -> Result<Part, ModelError> {
    let bad = |why: String| {
        ModelError::invalid_response(format!("the local model's reply {text:?} {why}"))
            .retryable(false)
    };
    let value: Value = serde_json::from_str(text.trim())
        .map_err(|e| bad(format!("is not one JSON object: {e}")))?;
    let Value::Object(mut object) = value else {
        return Err(bad("is not a JSON object".into()));
    };
    if let Some(answer) = object.get("answer") {
        if !out.allow_answer {
            return Err(bad("answers although a tool call was required".into()));
        }
        let Some(answer) = answer.as_str() else {
            return Err(bad("has an answer that is not a string".into()));
        };
        return Ok(Part::text(answer));
    }
    let Some(Value::String(name)) = object.remove("name") else {
        return Err(bad("has neither an answer nor a tool name".into()));
    };
    if name == answer_name(&out.tools) {
        if !out.allow_answer {
            return Err(bad("answers although a tool call was required".into()));
        }
        let text = object
            .get("arguments")
            .and_then(|a| a.get("text"))
            .and_then(Value::as_str);
        return match text {
            Some(text) => Ok(Part::text(text)),
            None => Err(bad("answers without the text of the answer".into())),
        };
    }
    if !out.tools.iter().any(|t| t.name == name) {
        return Err(bad(format!(
            "calls {name:?}, which is not an offered tool (offered: {})",
            names(&out.tools)
        )));
    }
    let arguments = object
        .remove("arguments")
        .unwrap_or(Value::Object(Map::new()));
    if let Some((_, validator)) = validators.iter().find(|(n, _)| *n == name) {
        validator.validate(&arguments).map_err(|e| {
            bad(format!(
                "calls {name} with arguments its schema rejects: {e}"
            ))
        })?;
    }
    Ok(Part::ToolCall(ToolCall::new(
        new_id("call"),
        name,
        arguments.to_string(),
    )))
}

#[cfg(test)]
mod tests;
