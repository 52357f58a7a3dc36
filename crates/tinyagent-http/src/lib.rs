//! # tinyagent-http
//!
//! The HTTP plumbing tinyagent's model providers share, so each provider writes only its
//! wire format:
//!
//! - [`Transport`] posts a request body to one endpoint, retries failures that may pass
//!   (429, 5xx, connection failures, timeouts, a stream cut in the middle, a retryable error
//!   event) with exponential backoff and jitter, honouring `Retry-After` (seconds or an HTTP
//!   date) and `retry-after-ms`, and announces a retry after events were shown with
//!   [`ModelEvent::Restart`](tinyagent_core::model::ModelEvent::Restart);
//! - every wait runs against a limit ([`HttpSettings`]): the first byte of the answer, the silence
//!   between two events, the whole call with its retries; a body larger than
//!   [`HttpSettings::max_reply_bytes`] is cut off with an error;
//! - server-sent events are read without panicking on byte order marks, and handed to the
//!   provider's [`Decoder`]; a 200 that is not the API (an HTML page, an empty body) is an
//!   error naming the status, the content type and the start of the body.
//!
//! A provider implements [`Protocol`] (its error bodies, its complete responses, a decoder
//! for its stream) and builds a [`Transport`] with its own `reqwest::Client`, which carries
//! its headers. A provider whose configuration implements [`Provider`] as well (its names,
//! defaults, endpoints and request body) has the rest in common with the others: reading
//! the settings every configuration embeds ([`ProviderSettings`]: base URL, key, model, token
//! limit, [`HttpSettings`]), reading the environment ([`from_lookup`]), the checks of its base
//! URL and model, its headers, and the [`Model`](tinyagent_core::Model) itself ([`HttpModel`]); a
//! failing status is worded alike for every provider ([`status_error`]) unless it has words
//! of its own.
//!
//! The `testing` feature adds `tinyagent_http::testing`: the helpers of the providers'
//! loopback tests (a model's whole stream within a bound, replies in sequence, a server that
//! never stops, the run of a spec validator).
//!
//! This is a support crate for providers: its API follows their needs and may change in any
//! release.

mod body;
mod call;
mod config_error;
mod errors;
mod limits;
mod model;
mod protocol;
mod provider;
mod provider_info;
mod provider_settings;
mod sampling;
mod settings;
mod status;
mod turns;

#[cfg(feature = "server")]
pub mod serve;

#[cfg(feature = "testing")]
pub mod testing;

pub use body::{
    BOM, BodyError, content_type, guarded, read_body, read_error_body, strip_bom, without_bom,
};
pub use call::Transport;
pub use config_error::{ConfigError, check_base_url_and_model};
pub use errors::{
    bounded, field_text, parse_json, parse_shape, retry_after, serialize, snippet, too_large,
    transport_error, unexpected_body,
};
pub use limits::{Attempts, Limit, backoff, far_future, secs};
pub use model::HttpModel;
pub use protocol::{Decoder, Flow, Protocol};
pub use provider::{Provider, check, from_lookup};
pub use provider_info::ProviderInfo;
pub use provider_settings::ProviderSettings;
pub use sampling::{decimal, sampling_fields};
pub use settings::{
    EnvSettings, HttpConfig, HttpSettings, build_client, env_settings, is_http_url, key_header,
};
pub use status::{Failure, describe, error_body, status_error};
pub use turns::system_and_turns;
