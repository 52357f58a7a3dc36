//! The error every tool returns: [`ToolError`], with its [`ToolErrorKind`]; and the core it
//! shares with [`ModelError`](crate::ModelError).

use std::borrow::Cow;
use std::fmt;

/// A boxed error that can cross threads; what a tool's own errors are converted through.
pub type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// What went wrong in a tool call, in broad classes that middleware and the agent loop act on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ToolErrorKind {
    /// The input was not what the tool accepts (bad JSON, wrong types, missing fields, schema
    /// violations). Never worth retrying unchanged: the caller must fix the arguments.
    InvalidInput,
    /// The tool ran and failed.
    Failed,
    /// The tool did not finish within its deadline.
    TimedOut,
    /// The tool (or something it looked up) does not exist.
    NotFound,
    /// A policy or a person refused the call.
    Denied,
    /// The call was cancelled before it finished.
    Cancelled,
    /// Something the tool depends on is unavailable for now (a server down, a connection lost).
    Unavailable,
    /// A rate or concurrency limit refused the call.
    RateLimited,
    /// The call waits for a decision from outside the run (a person's approval, an event):
    /// the agent's run pauses instead of showing the model an error,
    /// and is resumed later, in any process, with `SessionRunner::resume` (or
    /// [`Invocation::resume`](crate::Invocation::resume)).
    ///
    Deferred,
}

impl ToolErrorKind {
    /// A short, stable, snake-case name for the kind, for logs and metrics.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::InvalidInput => "invalid_input",
            Self::Failed => "failed",
            Self::TimedOut => "timed_out",
            Self::NotFound => "not_found",
            Self::Denied => "denied",
            Self::Cancelled => "cancelled",
            Self::Unavailable => "unavailable",
            Self::RateLimited => "rate_limited",
            Self::Deferred => "deferred",
        }
    }

    /// Whether errors of this kind are retryable unless said otherwise.
    ///
    /// Timeouts, unavailability and rate limits are transient; everything else is not.
    pub const fn default_retryable(self) -> bool {
        matches!(self, Self::TimedOut | Self::Unavailable | Self::RateLimited)
    }
}

impl fmt::Display for ToolErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl ErrorKind for ToolErrorKind {
    fn default_retryable(self) -> bool {
        ToolErrorKind::default_retryable(self)
    }
}

/// What the shared error core needs of a kind.
pub(crate) trait ErrorKind:
    Copy + fmt::Debug + fmt::Display + Send + Sync + 'static
{
    /// Whether errors of this kind are retryable unless said otherwise.
    fn default_retryable(self) -> bool;
}

/// The body [`ToolError`] and [`ModelError`](crate::ModelError) share: a kind, a message, a
/// retryable flag and the underlying error. The public types wrap it and add what is their
/// own (constructors per kind, `Display`); [`error_type!`] writes the rest once for both.
pub(crate) struct ErrorCore<K> {
    pub(crate) kind: K,
    pub(crate) message: Cow<'static, str>,
    pub(crate) retryable: bool,
    pub(crate) source: Option<BoxError>,
}

impl<K: ErrorKind> ErrorCore<K> {
    pub(crate) fn new(kind: K, message: impl Into<Cow<'static, str>>) -> Self {
        Self {
            kind,
            message: message.into(),
            retryable: kind.default_retryable(),
            source: None,
        }
    }

    pub(crate) fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.source
            .as_deref()
            .map(|e| e as &(dyn std::error::Error + 'static))
    }

    pub(crate) fn debug(&self, name: &str, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct(name)
            .field("kind", &self.kind)
            .field("message", &self.message)
            .field("retryable", &self.retryable)
            .field("source", &self.source)
            .finish()
    }
}

/// The methods every error type built on [`ErrorCore`] has, written once.
macro_rules! error_type {
    ($name:ident, $kind:ty) => {
        impl $name {
            /// An error of the given kind, retryable as the kind says by default.
            pub fn new(kind: $kind, message: impl Into<::std::borrow::Cow<'static, str>>) -> Self {
                Self($crate::error::ErrorCore::new(kind, message))
            }

            /// Marks the error as retryable or not, overriding the kind's default.
            #[must_use]
            pub fn retryable(mut self, retryable: bool) -> Self {
                self.0.retryable = retryable;
                self
            }

            /// Attaches the underlying error, kept for operators (`Display` does not show it;
            /// [`std::error::Error::source`] returns it).
            #[must_use]
            pub fn with_source(mut self, source: impl Into<$crate::BoxError>) -> Self {
                self.0.source = Some(source.into());
                self
            }

            /// Replaces the message, keeping kind, retryable flag and source.
            #[must_use]
            pub fn with_message(
                mut self,
                message: impl Into<::std::borrow::Cow<'static, str>>,
            ) -> Self {
                self.0.message = message.into();
                self
            }

            /// The kind of failure.
            pub fn kind(&self) -> $kind {
                self.0.kind
            }

            /// The message, without the kind or the source.
            pub fn message(&self) -> &str {
                &self.0.message
            }

            /// Whether trying the same call again may succeed.
            pub fn is_retryable(&self) -> bool {
                self.0.retryable
            }
        }

        impl ::std::fmt::Debug for $name {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                self.0.debug(stringify!($name), f)
            }
        }

        impl ::std::error::Error for $name {
            fn source(&self) -> Option<&(dyn ::std::error::Error + 'static)> {
                self.0.source()
            }
        }
    };
}
pub(crate) use error_type;

/// The error of a tool call.
///
/// It carries a [`kind`](Self::kind) that middleware acts on, a
/// [`retryable`](Self::is_retryable) flag, a [`message`](Self::message) written for the model
/// (it is what the model reads when the call fails, and what `Display` prints), and the
/// underlying error kept for operators through [`std::error::Error::source`].
///
/// ```
/// use tinyagent::{ToolError, ToolErrorKind};
///
/// let err = ToolError::failed("upstream returned 502").retryable(true);
/// assert_eq!(err.kind(), ToolErrorKind::Failed);
/// assert!(err.is_retryable());
/// assert_eq!(err.to_string(), "upstream returned 502");
/// ```
#[non_exhaustive]
pub struct ToolError(ErrorCore<ToolErrorKind>);

error_type!(ToolError, ToolErrorKind);

impl ToolError {
    /// The input was not acceptable; see [`ToolErrorKind::InvalidInput`].
    pub fn invalid_input(message: impl Into<Cow<'static, str>>) -> Self {
        Self::new(ToolErrorKind::InvalidInput, message)
    }

    /// The tool failed; see [`ToolErrorKind::Failed`].
    pub fn failed(message: impl Into<Cow<'static, str>>) -> Self {
        Self::new(ToolErrorKind::Failed, message)
    }

    /// The tool timed out; see [`ToolErrorKind::TimedOut`].
    pub fn timed_out(message: impl Into<Cow<'static, str>>) -> Self {
        Self::new(ToolErrorKind::TimedOut, message)
    }

    /// Something was not found; see [`ToolErrorKind::NotFound`].
    pub fn not_found(message: impl Into<Cow<'static, str>>) -> Self {
        Self::new(ToolErrorKind::NotFound, message)
    }

    /// The call was refused; see [`ToolErrorKind::Denied`].
    pub fn denied(message: impl Into<Cow<'static, str>>) -> Self {
        Self::new(ToolErrorKind::Denied, message)
    }

    /// The call was cancelled; see [`ToolErrorKind::Cancelled`].
    pub fn cancelled(message: impl Into<Cow<'static, str>>) -> Self {
        Self::new(ToolErrorKind::Cancelled, message)
    }

    /// A dependency is unavailable; see [`ToolErrorKind::Unavailable`].
    pub fn unavailable(message: impl Into<Cow<'static, str>>) -> Self {
        Self::new(ToolErrorKind::Unavailable, message)
    }

    /// A limit refused the call; see [`ToolErrorKind::RateLimited`].
    pub fn rate_limited(message: impl Into<Cow<'static, str>>) -> Self {
        Self::new(ToolErrorKind::RateLimited, message)
    }

    /// The call waits for a decision from outside the run; see [`ToolErrorKind::Deferred`].
    /// The message says what it waits for, for the person or program that decides.
    pub fn deferred(message: impl Into<Cow<'static, str>>) -> Self {
        Self::new(ToolErrorKind::Deferred, message)
    }

    /// Converts any error (or string) into a `ToolError`.
    ///
    /// A `ToolError` passes through unchanged, keeping its kind. Anything else becomes a
    /// [`ToolErrorKind::Failed`] error whose message is the error's `Display` text, unchanged,
    /// with the original kept as the source.
    pub fn from_error(err: impl Into<BoxError>) -> Self {
        let boxed: BoxError = err.into();
        match boxed.downcast::<ToolError>() {
            Ok(tool_err) => *tool_err,
            Err(other) => Self::failed(other.to_string())
                .retryable(false)
                .with_source(other),
        }
    }
}

impl fmt::Display for ToolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.message())
    }
}

impl From<&'static str> for ToolError {
    fn from(message: &'static str) -> Self {
        Self::failed(message)
    }
}

impl From<String> for ToolError {
    fn from(message: String) -> Self {
        Self::failed(message)
    }
}

/// A JSON error inside a tool is a failure of the tool: it may come from anything the tool
/// parses, an upstream response as much as its arguments. To report bad arguments as
/// [`InvalidInput`](ToolErrorKind::InvalidInput), naming the field at fault, decode them with
/// `tools::decode_input`.
impl From<serde_json::Error> for ToolError {
    fn from(err: serde_json::Error) -> Self {
        Self::failed(format!("JSON error: {err}")).with_source(err)
    }
}

/// An I/O error inside a tool, its kind mapped: not found is
/// [`NotFound`](ToolErrorKind::NotFound), permission denied is [`Denied`](ToolErrorKind::Denied),
/// a timeout is [`TimedOut`](ToolErrorKind::TimedOut), a refused, reset or aborted connection is
/// [`Unavailable`](ToolErrorKind::Unavailable) (retryable); anything else is a
/// [`Failed`](ToolErrorKind::Failed) error. The message is the error's text.
impl From<std::io::Error> for ToolError {
    fn from(err: std::io::Error) -> Self {
        use std::io::ErrorKind as Io;
        let kind = match err.kind() {
            Io::NotFound => ToolErrorKind::NotFound,
            Io::PermissionDenied => ToolErrorKind::Denied,
            Io::TimedOut => ToolErrorKind::TimedOut,
            Io::ConnectionRefused
            | Io::ConnectionReset
            | Io::ConnectionAborted
            | Io::NotConnected
            | Io::BrokenPipe => ToolErrorKind::Unavailable,
            _ => ToolErrorKind::Failed,
        };
        Self::new(kind, err.to_string()).with_source(err)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::error::Error as _;

    #[derive(Debug, thiserror::Error)]
    #[error("disk full")]
    struct DiskFull;

    #[test]
    fn from_error_keeps_tool_errors_and_wraps_others() {
        let kept = ToolError::from_error(ToolError::denied("no"));
        assert_eq!(kept.kind(), ToolErrorKind::Denied);
        assert_eq!(kept.message(), "no");

        let wrapped = ToolError::from_error(DiskFull);
        assert_eq!(wrapped.kind(), ToolErrorKind::Failed);
        assert_eq!(wrapped.to_string(), "disk full");
        assert!(!wrapped.is_retryable());
        assert_eq!(wrapped.source().unwrap().to_string(), "disk full");

        let from_string = ToolError::from_error(String::from("除数不能为零"));
        assert_eq!(from_string.message(), "除数不能为零");
    }

    #[test]
    fn messages_can_be_replaced_and_debug_names_the_type() {
        let err = ToolError::denied("no")
            .with_message("not today")
            .with_source(DiskFull);
        assert_eq!(err.kind(), ToolErrorKind::Denied);
        assert_eq!(err.to_string(), "not today");
        assert_eq!(err.source().unwrap().to_string(), "disk full");
        let debug = format!("{err:?}");
        assert!(
            debug.starts_with("ToolError { kind: Denied, message: \"not today\", retryable: false"),
            "{debug}"
        );
    }

    #[test]
    fn retryable_defaults_follow_kind() {
        assert!(ToolError::timed_out("t").is_retryable());
        assert!(ToolError::unavailable("u").is_retryable());
        assert!(!ToolError::invalid_input("i").is_retryable());
        assert!(!ToolError::failed("f").is_retryable());
        assert!(ToolError::failed("f").retryable(true).is_retryable());
    }

    #[test]
    fn serde_json_errors_are_failures() {
        let err: ToolError = serde_json::from_str::<u32>("\"x\"").unwrap_err().into();
        assert_eq!(err.kind(), ToolErrorKind::Failed);
        assert!(
            err.message().starts_with("JSON error: "),
            "{}",
            err.message()
        );
        assert!(err.message().contains("invalid type"), "{}", err.message());
    }
}
