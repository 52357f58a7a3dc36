//! [`json_adapter`]: a typed async function becomes a [`Handler`].

use std::fmt;
use std::future::Future;
use std::marker::PhantomData;

use serde::de::DeserializeOwned;

use super::arguments::{MAX_PROBLEM_CHARS, quote_input};
use super::output::{IntoToolError, IntoToolOutput};
use super::{ToolInput, ToolOutput};
use crate::Handler;
use crate::context::ToolContext;
use crate::error::ToolError;
use crate::util::BoxFuture;
use crate::util::cut;

/// A typed tool function, in one of two shapes (like an axum handler, the context is optional):
///
/// - `async fn(I) -> Result<O, E>`
/// - `async fn(ToolContext, I) -> Result<O, E>`
///
/// where `I` is the input (decoded from the model's JSON arguments), `O` is
/// [`IntoToolOutput`] (text passes through, other values become JSON) and `E` is
/// [`IntoToolError`] (a [`ToolError`], text, or an error type implementing
/// [`ToolErrorKindHint`](crate::ToolErrorKindHint)). Closures of these shapes qualify
/// too. `M` only tells the two shapes apart; it is inferred. You never implement this trait
/// yourself.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a tool function taking `{I}`",
    label = "not a tool function",
    note = "a tool function is `async fn(I) -> Result<O, E>` or `async fn(ToolContext, I) -> Result<O, E>`, `Send + Sync`, returning a `Send` future",
    note = "`I` derives `Deserialize` and `JsonSchema` (a struct: tool arguments are a JSON object), `O` is text or `Serialize`, `E` is `ToolError`, `String` or implements `ToolErrorKindHint`"
)]
pub trait ToolFn<I, M>: Send + Sync {
    /// What the function returns on success.
    type Output: IntoToolOutput;
    /// What the function returns on failure.
    type Error: IntoToolError;
    /// The future the function returns.
    type Future: Future<Output = Result<Self::Output, Self::Error>> + Send;

    /// Calls the function.
    fn call(&self, ctx: ToolContext, input: I) -> Self::Future;
}

/// Marks the [`ToolFn`] shape `async fn(ToolContext, I)`.
#[derive(Debug)]
pub enum WithContext {}

/// Marks the [`ToolFn`] shape `async fn(I)`.
#[derive(Debug)]
pub enum WithoutContext {}

impl<F, I, O, E, Fut> ToolFn<I, WithContext> for F
where
    F: Fn(ToolContext, I) -> Fut + Send + Sync,
    Fut: Future<Output = Result<O, E>> + Send,
    O: IntoToolOutput,
    E: IntoToolError,
{
    type Output = O;
    type Error = E;
    type Future = Fut;

    fn call(&self, ctx: ToolContext, input: I) -> Fut {
        self(ctx, input)
    }
}

impl<F, I, O, E, Fut> ToolFn<I, WithoutContext> for F
where
    F: Fn(I) -> Fut + Send + Sync,
    Fut: Future<Output = Result<O, E>> + Send,
    O: IntoToolOutput,
    E: IntoToolError,
{
    type Output = O;
    type Error = E;
    type Future = Fut;

    fn call(&self, _ctx: ToolContext, input: I) -> Fut {
        self(input)
    }
}

/// The [`Handler`] made by [`json_adapter`].
pub struct JsonAdapter<F, I, M = WithContext> {
    f: F,
    _input: PhantomData<fn(I, M)>,
}

impl<F, I, M> fmt::Debug for JsonAdapter<F, I, M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "JsonAdapter<{}>", std::any::type_name::<I>())
    }
}

impl<F: Clone, I, M> Clone for JsonAdapter<F, I, M> {
    fn clone(&self) -> Self {
        Self {
            f: self.f.clone(),
            _input: PhantomData,
        }
    }
}

/// Adapts a typed async function into a [`Handler`].
///
/// The raw input is decoded from JSON into `I`, the function is called, and its output becomes
/// the result text through [`IntoToolOutput`] (text as it is, other values as JSON). An empty input counts as `{}`, which models send for tools without
/// arguments.
///
/// - A decode failure is a [`ToolErrorKind::InvalidInput`](crate::error::ToolErrorKind::InvalidInput)
///   error naming what is wrong (the field, the expected type, line and column) and quoting
///   the raw input, cut to 200 characters.
/// - The function's own error reaches the caller unchanged: its text is the message, a
///   [`ToolError`] keeps its kind.
///
/// ```
/// use serde::{Deserialize, Serialize};
/// use tinyagent::{Handler, ToolContext, ToolError};
/// use tinyagent::tools::json_adapter;
///
/// #[derive(Deserialize)]
/// struct Input { city: String }
/// #[derive(Serialize)]
/// struct Output { temperature: f64 }
///
/// async fn get_weather(input: Input) -> Result<Output, String> {
///     match input.city.as_str() {
///         "Beijing" => Ok(Output { temperature: 22.5 }),
///         other => Err(format!("no weather data for the city {other:?}")),
///     }
/// }
///
/// # tokio_test::block_on(async {
/// let handler = json_adapter(get_weather);
/// let ctx = ToolContext::default();
/// assert_eq!(handler.handle(&ctx, r#"{"city": "Beijing"}"#).await?, r#"{"temperature":22.5}"#);
/// let err = handler.handle(&ctx, r#"{"city": "Mars"}"#).await.unwrap_err();
/// assert_eq!(err.to_string(), r#"no weather data for the city "Mars""#);
/// let err = handler.handle(&ctx, r#"{"town": "Beijing"}"#).await.unwrap_err();
/// assert!(err.to_string().contains("missing field `city`"));
/// # Ok::<(), ToolError>(())
/// # }).unwrap();
/// ```
pub fn json_adapter<I, M, F>(f: F) -> JsonAdapter<F, I, M>
where
    I: DeserializeOwned + Send,
    F: ToolFn<I, M>,
{
    JsonAdapter {
        f,
        _input: PhantomData,
    }
}

impl<F, I, M> Handler for JsonAdapter<F, I, M>
where
    I: DeserializeOwned + Send,
    F: ToolFn<I, M>,
{
    fn call<'a>(
        &'a self,
        ctx: &'a ToolContext,
        input: ToolInput,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            // The value validation read travels with the input: decoded, not read again.
            let decoded: I = match input.value() {
                Some(value) => decode_value(value, input.text())?,
                None => decode_input(input.text())?,
            };
            match self.f.call(ctx.clone(), decoded).await {
                // An output the tool marks as an error is the call's error, as a returned
                // error would be (middleware retries, caches and logs them alike).
                Ok(output) => match output.into_output()? {
                    output if output.is_error() => {
                        Err(ToolError::failed(output.into_text()).retryable(false))
                    }
                    output => Ok(output),
                },
                Err(err) => Err(err.into_tool_error()),
            }
        })
    }
}

fn decode_value<I: DeserializeOwned>(value: &serde_json::Value, raw: &str) -> Result<I, ToolError> {
    serde_path_to_error::deserialize::<_, I>(value).map_err(|e| {
        let path = e.path().to_string();
        let err = e.into_inner();
        let field = if path == "." || path.is_empty() {
            String::new()
        } else {
            format!(" at `{}`", cut(&path, MAX_PROBLEM_CHARS))
        };
        ToolError::invalid_input(format!(
            "invalid arguments: the arguments do not match the tool's input{field}: {}; input was {}",
            cut(&err.to_string(), MAX_PROBLEM_CHARS),
            quote_input(raw)
        ))
        .with_source(err)
    })
}

/// The arguments a tool is called with, made whole: blank input (what many models send for a
/// tool without parameters) means `{}` — blank in JSON's sense: spaces, tabs, line feeds and
/// carriage returns only; anything else is returned unchanged.
///
/// ```
/// use tinyagent::tools::normalize_arguments;
///
/// assert_eq!(normalize_arguments(""), "{}");
/// assert_eq!(normalize_arguments("  \n"), "{}");
/// assert_eq!(normalize_arguments(r#"{"city":"Beijing"}"#), r#"{"city":"Beijing"}"#);
/// ```
pub fn normalize_arguments(raw: &str) -> &str {
    if super::arguments::trim_json_whitespace(raw).is_empty() {
        "{}"
    } else {
        raw
    }
}

/// Decodes a tool's raw JSON input into `I`, with an error a model can act on.
///
/// The fast path is plain `serde_json`; only when that fails is the input decoded again, with
/// path tracking, to name the field at fault.
pub fn decode_input<I: DeserializeOwned>(raw: &str) -> Result<I, ToolError> {
    let src = normalize_arguments(raw);
    match serde_json::from_str(src) {
        Ok(value) => Ok(value),
        Err(plain) => Err(describe_decode_error::<I>(src, raw, plain)),
    }
}

fn describe_decode_error<I: DeserializeOwned>(
    src: &str,
    raw: &str,
    plain: serde_json::Error,
) -> ToolError {
    let mut de = serde_json::Deserializer::from_str(src);
    let located: Result<I, _> = serde_path_to_error::deserialize(&mut de);
    let (path, err) = match located {
        Err(e) => {
            let path = e.path().to_string();
            (path, e.into_inner())
        }
        // Decoding succeeded with path tracking, so the plain error was about what follows.
        Ok(_) => (String::from("."), plain),
    };
    let what = match err.classify() {
        serde_json::error::Category::Syntax | serde_json::error::Category::Eof => {
            "the arguments are not valid JSON"
        }
        _ => "the arguments do not match the tool's input",
    };
    let field = if path == "." || path.is_empty() {
        String::new()
    } else {
        format!(" at `{}`", cut(&path, MAX_PROBLEM_CHARS))
    };
    // Tool arguments are a JSON object; say so plainly when other valid JSON came.
    let got = match src
        .trim_start_matches(super::arguments::is_json_whitespace)
        .as_bytes()
        .first()
    {
        Some(b'[') => "an array",
        Some(b'"') => "a string",
        Some(b'-' | b'0'..=b'9') => "a number",
        Some(b't' | b'f') => "a boolean",
        Some(b'n') => "null",
        _ => "",
    };
    if !got.is_empty() && serde_json::from_str::<serde::de::IgnoredAny>(src).is_ok() {
        return ToolError::invalid_input(format!(
            "invalid arguments: expected a JSON object with the tool's arguments, got {got}; input was {}",
            quote_input(raw)
        ))
        .with_source(err);
    }
    ToolError::invalid_input(format!(
        "invalid arguments: {what}{field}: {}; input was {}",
        cut(&err.to_string(), MAX_PROBLEM_CHARS),
        quote_input(raw)
    ))
    .with_source(err)
}
