//! [`ApiError`]: every error the server answers with, in OpenAI's error shape.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::json;
use tinyagent::AgentError;
use tinyagent::store::StoreError;

/// An error answer: an HTTP status and OpenAI's error object,
/// `{"error":{"message":…,"type":…,"param":…,"code":…,"request_id":…}}`, which OpenAI's SDKs
/// turn into their own exceptions (`openai.AuthenticationError`, `openai.NotFoundError`...).
///
/// The message is short and says nothing of the server's internals: a failure of the model,
/// the store or the agent is logged in full (URLs with their credentials redacted) under the
/// request id, which the client gets in the body and in the `x-request-id` header.
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
    /// The id of the request, which the server's log lines name too.
    pub request_id: Option<Box<str>>,
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
            request_id: crate::request_id::RequestId::current().map(|id| id.as_str().into()),
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

    /// A `429 cost_limit_exceeded`: the key has spent its money (`limit`), and may spend again
    /// in `wait`; `stopped` when a run was stopped for it.
    pub(crate) fn cost_limit(limit: &str, wait: std::time::Duration, stopped: bool) -> Self {
        let seconds = (wait.as_secs() + u64::from(wait.subsec_nanos() > 0)).max(1);
        let what = if stopped {
            "the run was stopped before its next model call: this API key spent what it had \
             left"
        } else {
            "this API key has spent what it may"
        };
        Self::new(
            StatusCode::TOO_MANY_REQUESTS,
            "rate_limit_error",
            format!("{what} of its money limit ({limit}); retry in {seconds} s"),
        )
        .code("cost_limit_exceeded")
        .retry_after(seconds)
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

    /// Returns the error naming this request id (for errors made outside the request's
    /// handler, such as in a stream).
    #[must_use]
    pub fn request_id(mut self, id: Option<String>) -> Self {
        if let Some(id) = id {
            self.request_id = Some(id.into_boxed_str());
        }
        self
    }

    /// The error object as JSON: `{"error":{"message","type","param","code","request_id"}}`.
    pub fn body(&self) -> serde_json::Value {
        let mut body = json!({
            "error": {
                "message": self.message,
                "type": self.kind,
                "param": self.param,
                "code": self.code,
            }
        });
        if let Some(id) = &self.request_id {
            body["error"]["request_id"] = json!(id);
        }
        body
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
            // What the client sent: its session id or its list cursor.
            StoreError::InvalidInput {
                what: "session id" | "cursor",
                ..
            } => Self::bad_request(message),
            StoreError::AlreadyExists { .. } => Self::bad_request(message),
            StoreError::Busy { .. } | StoreError::Conflict { .. } => {
                Self::new(StatusCode::CONFLICT, "conflict_error", message)
                    .code("session_busy")
                    .retry_after(1)
            }
            StoreError::Backend { .. } => {
                let this = Self::new(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "server_error",
                    "the session store is unavailable; try again later",
                )
                .code("store_unavailable")
                .retry_after(1);
                tracing::error!(
                    error = %tinyagent::redact::url(&message),
                    request_id = this.request_id.as_deref().unwrap_or_default(),
                    "session store failed"
                );
                this
            }
            _ => {
                // A stored row that does not read back, a history the run rewrote...: what is
                // wrong may quote stored data, which stays in the log.
                let this = Self::internal("the session store could not do what was asked")
                    .code("store_error");
                tracing::error!(
                    error = %tinyagent::redact::url(&message),
                    request_id = this.request_id.as_deref().unwrap_or_default(),
                    "session store error"
                );
                this
            }
        }
    }
}

impl From<AgentError> for ApiError {
    fn from(err: AgentError) -> Self {
        match err {
            AgentError::Store(err) => err.into(),
            other => Self::from_run(&other),
        }
    }
}

impl ApiError {
    /// The answer for a run that failed for another reason than its store (the error is
    /// logged in full).
    pub(crate) fn from_run(err: &AgentError) -> Self {
        let this = match err {
            // The model's error names the provider's URL and quotes its answer: log only.
            AgentError::Model(_) => Self::new(
                StatusCode::BAD_GATEWAY,
                "server_error",
                "the agent's model failed; the server's log has the details under this request id",
            )
            .code("model_error"),
            AgentError::StepLimit { .. } => {
                Self::internal("the agent reached its limit of model calls without answering")
                    .code("step_limit")
            }
            AgentError::BudgetExhausted { .. } => {
                Self::internal("the agent ran out of its budget before answering")
                    .code("budget_exhausted")
            }
            AgentError::InvalidAnswer {
                problem, format, ..
            } => Self::new(
                StatusCode::BAD_GATEWAY,
                "server_error",
                format!(
                    "the agent's answer did not match response_format `{format}`, even after \
                     the problem was shown to it once: {problem}"
                ),
            )
            .code("invalid_answer"),
            AgentError::Options {
                option, problem, ..
            } => Self::bad_request(problem.clone())
                .param(option.clone())
                .code(if option == "tool_choice" {
                    "invalid_value"
                } else {
                    "unsupported_parameter"
                }),
            AgentError::Paused { pending, .. } => Self::new(
                StatusCode::CONFLICT,
                "invalid_request_error",
                format!(
                    "the run is paused: {} tool call(s) wait for a decision; the session's \
                     `paused` field lists them, and POST /v1/sessions/{{id}}/resume with a \
                     decision for each resumes the run",
                    pending.len()
                ),
            )
            .code("run_paused"),
            AgentError::Resume { problem, .. } => Self::new(
                StatusCode::CONFLICT,
                "invalid_request_error",
                format!("the run cannot be resumed: {problem}"),
            )
            .code("cannot_resume"),
            _ => Self::internal(
                "the agent's run failed; the server's log has the details under this request id",
            )
            .code("agent_error"),
        };
        tracing::warn!(
            error = %tinyagent::redact::url(&err.to_string()),
            code = this.code.unwrap_or_default(),
            request_id = this.request_id.as_deref().unwrap_or_default(),
            "agent run failed"
        );
        this
    }
}
