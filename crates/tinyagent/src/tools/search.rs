//! [`ToolSearch`]: a large set of tools behind a search, so that a request carries the few
//! tools the conversation needs instead of hundreds of definitions.

use std::collections::HashMap;
use std::sync::Arc;

use serde_json::{Value, json};

use super::{ToolInput, ToolOutput, ToolResolver};
use crate::context::{Invocation, ToolContext};
use crate::error::ToolError;
use crate::message::Role;
use crate::util::BoxFuture;
use crate::{Tool, ToolHints};

/// Default of [`ToolSearch::max_tools`].
pub const DEFAULT_SEARCH_RESULTS: usize = 8;
/// Default of [`ToolSearch::offer_all_up_to`].
pub const DEFAULT_OFFER_ALL_UP_TO: usize = 20;

/// The name of the search tool a [`ToolSearch`] offers.
pub const SEARCH_TOOL: &str = "search_tools";
/// The name of the tool that calls any tool of a [`ToolSearch`] by name.
pub const CALL_TOOL: &str = "call_tool";

/// A [`ToolResolver`] over many tools (from MCP servers, a registry, anywhere): each
/// invocation is offered the tools most relevant to the conversation, found by BM25 over the
/// tools' names, descriptions and parameters (no external service), plus two tools to reach
/// the rest: `search_tools` (`{"query"}` → the matching tools with their schemas) and
/// `call_tool` (`{"name", "arguments"}` → calls any of them, its arguments checked as usual by
/// the tool itself). With [`offer_all_up_to`](Self::offer_all_up_to) tools or fewer, all are
/// offered and nothing is searched.
///
/// The agent's middleware wraps `call_tool` as one tool, so a rule keyed on a tool's name (an
/// approval policy, a limit) does not see the tool `call_tool` calls: give the tools their own
/// middleware before indexing them ([`wrap_tool`](super::wrap_tool)). A name indexed twice is
/// indexed once (the first); a tool the agent also offers statically should not be indexed.
///
/// The text searched is the current message and the user's two messages before it. Words are
/// split on case, digits and punctuation; Chinese, Japanese and Korean text is matched by
/// characters and pairs of characters, so "北京天气怎么样？" finds a tool described as "获取指定城
/// 市的当前天气".
///
/// ```
/// use std::sync::Arc;
/// use tinyagent::{Invocation, Session, Tool, ToolError, tools};
/// use tinyagent::tools::{ToolResolver, ToolSearch};
///
/// let mut many: Vec<Arc<dyn Tool>> = (0..300)
///     .map(|i| tools::new_tool(format!("report_{i}"), format!("Builds sales report number {i}"),
///         serde_json::json!({"type": "object"}),
///         |_ctx, _input: String| async move { Ok::<_, ToolError>("done".to_owned()) }))
///     .collect();
/// many.push(tools::new_tool("get_weather", "The current weather of a city",
///     serde_json::json!({"type": "object", "properties": {"city": {"type": "string"}}}),
///     |_ctx, _input: String| async move { Ok::<_, ToolError>("sunny".to_owned()) }));
/// let search = ToolSearch::new(many).max_tools(3);
/// # tokio_test::block_on(async {
/// let inv = Invocation::new(Session::new(), "What's the weather in Paris?");
/// let offered: Vec<String> = search.resolve_tools(&inv).await?.iter().map(|t| t.name().to_owned()).collect();
/// assert_eq!(offered[0], "get_weather");
/// assert!(offered.len() <= 5 && offered.contains(&"search_tools".to_owned()));
/// # Ok::<(), ToolError>(())
/// # }).unwrap();
/// ```
#[derive(Clone)]
pub struct ToolSearch {
    index: Arc<Index>,
    max_tools: usize,
    offer_all_up_to: usize,
}

impl std::fmt::Debug for ToolSearch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolSearch")
            .field("tools", &self.index.tools.len())
            .field("max_tools", &self.max_tools)
            .field("offer_all_up_to", &self.offer_all_up_to)
            .finish()
    }
}

impl ToolSearch {
    /// A search over `tools` (indexed once, here).
    pub fn new(tools: impl IntoIterator<Item = Arc<dyn Tool>>) -> Self {
        Self {
            index: Arc::new(Index::new(tools.into_iter().collect())),
            max_tools: DEFAULT_SEARCH_RESULTS,
            offer_all_up_to: DEFAULT_OFFER_ALL_UP_TO,
        }
    }

    /// Sets how many found tools are offered per invocation, and returned per search
    /// (default 8).
    #[must_use]
    pub fn max_tools(mut self, n: usize) -> Self {
        self.max_tools = n.max(1);
        self
    }

    /// Sets up to how many tools all are offered without searching (default 20).
    #[must_use]
    pub fn offer_all_up_to(mut self, n: usize) -> Self {
        self.offer_all_up_to = n;
        self
    }

    /// The names of the tools most relevant to `query`, best first (at most
    /// [`max_tools`](Self::max_tools); only tools that match at all).
    pub fn search(&self, query: &str) -> Vec<&str> {
        self.index
            .search(query, self.max_tools)
            .into_iter()
            .map(|i| self.index.tools[i].name())
            .collect()
    }
}

impl ToolResolver for ToolSearch {
    fn resolve_tools<'a>(
        &'a self,
        inv: &'a Invocation,
    ) -> BoxFuture<'a, Result<Vec<Arc<dyn Tool>>, ToolError>> {
        Box::pin(async move {
            if self.index.tools.len() <= self.offer_all_up_to {
                return Ok(self.index.tools.clone());
            }
            let mut query = inv.message().text();
            let earlier = inv.session().messages();
            for message in earlier
                .iter()
                .rev()
                .filter(|m| m.role == Role::User)
                .take(2)
            {
                query.push(' ');
                query.push_str(&message.text());
            }
            let mut offered: Vec<Arc<dyn Tool>> = self
                .index
                .search(&query, self.max_tools)
                .into_iter()
                .map(|i| self.index.tools[i].clone())
                .collect();
            offered.push(Arc::new(SearchTool {
                index: self.index.clone(),
                max_tools: self.max_tools,
                schema: json!({
                    "type": "object",
                    "properties": {"query": {"type": "string", "description": "what the tool should do, in a few words"}},
                    "required": ["query"]
                }),
            }));
            offered.push(Arc::new(CallTool {
                index: self.index.clone(),
                schema: json!({
                    "type": "object",
                    "properties": {
                        "name": {"type": "string", "description": "the tool's name, as search_tools gave it"},
                        "arguments": {"type": "object", "description": "the tool's arguments, as its input schema says"}
                    },
                    "required": ["name", "arguments"]
                }),
            }));
            Ok(offered)
        })
    }
}

/// The tools and their BM25 index.
struct Index {
    tools: Vec<Arc<dyn Tool>>,
    by_name: HashMap<String, usize>,
    /// Per tool, each term's count.
    docs: Vec<HashMap<String, u32>>,
    lengths: Vec<f64>,
    average_length: f64,
    /// How many tools each term occurs in.
    document_frequency: HashMap<String, u32>,
}

impl Index {
    fn new(mut tools: Vec<Arc<dyn Tool>>) -> Self {
        // One tool per name: a name offered twice would fail the run that finds both.
        let mut seen = std::collections::HashSet::new();
        tools.retain(|tool| {
            let first = seen.insert(tool.name().to_owned());
            if !first {
                tracing::warn!(
                    tool = tool.name(),
                    "ToolSearch: a second tool of this name is left out"
                );
            }
            first
        });
        let mut docs = Vec::with_capacity(tools.len());
        let mut document_frequency: HashMap<String, u32> = HashMap::new();
        for tool in &tools {
            let mut text = format!("{} {} {}", tool.name(), tool.name(), tool.description());
            schema_text(tool.input_schema(), &mut text);
            let mut counts: HashMap<String, u32> = HashMap::new();
            for term in terms(&text) {
                *counts.entry(term).or_default() += 1;
            }
            for term in counts.keys() {
                *document_frequency.entry(term.clone()).or_default() += 1;
            }
            docs.push(counts);
        }
        let lengths: Vec<f64> = docs
            .iter()
            .map(|d| f64::from(d.values().sum::<u32>()))
            .collect();
        let average_length = lengths.iter().sum::<f64>() / (lengths.len().max(1) as f64);
        let by_name = tools
            .iter()
            .enumerate()
            .map(|(i, t)| (t.name().to_owned(), i))
            .collect();
        Self {
            tools,
            by_name,
            docs,
            lengths,
            average_length,
            document_frequency,
        }
    }

    /// The best `n` tools for `query` with a positive score, best first.
    fn search(&self, query: &str, n: usize) -> Vec<usize> {
        const K1: f64 = 1.2;
        const B: f64 = 0.75;
        let mut query_terms = terms(query);
        query_terms.sort();
        query_terms.dedup();
        let total = self.tools.len() as f64;
        let mut scores: Vec<(usize, f64)> = Vec::new();
        for (i, doc) in self.docs.iter().enumerate() {
            let mut score = 0.0;
            for term in &query_terms {
                let Some(&count) = doc.get(term) else {
                    continue;
                };
                let df = f64::from(self.document_frequency[term]);
                let idf = ((total - df + 0.5) / (df + 0.5) + 1.0).ln();
                let tf = f64::from(count);
                let norm = 1.0 - B + B * self.lengths[i] / self.average_length.max(1.0);
                score += idf * tf * (K1 + 1.0) / (tf + K1 * norm);
            }
            if score > 0.0 {
                scores.push((i, score));
            }
        }
        scores.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        scores.into_iter().take(n).map(|(i, _)| i).collect()
    }
}

/// The parameter names and descriptions of a schema, appended to `out`.
fn schema_text(schema: &Value, out: &mut String) {
    if let Some(properties) = schema.get("properties").and_then(Value::as_object) {
        for (name, property) in properties {
            out.push(' ');
            out.push_str(name);
            if let Some(description) = property.get("description").and_then(Value::as_str) {
                out.push(' ');
                out.push_str(description);
            }
            schema_text(property, out);
        }
    }
}

/// Whether `c` is written without spaces between words (CJK scripts).
fn is_cjk(c: char) -> bool {
    matches!(c as u32,
        0x3040..=0x30FF | 0x3400..=0x4DBF | 0x4E00..=0x9FFF | 0xAC00..=0xD7AF | 0xF900..=0xFAFF)
}

/// The search terms of a text: lower-case words (split on case changes, digits and anything
/// else), and for CJK text each character and each pair of characters.
fn terms(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut word = String::new();
    let mut previous: Option<char> = None;
    let mut cjk_run: Vec<char> = Vec::new();
    let flush_word = |word: &mut String, out: &mut Vec<String>| {
        if word.len() > 1 {
            out.push(std::mem::take(word));
        } else {
            word.clear();
        }
    };
    let flush_cjk = |run: &mut Vec<char>, out: &mut Vec<String>| {
        for (i, c) in run.iter().enumerate() {
            out.push(c.to_string());
            if let Some(next) = run.get(i + 1) {
                out.push(format!("{c}{next}"));
            }
        }
        run.clear();
    };
    for c in text.chars() {
        if is_cjk(c) {
            flush_word(&mut word, &mut out);
            cjk_run.push(c);
        } else if c.is_alphabetic() {
            flush_cjk(&mut cjk_run, &mut out);
            let boundary = c.is_uppercase() && previous.is_some_and(char::is_lowercase);
            if boundary {
                flush_word(&mut word, &mut out);
            }
            word.extend(c.to_lowercase());
        } else {
            flush_cjk(&mut cjk_run, &mut out);
            flush_word(&mut word, &mut out);
        }
        previous = Some(c);
    }
    flush_word(&mut word, &mut out);
    flush_cjk(&mut cjk_run, &mut out);
    out
}

/// `search_tools`: the tools matching a query, with their schemas.
struct SearchTool {
    index: Arc<Index>,
    max_tools: usize,
    schema: Value,
}

impl Tool for SearchTool {
    fn name(&self) -> &str {
        SEARCH_TOOL
    }

    fn description(&self) -> &str {
        "Finds tools for a task among many more than are listed: give what the tool should do; \
         call one of them with call_tool"
    }

    fn input_schema(&self) -> &Value {
        &self.schema
    }

    fn hints(&self) -> ToolHints {
        ToolHints::READ_ONLY.open_world(false)
    }

    fn call<'a>(
        &'a self,
        _ctx: &'a ToolContext,
        input: ToolInput,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let value = input.into_value()?;
            let query = value
                .get("query")
                .and_then(Value::as_str)
                .ok_or_else(|| ToolError::invalid_input("missing field `query` (a string)"))?;
            let found: Vec<Value> = self
                .index
                .search(query, self.max_tools)
                .into_iter()
                .map(|i| {
                    let tool = &self.index.tools[i];
                    json!({
                        "name": tool.name(),
                        "description": tool.description(),
                        "input_schema": tool.input_schema(),
                    })
                })
                .collect();
            Ok(ToolOutput::structured(json!({ "tools": found })))
        })
    }
}

/// `call_tool`: calls any of the tools by name.
struct CallTool {
    index: Arc<Index>,
    schema: Value,
}

impl Tool for CallTool {
    fn name(&self) -> &str {
        CALL_TOOL
    }

    fn description(&self) -> &str {
        "Calls a tool found with search_tools, by its name, with arguments for its input schema"
    }

    fn input_schema(&self) -> &Value {
        &self.schema
    }

    fn call<'a>(
        &'a self,
        ctx: &'a ToolContext,
        input: ToolInput,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let value = input.into_value()?;
            let name = value
                .get("name")
                .and_then(Value::as_str)
                .ok_or_else(|| ToolError::invalid_input("missing field `name` (a string)"))?;
            let Some(&i) = self.index.by_name.get(name) else {
                return Err(ToolError::not_found(format!(
                    "no tool is named {name:?}; find one with search_tools"
                )));
            };
            let arguments = value.get("arguments").cloned().unwrap_or_else(|| json!({}));
            let tool = &self.index.tools[i];
            super::call_catching_panics(tool.as_ref(), ctx, ToolInput::from_value(arguments)).await
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_split_on_case_and_punctuation_and_cjk_by_characters() {
        assert_eq!(
            terms("getWeather city_name"),
            ["get", "weather", "city", "name"]
        );
        assert_eq!(
            terms("北京天气"),
            ["北", "北京", "京", "京天", "天", "天气", "气"]
        );
        assert_eq!(terms("a GPU-2 test"), ["gpu", "test"]);
    }
}
