//! What a typed tool function may return: [`IntoToolOutput`] for its value, [`IntoToolError`]
//! (with [`ToolErrorKindHint`]) for its error, [`Json`] and [`ToolOutput`] for the cases in
//! between.

use std::borrow::Cow;
use std::convert::Infallible;

use serde::Serialize;
use serde_json::Value;

use crate::content::{ContentPart, content_text};
use crate::error::{BoxError, ToolError, ToolErrorKind};

/// What a tool function's successful value becomes: the text the model reads, or (for a
/// [`ToolOutput::error`]) an error result.
///
/// - Text passes through as it is: a `String`, `&'static str` or `Cow<'static, str>` (and any
///   other value that serializes to a JSON string, such as a unit enum variant) reaches the
///   model without JSON quotes.
/// - Every other [`Serialize`] value is encoded as JSON.
/// - [`Json`] encodes its value as JSON always, a string included (`"\"hi\""`).
/// - [`ToolOutput`] is text or content parts (images, audio, resources), structured content and
///   an is-error flag; [`Structured`] is a value sent as structured content.
///
/// ```
/// use tinyagent::tools::{IntoToolOutput, Json, ToolOutput};
///
/// assert_eq!(String::from("hello").into_tool_output().unwrap(), "hello");
/// assert_eq!(Json("hello").into_tool_output().unwrap(), r#""hello""#);
/// assert_eq!(vec![1, 2].into_tool_output().unwrap(), "[1,2]");
/// assert_eq!(ToolOutput::error("no such order").into_tool_output().unwrap_err().to_string(),
///            "no such order");
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be a tool's output",
    label = "a tool's output must be text, a `Serialize` value, `Json<T>`, `Structured<T>` or `ToolOutput`",
    note = "derive `serde::Serialize` for the type, or return a `String` made from it"
)]
pub trait IntoToolOutput {
    /// Converts the value into the tool's result text, or an error result.
    fn into_tool_output(self) -> Result<String, ToolError>;

    /// Converts the value into a [`ToolOutput`], keeping content parts and structured content
    /// where the value has them (by default: the text of
    /// [`into_tool_output`](Self::into_tool_output)).
    fn into_output(self) -> Result<ToolOutput, ToolError>
    where
        Self: Sized,
    {
        self.into_tool_output().map(ToolOutput::text)
    }
}

impl<T: Serialize> IntoToolOutput for T {
    fn into_tool_output(self) -> Result<String, ToolError> {
        let json = encode(&self)?;
        // A value that is a JSON string is text: the model gets it without the quotes.
        if json.starts_with('"') {
            if let Ok(text) = serde_json::from_str::<String>(&json) {
                return Ok(text);
            }
        }
        Ok(json)
    }
}

fn encode<T: Serialize + ?Sized>(value: &T) -> Result<String, ToolError> {
    serde_json::to_string(value).map_err(|e| {
        ToolError::failed(format!(
            "the tool's output could not be encoded as JSON: {e}"
        ))
        .with_source(e)
    })
}

/// A value a tool returns as JSON, always: `Json(String::from("hi"))` reaches the model as
/// `"hi"` with its quotes, where a plain `String` would pass through as text.
///
/// ```
/// use tinyagent::tools::{IntoToolOutput, Json};
///
/// assert_eq!(Json(serde_json::json!({"ok": true})).into_tool_output().unwrap(), r#"{"ok":true}"#);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Json<T>(pub T);

impl<T: Serialize> IntoToolOutput for Json<T> {
    fn into_tool_output(self) -> Result<String, ToolError> {
        encode(&self.0)
    }
}

/// A tool's result as MCP's `CallToolResult` has it: text, or content parts (text, images,
/// audio, resources) with their text rendering, optional structured content, and an is-error
/// flag for a tool that decides itself that its answer is a failure the model should read as
/// one.
///
/// An error result becomes a [`ToolError`] of kind [`Failed`](ToolErrorKind::Failed), not
/// retryable, whose message is the text.
///
/// It is what every tool's `call` gives, whole, through every layer:
/// agents hand the parts to providers that take images (the others read the text:
/// [`content_text`], text parts as they are, a placeholder such as
/// `[image image/png, 5.2 kB]` for the others), MCP servers send them as MCP content, and the
/// cache keeps all of it.
///
/// ```
/// use tinyagent::ContentPart;
/// use tinyagent::tools::{IntoToolOutput, ToolOutput};
///
/// let ok = ToolOutput::text("3 orders found");
/// assert!(!ok.is_error());
/// assert_eq!(ok.into_tool_output().unwrap(), "3 orders found");
/// let err = ToolOutput::error("the order is archived").into_tool_output().unwrap_err();
/// assert_eq!(err.kind(), tinyagent::ToolErrorKind::Failed);
///
/// let chart = ToolOutput::text("sales by month:").with_part(ContentPart::image("iVBORw==", "image/png"));
/// assert_eq!(chart.as_text(), "sales by month:\n[image image/png, 4 B]");
/// assert_eq!(chart.content_parts().len(), 2);
/// let totals = ToolOutput::structured(serde_json::json!({"total": 42}));
/// assert_eq!(totals.as_text(), r#"{"total":42}"#);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolOutput {
    text: String,
    parts: Vec<ContentPart>,
    structured: Option<Value>,
    is_error: bool,
}

impl ToolOutput {
    /// A successful result with this text.
    pub fn text(text: impl Into<String>) -> Self {
        Self {
            text: text.into(),
            parts: Vec::new(),
            structured: None,
            is_error: false,
        }
    }

    /// An error result with this text, written for the model.
    pub fn error(text: impl Into<String>) -> Self {
        Self {
            is_error: true,
            ..Self::text(text)
        }
    }

    /// A successful result of these content parts.
    pub fn parts(parts: impl IntoIterator<Item = ContentPart>) -> Self {
        let parts: Vec<ContentPart> = parts.into_iter().collect();
        Self {
            text: content_text(&parts),
            parts,
            structured: None,
            is_error: false,
        }
    }

    /// A result of `parts` whose text is `text` (crate-internal: `text` renders `parts`, cut).
    pub(crate) fn from_rendered(text: String, parts: Vec<ContentPart>) -> Self {
        Self {
            text,
            parts,
            structured: None,
            is_error: false,
        }
    }

    /// This result, as an error result (its content kept).
    #[must_use]
    pub fn into_error(mut self) -> Self {
        self.is_error = true;
        self
    }

    /// A successful result of one image, from base64 data.
    pub fn image(data_base64: impl Into<String>, mime_type: impl Into<String>) -> Self {
        Self::parts([ContentPart::image(data_base64, mime_type)])
    }

    /// A successful result of structured content; its text is the value's JSON (as MCP asks
    /// for readers that do not take structured content).
    pub fn structured(value: Value) -> Self {
        Self {
            structured: Some(value.clone()),
            ..Self::text(value.to_string())
        }
    }

    /// Returns the result with a content part added after what it holds (its text becomes
    /// the first part).
    #[must_use]
    pub fn with_part(mut self, part: ContentPart) -> Self {
        if self.parts.is_empty() && !self.text.is_empty() {
            self.parts
                .push(ContentPart::text(std::mem::take(&mut self.text)));
        }
        self.parts.push(part);
        self.text = content_text(&self.parts);
        self
    }

    /// Returns the result with this text, what a model that reads only text gets; its parts
    /// and structured content stay as they are.
    ///
    /// ```
    /// use tinyagent::ContentPart;
    /// use tinyagent::tools::ToolOutput;
    ///
    /// let out = ToolOutput::parts([ContentPart::image("AAAA", "image/png")]).with_text("a chart");
    /// assert_eq!(out.as_text(), "a chart");
    /// assert_eq!(out.content_parts().len(), 1);
    /// ```
    #[must_use]
    pub fn with_text(mut self, text: impl Into<String>) -> Self {
        self.text = text.into();
        self
    }

    /// Returns the result with this structured content; the text stays as it is.
    #[must_use]
    pub fn with_structured(mut self, value: Value) -> Self {
        self.structured = Some(value);
        self
    }

    /// The text of the result (for a result of parts, their text rendering).
    pub fn as_text(&self) -> &str {
        &self.text
    }

    /// The result's content parts; empty for a result that is only text.
    pub fn content_parts(&self) -> &[ContentPart] {
        &self.parts
    }

    /// The result's structured content.
    pub fn structured_content(&self) -> Option<&Value> {
        self.structured.as_ref()
    }

    /// Whether the result reports an error.
    pub fn is_error(&self) -> bool {
        self.is_error
    }

    /// The text of a successful result; an error result becomes a [`ToolError`] of kind
    /// [`Failed`](ToolErrorKind::Failed), not retryable, whose message is the text. What the
    /// text-in, text-out `handle` gives.
    pub fn into_result(self) -> Result<String, ToolError> {
        if self.is_error {
            Err(ToolError::failed(self.text).retryable(false))
        } else {
            Ok(self.text)
        }
    }

    /// The text, whether the result is an error or not.
    pub fn into_text(self) -> String {
        self.text
    }

    /// The parts of the result: its text, its content parts and its structured content.
    pub fn into_parts(self) -> (String, Vec<ContentPart>, Option<Value>) {
        (self.text, self.parts, self.structured)
    }
}

impl IntoToolOutput for ToolOutput {
    fn into_tool_output(self) -> Result<String, ToolError> {
        self.into_result()
    }

    fn into_output(self) -> Result<ToolOutput, ToolError> {
        Ok(self)
    }
}

/// A value a tool returns as structured content: the model reads its JSON, and MCP clients
/// get it as `structuredContent` too. Give the tool its output schema with
/// `FuncTool::with_output_schema_of`.
///
/// ```
/// use tinyagent::tools::{IntoToolOutput, Structured};
///
/// let out = Structured(serde_json::json!({"celsius": 22.5})).into_output().unwrap();
/// assert_eq!(out.as_text(), r#"{"celsius":22.5}"#);
/// assert_eq!(out.structured_content().unwrap()["celsius"], 22.5);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Structured<T>(pub T);

impl<T: Serialize> IntoToolOutput for Structured<T> {
    fn into_tool_output(self) -> Result<String, ToolError> {
        encode(&self.0)
    }

    fn into_output(self) -> Result<ToolOutput, ToolError> {
        let value = serde_json::to_value(&self.0).map_err(|e| {
            ToolError::failed(format!(
                "the tool's output could not be encoded as JSON: {e}"
            ))
            .with_source(e)
        })?;
        Ok(ToolOutput::structured(value))
    }
}

/// What a user's error type says about itself to middleware and the agent loop: its
/// [`ToolErrorKind`] and whether the same call may succeed when tried again.
///
/// Both methods have defaults ([`Failed`](ToolErrorKind::Failed), retryable as the kind says),
/// so `impl ToolErrorKindHint for MyError {}` is enough to return `MyError` from a tool; say
/// more where it matters, and `with_retry` acts on it. The error's
/// `Display` text is what the model reads.
///
/// ```
/// use tinyagent::tools::{IntoToolError, ToolErrorKindHint};
/// use tinyagent::ToolErrorKind;
///
/// #[derive(Debug)]
/// enum CrmError { Busy, NoSuchCustomer(u64) }
///
/// impl std::fmt::Display for CrmError {
///     fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
///         match self {
///             Self::Busy => f.write_str("the CRM is busy, try again"),
///             Self::NoSuchCustomer(id) => write!(f, "no customer {id}"),
///         }
///     }
/// }
/// impl std::error::Error for CrmError {}
///
/// impl ToolErrorKindHint for CrmError {
///     fn kind(&self) -> ToolErrorKind {
///         match self {
///             Self::Busy => ToolErrorKind::Unavailable,
///             Self::NoSuchCustomer(_) => ToolErrorKind::NotFound,
///         }
///     }
/// }
///
/// let err = CrmError::Busy.into_tool_error();
/// assert_eq!(err.kind(), ToolErrorKind::Unavailable);
/// assert!(err.is_retryable());
/// assert_eq!(err.to_string(), "the CRM is busy, try again");
/// assert!(!CrmError::NoSuchCustomer(7).into_tool_error().is_retryable());
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` does not say what kind of tool error it is",
    label = "not convertible into a `ToolError`",
    note = "add `impl tinyagent::tools::ToolErrorKindHint for {Self} {{}}` (a failure, not retryable; override `kind` and `retryable` to say more), or return `ToolError`, `String` or `Box<dyn Error + Send + Sync>`"
)]
pub trait ToolErrorKindHint: std::error::Error + Send + Sync + 'static {
    /// The kind of failure (default [`Failed`](ToolErrorKind::Failed)).
    fn kind(&self) -> ToolErrorKind {
        ToolErrorKind::Failed
    }

    /// Whether trying the same call again may succeed (default: as the kind says, see
    /// [`ToolErrorKind::default_retryable`]).
    fn retryable(&self) -> bool {
        self.kind().default_retryable()
    }
}

/// What a tool function's error becomes: a [`ToolError`], keeping what the error says about
/// its kind and retryability.
///
/// Implemented for [`ToolError`] itself, text (`String`, `&'static str`,
/// `Cow<'static, str>`: a [`Failed`](ToolErrorKind::Failed) error with that message), a
/// [`BoxError`] (a `ToolError` inside keeps its kind), [`std::io::Error`] (its kind mapped:
/// not found, permission denied, timed out, connection failures), [`serde_json::Error`],
/// [`Infallible`], and every error type implementing [`ToolErrorKindHint`].
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be a tool's error",
    label = "a tool's error must convert into a `ToolError`",
    note = "add `impl tinyagent::tools::ToolErrorKindHint for {Self} {{}}` (its methods say the kind and retryability), or return `ToolError`, `String` or `Box<dyn Error + Send + Sync>`"
)]
pub trait IntoToolError {
    /// Converts the error.
    fn into_tool_error(self) -> ToolError;
}

impl<E: ToolErrorKindHint> IntoToolError for E {
    fn into_tool_error(self) -> ToolError {
        let kind = self.kind();
        let retryable = self.retryable();
        ToolError::new(kind, self.to_string())
            .retryable(retryable)
            .with_source(self)
    }
}

/// A user's error type that says its kind through [`ToolErrorKindHint`] converts with `?` in a
/// function returning `Result<_, ToolError>`.
impl<E: ToolErrorKindHint> From<E> for ToolError {
    fn from(err: E) -> Self {
        err.into_tool_error()
    }
}

impl IntoToolError for ToolError {
    fn into_tool_error(self) -> ToolError {
        self
    }
}

impl IntoToolError for String {
    fn into_tool_error(self) -> ToolError {
        ToolError::failed(self)
    }
}

impl IntoToolError for &'static str {
    fn into_tool_error(self) -> ToolError {
        ToolError::failed(self)
    }
}

impl IntoToolError for Cow<'static, str> {
    fn into_tool_error(self) -> ToolError {
        ToolError::failed(self)
    }
}

impl IntoToolError for BoxError {
    fn into_tool_error(self) -> ToolError {
        ToolError::from_error(self)
    }
}

impl IntoToolError for std::io::Error {
    fn into_tool_error(self) -> ToolError {
        ToolError::from(self)
    }
}

impl IntoToolError for serde_json::Error {
    fn into_tool_error(self) -> ToolError {
        ToolError::from(self)
    }
}

impl IntoToolError for Infallible {
    fn into_tool_error(self) -> ToolError {
        match self {}
    }
}

impl crate::message::ToolResult {
    /// The result of the call `call_id` of tool `name` that gave `output`: its text, its
    /// content parts and its structured content; an error output is a failed result.
    pub fn from_output(
        call_id: impl Into<String>,
        name: impl Into<String>,
        output: ToolOutput,
    ) -> Self {
        let is_error = output.is_error();
        let (content, parts, structured) = output.into_parts();
        Self {
            call_id: call_id.into(),
            name: name.into(),
            content,
            is_error,
            parts,
            structured,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Clone, Copy, Serialize)]
    #[serde(rename_all = "lowercase")]
    enum Mood {
        Happy,
    }

    #[test]
    fn text_passes_through_and_other_values_are_json() {
        assert_eq!(
            "a \"quoted\" word".into_tool_output().unwrap(),
            "a \"quoted\" word"
        );
        assert_eq!(Cow::Borrowed("héllo").into_tool_output().unwrap(), "héllo");
        assert_eq!(Mood::Happy.into_tool_output().unwrap(), "happy");
        assert_eq!(Json(Mood::Happy).into_tool_output().unwrap(), "\"happy\"");
        assert_eq!(3.5f64.into_tool_output().unwrap(), "3.5");
        assert_eq!(().into_tool_output().unwrap(), "null");
        assert_eq!(Some(vec!["x"]).into_tool_output().unwrap(), r#"["x"]"#);
    }

    #[test]
    fn outputs_that_cannot_be_encoded_are_failures() {
        let mut map = std::collections::HashMap::new();
        map.insert((1, 2), "tuple keys are not JSON");
        let err = map.into_tool_output().unwrap_err();
        assert_eq!(err.kind(), ToolErrorKind::Failed);
        assert!(
            err.message().contains("could not be encoded as JSON"),
            "{err}"
        );
    }

    #[test]
    fn io_errors_keep_their_kind() {
        use std::io::{Error, ErrorKind};
        let not_found = Error::new(ErrorKind::NotFound, "orders.csv").into_tool_error();
        assert_eq!(not_found.kind(), ToolErrorKind::NotFound);
        let refused = Error::new(ErrorKind::ConnectionRefused, "db").into_tool_error();
        assert_eq!(refused.kind(), ToolErrorKind::Unavailable);
        assert!(refused.is_retryable());
        let other = Error::other("bad").into_tool_error();
        assert_eq!(other.kind(), ToolErrorKind::Failed);
        assert!(!other.is_retryable());
    }
}
