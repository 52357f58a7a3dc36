//! [`ApiJson`]: a JSON body, refused with the API's own error shape.

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::{FromRequest, Request};
use axum::http::StatusCode;
use serde::de::DeserializeOwned;

use crate::error::ApiError;
use crate::state::AppState;

/// A JSON body, rejected in OpenAI's error shape: `413` past the size limit, `408` when it
/// does not arrive in time, `400` naming what is wrong (and where) otherwise.
pub(crate) struct ApiJson<T>(pub(crate) T);

impl<T: DeserializeOwned> FromRequest<Arc<AppState>> for ApiJson<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &Arc<AppState>) -> Result<Self, Self::Rejection> {
        let limit = state.limits.body_timeout;
        let read = tokio::time::timeout(limit, Bytes::from_request(req, state));
        let bytes = read.await.map_err(|_| {
            ApiError::new(
                StatusCode::REQUEST_TIMEOUT,
                "invalid_request_error",
                format!(
                    "the request body did not arrive within {:.1} s",
                    limit.as_secs_f64()
                ),
            )
            .code("request_timeout")
        })?;
        let bytes = bytes.map_err(|rejection| {
            if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE {
                ApiError::new(
                    StatusCode::PAYLOAD_TOO_LARGE,
                    "invalid_request_error",
                    "the request body is larger than this server accepts",
                )
                .code("request_too_large")
            } else {
                ApiError::bad_request("the request body could not be read")
            }
        })?;
        let mut de = serde_json::Deserializer::from_slice(&bytes);
        let value = serde_path_to_error::deserialize(&mut de).map_err(|err| {
            let at = err.path().to_string();
            let message = if at == "." {
                format!("the request body is not valid: {}", err.inner())
            } else {
                format!("the request body is not valid at `{at}`: {}", err.inner())
            };
            ApiError::bad_request(message).code("invalid_request_body")
        })?;
        de.end().map_err(|err| {
            ApiError::bad_request(format!("the request body is not valid: {err}"))
                .code("invalid_request_body")
        })?;
        Ok(Self(value))
    }
}
