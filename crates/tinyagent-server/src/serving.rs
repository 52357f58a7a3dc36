//! Serving a [`Server`]: its router, and [`Server::serve`] on a listener of one's own.

use std::collections::HashMap;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use axum::Router;
use tinyagent_http::serve::ConnLimits;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tower_layer::Layer;

use crate::guard::{FrontLayer, SitePolicy};
use crate::keys::{ANONYMOUS, KeyRing};
use crate::serve_error::ServeError;
use crate::server::Server;
use crate::state::{AppState, Limits};

impl Server {
    /// The routes, to serve or to mount in an app of your own (`Router::nest`, `merge`).
    ///
    /// Mounted this way, the routes enforce the keys, body size, time and concurrency limits
    /// themselves; the choice of address (and whether a server without keys may listen on
    /// it) is the app's. [`serve`](Self::serve) makes it for you. Ask
    /// [`check`](Self::check) first: pinned or capped fields it would refuse are logged as an
    /// error here, and a pin of a field that cannot be pinned is ignored; keys it would refuse
    /// are logged and left out (each key of a name two keys share gets `401`).
    pub fn router(self) -> Router {
        if let Err(problem) = self.parameters.check() {
            tracing::error!(%problem, "the request fields the operator set cannot be used");
        }
        let (router, site, _) = self.into_parts(Arc::new(AtomicBool::new(false)));
        // Every route behind the front door (request ids, the cross-site checks).
        router.layer(FrontLayer::new(site))
    }

    /// The routes (without the front door), the host and origin policy, and the limits.
    fn into_parts(mut self, draining: Arc<AtomicBool>) -> (Router, Arc<SitePolicy>, Limits) {
        let limits = self.limits;
        // Every store operation a span: its latency in the traces and the metrics.
        self.store = Arc::new(crate::store_spans::TracedStore(self.store));
        let mut slots: HashMap<String, Arc<Semaphore>> = HashMap::new();
        for key in &self.keys {
            slots.insert(
                key.name.clone(),
                Arc::new(Semaphore::new(limits.max_concurrent_per_key)),
            );
        }
        slots.insert(
            ANONYMOUS.to_owned(),
            Arc::new(Semaphore::new(limits.max_concurrent_per_key)),
        );
        let site = Arc::new(self.site);
        let state = AppState {
            agents: self.agents,
            on_busy: self.on_busy,
            spending: Arc::new(crate::cost_limit::Spending::new(self.cost_limit)),
            store: self.store,
            keys: KeyRing::new(self.keys),
            slots,
            limits,
            draining,
            page: self.page,
            client_instructions: self.client_instructions,
            client_tool_results: self.client_tool_results,
            parameters: self.parameters,
            tenancy: self.tenancy,
            a2a: crate::state::A2aTenants::default(),
            metrics: self.metrics,
        };
        (crate::routes::router(Arc::new(state)), site, limits)
    }

    /// What [`serve`](Self::serve) would refuse on `addr`, checked before it starts (so a
    /// program can say it is serving only once it will): keys that cannot be told apart (two
    /// of one name, the admin key's included; one secret twice; a name with invisible
    /// characters), no API keys on an address other than loopback, no agent, request fields
    /// pinned or capped that cannot be.
    ///
    /// ```
    /// let server = tinyagent_server::Server::new();
    /// assert!(server.check("127.0.0.1:8080".parse().unwrap()).is_err(), "no agent");
    /// ```
    pub fn check(&self, addr: SocketAddr) -> Result<(), ServeError> {
        self.cannot_serve_on(addr).map_or(Ok(()), Err)
    }

    /// Why the server may not serve on `addr`, if it may not.
    fn cannot_serve_on(&self, addr: SocketAddr) -> Option<ServeError> {
        if let Err(problem) = crate::keys::check(&self.keys) {
            Some(problem)
        } else if self.keys.is_empty() && !self.allow_unauthenticated && !addr.ip().is_loopback() {
            Some(ServeError::Unauthenticated { addr })
        } else if self.agents.is_empty() {
            Some(ServeError::NoAgents)
        } else if let Err(problem) = self.parameters.check().and_then(|pinned| {
            self.agents
                .iter()
                .try_for_each(|a| a.check_options(&pinned).map_err(|e| e.to_string()))
        }) {
            Some(ServeError::Parameters { problem })
        } else {
            None
        }
    }

    /// Serves on `listener` until `shutdown` completes, then stops accepting connections and
    /// lets the answers in flight finish, for at most the [drain
    /// timeout](Self::drain_timeout).
    ///
    /// Refuses to start without API keys on an address other than loopback, unless
    /// [`allow_unauthenticated`](Self::allow_unauthenticated) says so.
    ///
    /// ```no_run
    /// # async fn run(server: tinyagent_server::Server) -> Result<(), tinyagent_server::ServeError> {
    /// let listener = tokio::net::TcpListener::bind("127.0.0.1:8080").await?;
    /// server.serve(listener, async { tokio::signal::ctrl_c().await.ok(); }).await
    /// # }
    /// ```
    pub async fn serve(
        self,
        listener: TcpListener,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> Result<(), ServeError> {
        let addr = listener.local_addr()?;
        if let Some(problem) = self.cannot_serve_on(addr) {
            return Err(problem);
        }
        if self.keys.is_empty() {
            tracing::warn!(%addr, "serving without API keys: anyone who can reach the address may use the agents");
        }
        let draining = Arc::new(AtomicBool::new(false));
        let (router, site, limits) = self.into_parts(draining.clone());
        // The front door wraps the router once (not each route, as `Router::layer` would).
        let service = FrontLayer::new(site).layer(router);
        let stop = async move {
            shutdown.await;
            draining.store(true, Ordering::SeqCst);
            tracing::info!(
                "shutting down: no new connections; letting the answers in flight finish"
            );
        };
        tracing::info!(%addr, "serving");
        let conn_limits = ConnLimits::new(limits.header_timeout, limits.max_connections)
            .write_timeout(limits.write_timeout);
        let (drained, cut) = crate::listen::serve(listener, service, conn_limits, stop).await;
        if tokio::time::timeout(limits.drain_timeout, drained)
            .await
            .is_err()
        {
            let _ = cut.send(true);
            tracing::warn!(
                drain_timeout_ms = limits.drain_timeout.as_millis() as u64,
                "answers still in flight after the drain timeout were cut"
            );
        }
        tracing::info!("stopped");
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tinyagent::LlmAgent;
    use tinyagent::testing::ScriptedModel;

    fn agent() -> LlmAgent {
        LlmAgent::builder("a")
            .model(ScriptedModel::new([]))
            .build()
            .unwrap()
    }

    #[test]
    fn without_keys_only_loopback_is_served_unless_allowed() {
        let open: SocketAddr = "0.0.0.0:8080".parse().unwrap();
        let v6: SocketAddr = "[::]:8080".parse().unwrap();
        let local: SocketAddr = "127.0.0.1:8080".parse().unwrap();
        let local6: SocketAddr = "[::1]:8080".parse().unwrap();
        let server = Server::new().agent(agent());
        for addr in [open, v6] {
            let problem = server.cannot_serve_on(addr).expect("refused");
            assert!(matches!(problem, ServeError::Unauthenticated { .. }));
            assert!(
                problem.to_string().contains("without API keys"),
                "{problem}"
            );
        }
        assert!(server.cannot_serve_on(local).is_none());
        assert!(server.cannot_serve_on(local6).is_none());
        let server = server.allow_unauthenticated(true);
        assert!(server.cannot_serve_on(open).is_none());
        let server = Server::new().agent(agent()).api_key("k");
        assert!(server.cannot_serve_on(open).is_none());
        // An empty key is no key.
        let server = Server::new().agent(agent()).api_key("");
        assert!(server.cannot_serve_on(open).is_some());
    }

    /// A model that takes only the temperature (the trait's default).
    struct Plain;

    impl tinyagent::Model for Plain {
        fn generate<'a>(
            &'a self,
            _req: &'a tinyagent::ModelRequest,
        ) -> tinyagent::BoxFuture<'a, Result<tinyagent::ModelResponse, tinyagent::ModelError>>
        {
            Box::pin(async { Err(tinyagent::ModelError::other("not called")) })
        }
    }

    #[test]
    fn pinned_fields_must_be_pinnable_valid_and_taken_by_every_model() {
        let local: SocketAddr = "127.0.0.1:8080".parse().unwrap();
        let plain = LlmAgent::builder("plain").model(Plain).build().unwrap();
        let refused = |server: Server| match server.cannot_serve_on(local) {
            Some(ServeError::Parameters { problem }) => problem,
            other => panic!("{other:?}"),
        };
        let pinned = |name: &str, value| Server::new().agent(agent()).pin_parameter(name, value);
        assert!(refused(pinned("n", serde_json::json!(2))).contains("cannot be pinned"));
        assert!(refused(pinned("seed", serde_json::json!("x"))).contains("whole number"));
        let problem = refused(
            Server::new()
                .agent(agent())
                .agent(plain)
                .pin_parameter("seed", serde_json::json!(7)),
        );
        assert!(problem.contains("does not take `seed`"), "{problem}");
        // The scripted model takes every option; a cap is no pin.
        assert!(
            pinned("seed", serde_json::json!(7))
                .cannot_serve_on(local)
                .is_none()
        );
        let capped = Server::new()
            .agent(agent())
            .cap_parameter("temperature", 1.0);
        assert!(capped.cannot_serve_on(local).is_none());
    }

    #[test]
    fn a_server_needs_an_agent() {
        let local: SocketAddr = "127.0.0.1:8080".parse().unwrap();
        assert!(matches!(
            Server::new().cannot_serve_on(local),
            Some(ServeError::NoAgents)
        ));
    }

    #[test]
    fn an_agent_of_the_same_name_replaces_the_earlier_one() {
        let server = Server::new().agent(agent()).agent(agent());
        assert_eq!(server.agents.len(), 1);
        let debug = format!("{server:?}");
        assert!(debug.contains("keys: 0"), "{debug}");
    }

    #[test]
    fn keys_are_found_by_value_and_never_printed() {
        let server = Server::new().api_key("sk-1").named_api_key("ops", "sk-2");
        assert!(!format!("{server:?}").contains("sk-"));
        let ring = KeyRing::new(server.keys);
        let name = |key: &[u8]| ring.find(key).map(|k| k.name.to_string());
        assert_eq!(name(b"sk-1"), Some(crate::keys::derived_name("sk-1")));
        assert_eq!(name(b"sk-2").as_deref(), Some("ops"));
        assert_eq!(name(b"sk-"), None);
        assert_eq!(name(b""), None);
    }
}
