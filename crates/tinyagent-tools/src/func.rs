//! [`new_func`] and [`new_tool`]: the two everyday ways to make a tool.

use std::fmt;
use std::future::Future;
use std::sync::Arc;

use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::adapter::{JsonAdapter, ToolFn, json_adapter};
use super::schema_gen::generate_schema;
use crate::context::ToolContext;
use crate::error::ToolError;
use crate::util::BoxFuture;
use crate::{HandleFunc, Handler, Tool, ToolHints, ToolInput, ToolOutput, handler_fn};

/// Checks a tool name against what model providers accept: `^[a-zA-Z0-9_-]{1,64}$`.
///
/// ```
/// use tinyagent::tools::validate_tool_name;
///
/// assert!(validate_tool_name("get_weather").is_ok());
/// let err = validate_tool_name("get weather").unwrap_err();
/// assert!(err.to_string().contains("' ' at byte 3"));
/// ```
pub fn validate_tool_name(name: &str) -> Result<(), ToolError> {
    if name.is_empty() {
        return Err(ToolError::invalid_input(
            "invalid tool name \"\": a tool name must not be empty (allowed: 1 to 64 of a-z, A-Z, 0-9, '_' and '-')",
        ));
    }
    if name.len() > 64 {
        return Err(ToolError::invalid_input(format!(
            "invalid tool name {name:?}: it is {} bytes long, at most 64 are allowed",
            name.len()
        )));
    }
    if let Some((at, bad)) = name
        .char_indices()
        .find(|(_, c)| !(c.is_ascii_alphanumeric() || *c == '_' || *c == '-'))
    {
        return Err(ToolError::invalid_input(format!(
            "invalid tool name {name:?}: {bad:?} at byte {at} is not allowed (allowed: a-z, A-Z, 0-9, '_' and '-')"
        )));
    }
    Ok(())
}

fn check_object_schema(name: &str, schema: &Value) -> Result<(), ToolError> {
    let Value::Object(map) = schema else {
        return Err(ToolError::invalid_input(format!(
            "invalid input schema for tool {name:?}: the schema must be a JSON object, got {schema}"
        )));
    };
    match map.get("type") {
        None => Ok(()),
        Some(Value::String(t)) if t == "object" => Ok(()),
        Some(other) => Err(ToolError::invalid_input(format!(
            "invalid input schema for tool {name:?}: the root must have \"type\": \"object\" (tool arguments are a JSON object), got \"type\": {other}"
        ))),
    }
}

/// A tool made by [`new_func`]: a typed function behind a [`json_adapter`].
pub struct FuncTool<H> {
    name: String,
    description: String,
    schema: Value,
    hints: ToolHints,
    title: Option<String>,
    output_schema: Option<Value>,
    handler: H,
}

impl<H> fmt::Debug for FuncTool<H> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FuncTool")
            .field("name", &self.name)
            .field("description", &self.description)
            .field("schema", &self.schema)
            .field("hints", &self.hints)
            .finish_non_exhaustive()
    }
}

impl<H> FuncTool<H> {
    /// A tool from its parts. The name and schema are taken as they are: check them with
    /// [`validate_tool_name`] first when they come from data.
    pub fn from_parts(
        name: String,
        description: String,
        schema: Value,
        hints: ToolHints,
        handler: H,
    ) -> Self {
        Self {
            name,
            description,
            schema,
            hints,
            title: None,
            output_schema: None,
            handler,
        }
    }

    /// Returns the tool with a human-readable title (MCP's `title`), for user interfaces.
    #[must_use]
    pub fn with_title(mut self, title: impl Into<String>) -> Self {
        self.title = Some(title.into());
        self
    }

    /// Returns the tool with the JSON Schema of its structured content (MCP's
    /// `outputSchema`); its root is an object.
    #[must_use]
    pub fn with_output_schema(mut self, schema: Value) -> Self {
        self.output_schema = Some(schema);
        self
    }

    /// Returns the tool with the schema of `T` (by [`generate_schema`]) as its output
    /// schema: for a tool that returns [`Structured<T>`](crate::Structured).
    ///
    /// ```
    /// use schemars::JsonSchema;
    /// use serde::{Deserialize, Serialize};
    /// use tinyagent::{Tool, ToolError, tools::{self, Structured}};
    ///
    /// #[derive(Deserialize, JsonSchema)]
    /// struct City { city: String }
    /// #[derive(Serialize, JsonSchema)]
    /// struct Weather { celsius: f64 }
    ///
    /// let weather = tools::new_func("weather", "Current weather", |_: City| async move {
    ///     Ok::<_, ToolError>(Structured(Weather { celsius: 22.5 }))
    /// })
    /// .with_title("Weather")
    /// .with_output_schema_of::<Weather>();
    /// assert_eq!(Tool::title(&weather), Some("Weather"));
    /// assert_eq!(Tool::output_schema(&weather).unwrap()["required"][0], "celsius");
    /// ```
    #[must_use]
    pub fn with_output_schema_of<T: schemars::JsonSchema + 'static>(self) -> Self {
        self.with_output_schema(generate_schema::<T>())
    }

    /// Returns the tool with its effect hints set.
    #[must_use]
    pub fn with_hints(mut self, hints: ToolHints) -> Self {
        self.hints = hints;
        self
    }

    /// Returns the tool marked as only reading: read-only, not destructive, idempotent (see
    /// [`ToolHints::read_only`]). Caches keep its results and retries repeat it.
    ///
    /// ```
    /// use tinyagent::{Tool, tools};
    /// # #[derive(serde::Deserialize, schemars::JsonSchema)] struct Q { id: u64 }
    ///
    /// let lookup = tools::new_func("lookup", "Finds an order", |q: Q| async move {
    ///     Ok::<_, String>(format!("order {}", q.id))
    /// })
    /// .read_only();
    /// assert!(lookup.hints().read_only && lookup.hints().idempotent);
    /// ```
    #[must_use]
    pub fn read_only(mut self) -> Self {
        let open_world = self.hints.open_world;
        self.hints = ToolHints::READ_ONLY.open_world(open_world);
        self
    }

    /// Returns the tool marked as idempotent: calling it again with the same arguments has no
    /// further effect, so retries may repeat it.
    #[must_use]
    pub fn idempotent(mut self) -> Self {
        self.hints = self.hints.idempotent(true);
        self
    }

    /// Replaces the input schema (a crate-internal step of the makers that set a description).
    #[doc(hidden)]
    pub fn set_schema(&mut self, schema: Value) {
        self.schema = schema;
    }
}

impl<H: Handler> Tool for FuncTool<H> {
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
        self.handler.call(ctx, input)
    }
}

/// A tool made by [`new_tool`]: a hand-written schema and a raw-string handler.
pub type ManualTool<F> = FuncTool<HandleFunc<F>>;

/// Makes a typed tool: the input schema is generated from `I` by [`generate_schema`], the
/// input is decoded and the output encoded by [`json_adapter`].
///
/// `f` is an async function (or closure) of the input, with or without a leading
/// [`ToolContext`]: `async fn(I) -> Result<O, E>` or `async fn(ToolContext, I) -> Result<O, E>`
/// (see [`ToolFn`]). A `String` result reaches the model as text, any other `Serialize` value
/// as JSON (see [`IntoToolOutput`](crate::IntoToolOutput)). The tool it returns takes
/// hints ([`read_only`](FuncTool::read_only), [`idempotent`](FuncTool::idempotent),
/// [`with_hints`](FuncTool::with_hints)) and goes to an agent as it is.
///
/// For a tool written as one annotated function, with its parameters as the input, see the
/// `#[tool]` attribute (the `macros` feature).
///
/// # Panics
///
/// If `name` is not a valid tool name (see [`validate_tool_name`]) or `I` is not an object
/// type (a struct with named fields, or a map); like `HeaderName::from_static`, this is for
/// tools written in code, and the panic message says which and how to fix it. Use
/// [`try_new_func`] for names that come from data.
///
/// ```
/// use schemars::JsonSchema;
/// use serde::Deserialize;
/// use tinyagent::{Tool, ToolContext, ToolError, tools};
///
/// #[derive(Deserialize, JsonSchema)]
/// struct AddInput {
///     /// The first addend
///     a: f64,
///     /// The second addend
///     b: f64,
/// }
///
/// let add = tools::new_func("add", "Adds two numbers", |i: AddInput| async move {
///     Ok::<_, ToolError>(i.a + i.b)
/// })
/// .read_only();
/// assert_eq!(add.input_schema()["required"], serde_json::json!(["a", "b"]));
/// # tokio_test::block_on(async {
/// assert_eq!(add.handle(&ToolContext::default(), r#"{"a": 1, "b": 2}"#).await?, "3.0");
/// # Ok::<(), ToolError>(())
/// # }).unwrap();
/// ```
#[track_caller]
pub fn new_func<I, M, F>(
    name: impl Into<String>,
    description: impl Into<String>,
    f: F,
) -> FuncTool<JsonAdapter<F, I, M>>
where
    I: DeserializeOwned + JsonSchema + Send + 'static,
    F: ToolFn<I, M> + 'static,
{
    match try_new_func(name, description, f) {
        Ok(tool) => tool,
        Err(err) => panic!("tools::new_func: {err}"),
    }
}

/// Like [`new_func`], but returns an error instead of panicking on an invalid name or a
/// non-object input type.
pub fn try_new_func<I, M, F>(
    name: impl Into<String>,
    description: impl Into<String>,
    f: F,
) -> Result<FuncTool<JsonAdapter<F, I, M>>, ToolError>
where
    I: DeserializeOwned + JsonSchema + Send + 'static,
    F: ToolFn<I, M> + 'static,
{
    let name = name.into();
    validate_tool_name(&name)?;
    let schema = generate_schema::<I>();
    if schema.get("type").and_then(Value::as_str) != Some("object") {
        let ty = std::any::type_name::<I>();
        return Err(ToolError::invalid_input(format!(
            "the input type of tool {name:?} is `{ty}`, whose schema is {schema}: tool arguments are a JSON object, so the input must be a struct with named fields (or a map); wrap the value in one, e.g. `struct Input {{ value: {ty} }}`, or write the tool with `#[tool]`, whose parameters become the fields"
        )));
    }
    Ok(FuncTool {
        name,
        description: description.into(),
        schema,
        hints: ToolHints::default(),
        title: None,
        output_schema: None,
        handler: json_adapter(f),
    })
}

/// Makes a tool from a hand-written schema and a raw-string handler.
///
/// The handler gets the model's arguments as they came, unparsed. The schema's root must be a
/// JSON object (`"type": "object"` when a type is given).
///
/// # Panics
///
/// If `name` is not a valid tool name or the schema's root is not an object; use
/// [`try_new_tool`] for names and schemas that come from data.
///
/// ```
/// use serde_json::json;
/// use tinyagent::{ToolContext, ToolError, tools};
///
/// let echo = tools::new_tool(
///     "echo",
///     "Repeats the text",
///     json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}),
///     |_ctx: ToolContext, input: String| async move {
///         let v: serde_json::Value = serde_json::from_str(&input)?;
///         Ok::<_, ToolError>(v["text"].as_str().unwrap_or_default().to_owned())
///     },
/// );
/// # tokio_test::block_on(async {
/// assert_eq!(echo.handle(&ToolContext::default(), r#"{"text":"hi"}"#).await?, "hi");
/// # Ok::<(), ToolError>(())
/// # }).unwrap();
/// ```
#[track_caller]
pub fn new_tool<F, Fut>(
    name: impl Into<String>,
    description: impl Into<String>,
    schema: Value,
    f: F,
) -> Arc<dyn Tool>
where
    F: Fn(ToolContext, String) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<String, ToolError>> + Send + 'static,
{
    match try_new_tool(name, description, schema, f) {
        Ok(tool) => Arc::new(tool),
        Err(err) => panic!("tools::new_tool: {err}"),
    }
}

/// Like [`new_tool`], but returns the concrete tool and an error instead of panicking.
pub fn try_new_tool<F, Fut>(
    name: impl Into<String>,
    description: impl Into<String>,
    schema: Value,
    f: F,
) -> Result<ManualTool<F>, ToolError>
where
    F: Fn(ToolContext, String) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<String, ToolError>> + Send + 'static,
{
    let name = name.into();
    validate_tool_name(&name)?;
    check_object_schema(&name, &schema)?;
    Ok(FuncTool {
        name,
        description: description.into(),
        schema,
        hints: ToolHints::default(),
        title: None,
        output_schema: None,
        handler: handler_fn(f),
    })
}
