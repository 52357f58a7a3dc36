//! [`HttpModel`]: the [`Model`] every HTTP provider is, over its [`Provider`] configuration:
//! checked, with its client and transports built once, its calls retried and streamed.

use std::sync::Arc;

use futures::stream::{self, BoxStream};
use tinyagent_core::{
    BoxFuture, Model, ModelError, ModelRequest, ModelResponse, model::ModelEvent,
};

use crate::{ConfigError, Provider, Transport, build_client, serialize};

/// A [`Model`] over HTTP for the provider whose configuration is `C`: [`Model::generate`]
/// posts one request to the first of its [endpoints](Provider::endpoints), [`Model::stream`]
/// streams server-sent events from the second, both through a [`Transport`] (retries,
/// timeouts, size limits).
///
/// Cheap to clone: clones share the HTTP connection pool.
pub struct HttpModel<C> {
    inner: Arc<Inner<C>>,
}

impl<C> Clone for HttpModel<C> {
    fn clone(&self) -> Self {
        Self {
            inner: Arc::clone(&self.inner),
        }
    }
}

impl<C: Provider> std::fmt::Debug for HttpModel<C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpModel")
            .field("config", &self.inner.config)
            .field("generate", &self.inner.generate)
            .field("stream", &self.inner.stream)
            .finish()
    }
}

struct Inner<C> {
    config: C,
    generate: Transport<C>,
    stream: Transport<C>,
}

impl<C: Provider> HttpModel<C> {
    /// A model with this configuration.
    ///
    /// Fails when the base URL is not an HTTP(S) URL, the model name is empty, a check of
    /// the provider's own fails ([`Provider::check`]), or a header (the key included) is not
    /// a valid header value.
    pub fn new(config: C) -> Result<Self, ConfigError> {
        crate::provider::check(&config)?;
        let [generate, stream] = config.endpoints();
        let info = C::INFO;
        let settings = config.settings();
        let headers = crate::provider::headers::<C>(settings.key()).map_err(ConfigError::Client)?;
        let client = build_client(
            headers,
            &settings.http.headers,
            info.user_agent,
            settings.http.connect_timeout,
        )
        .map_err(ConfigError::Client)?;
        let max_tokens = settings.max_tokens.or(info.implied_max_tokens);
        let transport = |endpoint: String| {
            Transport::new(
                client.clone(),
                endpoint,
                settings.base().to_owned(),
                settings.model.clone(),
                settings.http.clone(),
                max_tokens,
                config.clone(),
            )
        };
        let (generate, stream) = (transport(generate), transport(stream));
        Ok(Self {
            inner: Arc::new(Inner {
                config,
                generate,
                stream,
            }),
        })
    }

    /// A model configured from the environment: the provider's variables (its key, base URL
    /// and model; see [`from_lookup`](crate::from_lookup)).
    ///
    /// Fails with [`ConfigError::NotConfigured`] when neither the key nor the base URL is
    /// set, and as [`new`](Self::new) does.
    pub fn from_env() -> Result<Self, ConfigError> {
        Self::new(crate::from_lookup(|name| std::env::var(name).ok())?)
    }

    /// The configuration.
    pub fn config(&self) -> &C {
        &self.inner.config
    }

    /// The JSON body this model sends for `req` (`stream` chooses the streaming form): what
    /// goes over the wire, for logs and tests.
    pub fn request_body(&self, req: &ModelRequest, stream: bool) -> serde_json::Value {
        self.inner.config.request_body(req, stream)
    }
}

impl<C: Provider> Model for HttpModel<C> {
    fn name(&self) -> &str {
        self.inner.stream.model()
    }

    fn provider(&self) -> Option<&str> {
        C::INFO.provider
    }

    fn supports(&self, option: tinyagent_core::model::SamplingOption) -> bool {
        C::INFO.sampling.contains(&option)
    }

    fn generate<'a>(
        &'a self,
        req: &'a ModelRequest,
    ) -> BoxFuture<'a, Result<ModelResponse, ModelError>> {
        Box::pin(async move {
            let body = serialize(&self.request_body(req, false))?;
            self.inner.generate.generate(body, req).await
        })
    }

    fn stream<'a>(
        &'a self,
        req: &'a ModelRequest,
    ) -> BoxStream<'a, Result<ModelEvent, ModelError>> {
        match serialize(&self.request_body(req, true)) {
            Ok(body) => self.inner.stream.stream(body, req),
            Err(e) => Box::pin(stream::once(async move { Err(e) })),
        }
    }
}
