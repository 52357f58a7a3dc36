//! How a model call fails: [`ModelError`] and its [`ModelErrorKind`].

use std::borrow::Cow;
use std::fmt;

use crate::error::BoxError;

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

/// The error of a model call: a [`kind`](Self::kind), a retryable flag, a message and the
/// underlying error.
///
/// ```
/// use tinyagent::{ModelError, ModelErrorKind};
///
/// let err = ModelError::new(ModelErrorKind::RateLimited, "429 Too Many Requests");
/// assert!(err.is_retryable());
/// assert_eq!(err.to_string(), "rate_limited: 429 Too Many Requests");
/// ```
#[derive(Debug)]
#[non_exhaustive]
pub struct ModelError {
    kind: ModelErrorKind,
    message: Cow<'static, str>,
    retryable: bool,
    source: Option<BoxError>,
}

impl ModelError {
    /// An error of the given kind, retryable as the kind says by default.
    pub fn new(kind: ModelErrorKind, message: impl Into<Cow<'static, str>>) -> Self {
        Self {
            kind,
            message: message.into(),
            retryable: kind.default_retryable(),
            source: None,
        }
    }

    /// An [`ModelErrorKind::InvalidResponse`] error.
    pub fn invalid_response(message: impl Into<Cow<'static, str>>) -> Self {
        Self::new(ModelErrorKind::InvalidResponse, message)
    }

    /// An [`ModelErrorKind::Other`] error.
    pub fn other(message: impl Into<Cow<'static, str>>) -> Self {
        Self::new(ModelErrorKind::Other, message)
    }

    /// Overrides the retryable flag.
    #[must_use]
    pub fn retryable(mut self, retryable: bool) -> Self {
        self.retryable = retryable;
        self
    }

    /// Attaches the underlying error.
    #[must_use]
    pub fn with_source(mut self, source: impl Into<BoxError>) -> Self {
        self.source = Some(source.into());
        self
    }

    /// The kind of failure.
    pub fn kind(&self) -> ModelErrorKind {
        self.kind
    }

    /// The message.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// Whether trying again may succeed.
    pub fn is_retryable(&self) -> bool {
        self.retryable
    }
}

impl fmt::Display for ModelError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.kind, self.message)
    }
}

impl std::error::Error for ModelError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.source
            .as_deref()
            .map(|e| e as &(dyn std::error::Error + 'static))
    }
}
