//! How a model call fails: [`ModelError`] and its [`ModelErrorKind`].

use std::borrow::Cow;
use std::fmt;

use crate::error::{ErrorCore, ErrorKind, error_type};

/// The broad class of a model failure.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ModelErrorKind {
    /// The provider could not be reached or failed on its side (network errors, 5xx).
    Unavailable,
    /// The provider refused for rate or quota reasons (429).
    RateLimited,
    /// The credentials were missing or refused (401, 403).
    Authentication,
    /// The provider rejected the request as malformed (400, unknown model).
    InvalidRequest,
    /// The prompt does not fit the model's context window.
    ContextLengthExceeded,
    /// The provider's answer could not be understood (bad JSON, a stream without an end).
    InvalidResponse,
    /// No answer within the deadline.
    TimedOut,
    /// The call was cancelled.
    Cancelled,
    /// Anything else.
    Other,
}

impl ModelErrorKind {
    /// A short, stable, snake-case name for the kind.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Unavailable => "unavailable",
            Self::RateLimited => "rate_limited",
            Self::Authentication => "authentication",
            Self::InvalidRequest => "invalid_request",
            Self::ContextLengthExceeded => "context_length_exceeded",
            Self::InvalidResponse => "invalid_response",
            Self::TimedOut => "timed_out",
            Self::Cancelled => "cancelled",
            Self::Other => "other",
        }
    }

    /// Whether errors of this kind are retryable unless said otherwise: unavailability, rate
    /// limits and timeouts.
    pub const fn default_retryable(self) -> bool {
        matches!(self, Self::Unavailable | Self::RateLimited | Self::TimedOut)
    }
}

impl fmt::Display for ModelErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl ErrorKind for ModelErrorKind {
    fn default_retryable(self) -> bool {
        ModelErrorKind::default_retryable(self)
    }
}

/// The error of a model call: a [`kind`](Self::kind), a retryable flag, a message and the
/// underlying error.
///
/// ```
/// use tinyagent::{ModelError, model::ModelErrorKind};
///
/// let err = ModelError::new(ModelErrorKind::RateLimited, "429 Too Many Requests");
/// assert!(err.is_retryable());
/// assert_eq!(err.to_string(), "rate_limited: 429 Too Many Requests");
/// ```
#[non_exhaustive]
pub struct ModelError(ErrorCore<ModelErrorKind>);

error_type!(ModelError, ModelErrorKind);

impl ModelError {
    /// An [`ModelErrorKind::InvalidResponse`] error.
    pub fn invalid_response(message: impl Into<Cow<'static, str>>) -> Self {
        Self::new(ModelErrorKind::InvalidResponse, message)
    }

    /// An [`ModelErrorKind::Other`] error.
    pub fn other(message: impl Into<Cow<'static, str>>) -> Self {
        Self::new(ModelErrorKind::Other, message)
    }
}

impl fmt::Display for ModelError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.kind(), self.message())
    }
}

#[cfg(test)]
mod tests {
    use std::error::Error as _;

    use super::*;

    #[test]
    fn model_errors_share_the_tool_error_core() {
        let io = std::io::Error::other("connection reset");
        let err = ModelError::new(ModelErrorKind::Unavailable, "cannot reach the server")
            .with_source(io)
            .with_message("cannot reach http://127.0.0.1:9");
        assert!(err.is_retryable(), "unavailable is retryable by default");
        assert_eq!(err.kind(), ModelErrorKind::Unavailable);
        assert_eq!(err.message(), "cannot reach http://127.0.0.1:9");
        assert_eq!(
            err.to_string(),
            "unavailable: cannot reach http://127.0.0.1:9"
        );
        assert_eq!(err.source().unwrap().to_string(), "connection reset");
        let debug = format!("{err:?}");
        assert!(
            debug.starts_with("ModelError { kind: Unavailable, message: \"cannot reach"),
            "{debug}"
        );
        assert!(!ModelError::other("x").is_retryable());
        assert!(!ModelError::other("x").retryable(false).is_retryable());
        assert!(
            ModelError::invalid_response("x")
                .retryable(true)
                .is_retryable()
        );
    }
}
