//! [`json_adapter`]: a typed async function becomes a [`Handler`].

use std::fmt;
use std::future::Future;
use std::marker::PhantomData;

use serde::Serialize;
use serde::de::DeserializeOwned;

use super::arguments::{MAX_PROBLEM_CHARS, ValidatedArguments, cut};
use crate::context::ToolContext;
use crate::error::{BoxError, ToolError};
use crate::tools::Handler;
use crate::util::BoxFuture;

/// How much of a bad input an error message quotes.
const QUOTE_LIMIT: usize = 200;

/// A typed tool function: `async fn(ToolContext, I) -> Result<O, E>`.
///
/// Implemented for every such function or closure whose output is `Serialize` and whose error
/// converts into a [`BoxError`] (any `std::error::Error + Send + Sync`, a `String`, a `&str`,
/// or a [`ToolError`], which keeps its kind). You never implement it yourself.
pub trait ToolFn<I>: Send + Sync {
    /// What the function returns on success; encoded as JSON for the model.
    type Output: Serialize;
    /// What the function returns on failure.
    type Error: Into<BoxError>;
    /// The future the function returns.
    type Future: Future<Output = Result<Self::Output, Self::Error>> + Send;

    /// Calls the function.
    fn call(&self, ctx: ToolContext, input: I) -> Self::Future;
}

impl<F, I, O, E, Fut> ToolFn<I> for F
where
    F: Fn(ToolContext, I) -> Fut + Send + Sync,
    Fut: Future<Output = Result<O, E>> + Send,
    O: Serialize,
    E: Into<BoxError>,
{
    type Output = O;
    type Error = E;
    type Future = Fut;

    fn call(&self, ctx: ToolContext, input: I) -> Fut {
        self(ctx, input)
    }
}

/// The [`Handler`] made by [`json_adapter`].
pub struct JsonAdapter<F, I> {
    f: F,
    _input: PhantomData<fn(I)>,
}

impl<F, I> fmt::Debug for JsonAdapter<F, I> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "JsonAdapter<{}>", std::any::type_name::<I>())
    }
}

impl<F: Clone, I> Clone for JsonAdapter<F, I> {
    fn clone(&self) -> Self {
        Self {
            f: self.f.clone(),
            _input: PhantomData,
        }
    }
}

/// Adapts a typed async function into a [`Handler`] (TinyAgent's `JSONAdapter`).
///
/// The raw input is decoded from JSON into `I`, the function is called, and its output is
/// encoded as JSON. An empty input counts as `{}`, which models send for tools without
/// arguments.
///
/// - A decode failure is a [`ToolErrorKind::InvalidInput`](crate::ToolErrorKind::InvalidInput)
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
/// async fn get_weather(_ctx: ToolContext, input: Input) -> Result<Output, String> {
///     match input.city.as_str() {
///         "北京" => Ok(Output { temperature: 22.5 }),
///         other => Err(format!("未找到城市 {other:?} 的天气数据")),
///     }
/// }
///
/// # tokio_test::block_on(async {
/// let handler = json_adapter(get_weather);
/// let ctx = ToolContext::default();
/// assert_eq!(handler.handle(&ctx, r#"{"city": "北京"}"#).await?, r#"{"temperature":22.5}"#);
/// let err = handler.handle(&ctx, r#"{"city": "火星"}"#).await.unwrap_err();
/// assert_eq!(err.to_string(), r#"未找到城市 "火星" 的天气数据"#);
/// let err = handler.handle(&ctx, r#"{"town": "北京"}"#).await.unwrap_err();
/// assert!(err.to_string().contains("missing field `city`"));
/// # Ok::<(), ToolError>(())
/// # }).unwrap();
/// ```
pub fn json_adapter<I, F>(f: F) -> JsonAdapter<F, I>
where
    I: DeserializeOwned + Send,
    F: ToolFn<I>,
{
    JsonAdapter {
        f,
        _input: PhantomData,
    }
}

impl<F, I> Handler for JsonAdapter<F, I>
where
    I: DeserializeOwned + Send,
    F: ToolFn<I>,
{
    fn handle<'a>(
        &'a self,
        ctx: &'a ToolContext,
        input: &'a str,
    ) -> BoxFuture<'a, Result<String, ToolError>> {
        Box::pin(async move {
            let input: I = match ctx.extension::<ValidatedArguments>() {
                Some(validated) if validated.is_for(input) => {
                    decode_value(&validated.value, input)?
                }
                _ => decode_input(input)?,
            };
            let output = self
                .f
                .call(ctx.clone(), input)
                .await
                .map_err(ToolError::from_error)?;
            serde_json::to_string(&output).map_err(|e| {
                ToolError::failed(format!(
                    "the tool's output could not be encoded as JSON: {e}"
                ))
                .with_source(e)
            })
        })
    }
}

/// Decodes arguments that were already parsed (and checked against the tool's schema) into
/// `I`, naming the field at fault when they do not fit.
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
/// tool without parameters) means `{}`; anything else is returned unchanged.
///
/// ```
/// use tinyagent::tools::normalize_arguments;
///
/// assert_eq!(normalize_arguments(""), "{}");
/// assert_eq!(normalize_arguments("  \n"), "{}");
/// assert_eq!(normalize_arguments(r#"{"city":"北京"}"#), r#"{"city":"北京"}"#);
/// ```
pub fn normalize_arguments(raw: &str) -> &str {
    if raw.trim().is_empty() { "{}" } else { raw }
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
    let got = match src.trim_start().as_bytes().first() {
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

/// Quotes (part of) a raw input for an error message, cut at a character boundary.
pub(crate) fn quote_input(raw: &str) -> String {
    if raw.len() <= QUOTE_LIMIT {
        return format!("{raw:?}");
    }
    let mut end = QUOTE_LIMIT;
    while !raw.is_char_boundary(end) {
        end -= 1;
    }
    format!("{:?}… ({} more bytes)", &raw[..end], raw.len() - end)
}
