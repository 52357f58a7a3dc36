//! Test support: [`ScriptedModel`], a model that replays prepared replies, and [`reply`], the
//! helpers that prepare them.
//!
//! For tests and doc examples only. A scripted model does not understand anything: it answers
//! the n-th request with the n-th reply, whatever was asked. Programs use a real provider.

use std::collections::VecDeque;
use std::fmt;
use std::sync::Mutex;

use crate::model::{Model, ModelError, ModelRequest, ModelResponse};
use crate::util::{BoxFuture, lock};

/// A [`Model`] for tests: replays a list of prepared replies, one per request, and records
/// every request it was sent.
///
/// When the replies run out, a request fails with a [`ModelError`] saying so.
///
/// ```
/// use std::sync::Arc;
/// use tinyagent::{AgentExt, LlmAgent, Session};
/// use tinyagent::testing::{ScriptedModel, reply};
///
/// let model = Arc::new(ScriptedModel::new([
///     reply::tool_call("c1", "calculator", r#"{"operation": "add", "a": 10, "b": 3}"#),
///     reply::text("10 + 3 = 13"),
/// ]));
/// let agent = LlmAgent::builder("calc")
///     .model(model.clone())
///     .tools(tinyagent_demo::all_tools())
///     .build()
///     .unwrap();
/// # tokio_test::block_on(async {
/// assert_eq!(agent.ask(&Session::new(), "What is 10 plus 3?").await.unwrap(), "10 + 3 = 13");
/// # });
/// let requests = model.requests();
/// assert_eq!(requests.len(), 2);
/// assert_eq!(requests[0].tools.len(), 4);
/// let result = requests[1].messages.last().unwrap().tool_results().next().unwrap().clone();
/// assert!(result.content.contains("10.00 + 3.00 = 13.00"));
/// ```
pub struct ScriptedModel {
    replies: Mutex<VecDeque<Result<ModelResponse, ModelError>>>,
    requests: Mutex<Vec<ModelRequest>>,
}

impl fmt::Debug for ScriptedModel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ScriptedModel")
            .field("remaining", &self.remaining())
            .field("requests", &lock(&self.requests).len())
            .finish()
    }
}

impl Default for ScriptedModel {
    fn default() -> Self {
        Self::new([])
    }
}

impl ScriptedModel {
    /// A model that answers with these replies, in order.
    pub fn new(replies: impl IntoIterator<Item = ModelResponse>) -> Self {
        Self {
            replies: Mutex::new(replies.into_iter().map(Ok).collect()),
            requests: Mutex::new(Vec::new()),
        }
    }

    /// Adds a reply at the end of the script.
    pub fn push(&self, reply: ModelResponse) {
        lock(&self.replies).push_back(Ok(reply));
    }

    /// Adds a failure at the end of the script.
    pub fn push_error(&self, error: ModelError) {
        lock(&self.replies).push_back(Err(error));
    }

    /// Copies of the requests received so far, in order.
    pub fn requests(&self) -> Vec<ModelRequest> {
        lock(&self.requests).clone()
    }

    /// How many requests were received.
    pub fn request_count(&self) -> usize {
        lock(&self.requests).len()
    }

    /// How many replies are left.
    pub fn remaining(&self) -> usize {
        lock(&self.replies).len()
    }
}

impl Model for ScriptedModel {
    fn name(&self) -> &str {
        "scripted"
    }

    /// Every option: the requests it records show what was set.
    fn supports(&self, _option: crate::model::SamplingOption) -> bool {
        true
    }

    fn generate<'a>(
        &'a self,
        req: &'a ModelRequest,
    ) -> BoxFuture<'a, Result<ModelResponse, ModelError>> {
        let n = {
            let mut requests = lock(&self.requests);
            requests.push(req.clone());
            requests.len()
        };
        let reply = lock(&self.replies).pop_front().unwrap_or_else(|| {
            Err(ModelError::other(format!(
                "ScriptedModel has no reply left for request #{n}"
            )))
        });
        Box::pin(async move { reply })
    }
}

/// Prepared replies for a [`ScriptedModel`].
pub mod reply {
    use crate::message::{Message, Part, Role, ToolCall};
    use crate::model::{FinishReason, ModelResponse, Usage};

    /// A text answer (finish reason [`FinishReason::Stop`]).
    pub fn text(text: impl Into<String>) -> ModelResponse {
        ModelResponse::new(
            Message::assistant(text),
            Usage::default(),
            FinishReason::Stop,
        )
    }

    /// A request for one tool call: id, tool name, raw JSON arguments.
    pub fn tool_call(
        id: impl Into<String>,
        name: impl Into<String>,
        arguments: impl Into<String>,
    ) -> ModelResponse {
        tool_calls([(id.into(), name.into(), arguments.into())])
    }

    /// A request for several tool calls, in this order: `(id, tool name, raw JSON arguments)`.
    pub fn tool_calls<I, S1, S2, S3>(calls: I) -> ModelResponse
    where
        I: IntoIterator<Item = (S1, S2, S3)>,
        S1: Into<String>,
        S2: Into<String>,
        S3: Into<String>,
    {
        let parts = calls
            .into_iter()
            .map(|(id, name, args)| Part::ToolCall(ToolCall::new(id, name, args)))
            .collect();
        ModelResponse::new(
            Message::new(Role::Assistant, parts),
            Usage::default(),
            FinishReason::ToolCalls,
        )
    }
}

/// `n` plausible tools of a large toolset (up to 500 distinct ones; names repeat with a
/// number beyond that), for tests and benchmarks of tool search and large requests: verbs
/// over business objects, such as `create_invoice` ("Creates an invoice in the billing
/// system") with an `id` and a `note` parameter. Each answers with its own name.
///
/// ```
/// let tools = tinyagent::testing::many_tools(500);
/// assert_eq!(tools.len(), 500);
/// assert_eq!(tools[0].name(), "create_invoice");
/// ```
pub fn many_tools(n: usize) -> Vec<std::sync::Arc<dyn crate::Tool>> {
    const VERBS: [(&str, &str); 20] = [
        ("create", "Creates"),
        ("update", "Updates"),
        ("delete", "Deletes"),
        ("get", "Looks up"),
        ("list", "Lists"),
        ("archive", "Archives"),
        ("export", "Exports"),
        ("import", "Imports"),
        ("approve", "Approves"),
        ("reject", "Rejects"),
        ("assign", "Assigns"),
        ("merge", "Merges"),
        ("tag", "Tags"),
        ("share", "Shares"),
        ("restore", "Restores"),
        ("validate", "Validates"),
        ("schedule", "Schedules"),
        ("cancel", "Cancels"),
        ("count", "Counts"),
        ("audit", "Audits"),
    ];
    const OBJECTS: [(&str, &str); 25] = [
        ("invoice", "an invoice in the billing system"),
        ("customer", "a customer record in the CRM"),
        ("ticket", "a support ticket"),
        ("order", "a sales order"),
        ("shipment", "a shipment with the carrier"),
        ("product", "a product in the catalogue"),
        ("employee", "an employee record in HR"),
        ("payroll_run", "a payroll run"),
        ("expense", "an expense report"),
        ("contract", "a contract in the legal archive"),
        ("lead", "a sales lead"),
        ("campaign", "a marketing campaign"),
        ("repository", "a source code repository"),
        ("pull_request", "a pull request"),
        ("deployment", "a deployment to production"),
        ("incident", "an on-call incident"),
        ("dashboard", "an analytics dashboard"),
        ("report", "a quarterly report"),
        ("warehouse_bin", "a warehouse storage bin"),
        ("purchase_order", "a purchase order to a supplier"),
        ("meeting", "a calendar meeting"),
        ("document", "a shared document"),
        ("user_account", "a user account and its permissions"),
        ("budget_line", "a line of the department budget"),
        ("asset", "a company hardware asset"),
    ];
    (0..n)
        .map(|i| {
            let (verb, verb_text) = VERBS[i % VERBS.len()];
            let (object, object_text) = OBJECTS[(i / VERBS.len()) % OBJECTS.len()];
            let round = i / (VERBS.len() * OBJECTS.len());
            let name = if round == 0 {
                format!("{verb}_{object}")
            } else {
                format!("{verb}_{object}_{round}")
            };
            let answer = name.clone();
            crate::tools::new_tool(
                name,
                format!("{verb_text} {object_text}"),
                serde_json::json!({
                    "type": "object",
                    "properties": {
                        "id": {"type": "string", "description": format!("the {} id", object.replace('_', " "))},
                        "note": {"type": "string", "description": "a free-text note"}
                    },
                    "required": ["id"]
                }),
                move |_ctx, _input: String| {
                    let answer = answer.clone();
                    async move { Ok::<_, crate::ToolError>(answer) }
                },
            )
        })
        .collect()
}
