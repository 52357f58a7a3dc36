//! [`ApiError`]: every error the server answers with, in OpenAI's error shape.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::json;
use tinyagent::AgentError;
use tinyagent::store::StoreError;

/// An error answer: an HTTP status and OpenAI's error object,
/// `{"error":{"message":…,"type":…,"param":…,"code":…}}`, which OpenAI's SDKs turn into their
/// own exceptions (`openai.AuthenticationError`, `openai.NotFoundError`...).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiError {
    /// The HTTP status.
    pub status: StatusCode,
    /// What went wrong, for people.
    pub message: String,
    /// The error's type: `invalid_request_error`, `authentication_error`, `not_found_error`,
    /// `rate_limit_error`, `timeout_error`, `server_error`...
    pub kind: &'static str,
    /// The request parameter at fault, if one is.
    pub param: Option<String>,
    /// A machine-readable code (`model_not_found`, `invalid_api_key`...).
    pub code: Option<&'static str>,
    /// Seconds after which the client may try again (`Retry-After`).
    pub retry_after: Option<u64>,
}

impl ApiError {
    /// An error with this status, type and message.
    pub fn new(status: StatusCode, kind: &'static str, message: impl Into<String>) -> Self {
        Self {
            status,
            message: message.into(),
            kind,
            param: None,
            code: None,
            retry_after: None,
        }
    }

    /// A 400 `invalid_request_error`.
    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, "invalid_request_error", message)
    }

    /// A 404 `not_found_error`.
    pub fn not_found(message: impl Into<String>) -> Self {
        Self::new(StatusCode::NOT_FOUND, "not_found_error", message)
    }

    /// A 401 `authentication_error`, saying no more than that the key is missing or wrong.
    pub fn unauthorized(missing: bool) -> Self {
        let (message, code) = if missing {
            (
                "no API key was given: send it as `Authorization: Bearer <key>`",
                "missing_api_key",
            )
        } else {
            ("the API key is not valid", "invalid_api_key")
        };
        Self::new(StatusCode::UNAUTHORIZED, "authentication_error", message).code(code)
    }

    /// A 500 `server_error`.
    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(StatusCode::INTERNAL_SERVER_ERROR, "server_error", message)
    }

    /// Returns the error naming the request parameter at fault.
    #[must_use]
    pub fn param(mut self, param: impl Into<String>) -> Self {
        self.param = Some(param.into());
        self
    }

    /// Returns the error with a machine-readable code.
    #[must_use]
    pub fn code(mut self, code: &'static str) -> Self {
        self.code = Some(code);
        self
    }

    /// Returns the error with a `Retry-After` of this many seconds.
    #[must_use]
    pub fn retry_after(mut self, seconds: u64) -> Self {
        self.retry_after = Some(seconds);
        self
    }

    /// The error object as JSON: `{"error":{"message","type","param","code"}}`.
    pub fn body(&self) -> serde_json::Value {
        json!({
            "error": {
                "message": self.message,
                "type": self.kind,
                "param": self.param,
                "code": self.code,
            }
        })
    }
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({}): {}", self.status, self.kind, self.message)
    }
}

impl std::error::Error for ApiError {}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut response = (self.status, axum::Json(self.body())).into_response();
        let headers = response.headers_mut();
        if self.status == StatusCode::UNAUTHORIZED {
            headers.insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        }
        if let Some(seconds) = self.retry_after {
            headers.insert(header::RETRY_AFTER, HeaderValue::from(seconds));
        }
        response
    }
}

impl From<StoreError> for ApiError {
    fn from(err: StoreError) -> Self {
        let message = err.to_string();
        match err {
            StoreError::NotFound { .. } => Self::not_found(message).code("session_not_found"),
            StoreError::InvalidInput { .. } | StoreError::AlreadyExists { .. } => {
                Self::bad_request(message)
            }
            StoreError::Busy { .. } | StoreError::Conflict { .. } => {
                Self::new(StatusCode::CONFLICT, "conflict_error", message)
                    .code("session_busy")
                    .retry_after(1)
            }
            StoreError::Backend { .. } => {
                tracing::error!(error = %message, "session store failed");
                Self::new(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "server_error",
                    "the session store is unavailable; try again later",
                )
                .code("store_unavailable")
                .retry_after(1)
            }
            _ => {
                tracing::error!(error = %message, "session store error");
                Self::internal(message)
            }
        }
    }
}

impl From<AgentError> for ApiError {
    fn from(err: AgentError) -> Self {
        match err {
            AgentError::Store(err) => err.into(),
            AgentError::Model(err) => {
                tracing::warn!(error = %err, "model failed");
                Self::new(
                    StatusCode::BAD_GATEWAY,
                    "server_error",
                    format!("the agent's model failed: {err}"),
                )
                .code("model_error")
            }
            other => {
                tracing::warn!(error = %other, "agent run failed");
                Self::internal(other.to_string()).code("agent_error")
            }
        }
    }
}
