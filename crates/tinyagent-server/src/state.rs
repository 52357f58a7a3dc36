//! What every handler shares: the [`AppState`] a [`Server`](crate::Server) builds its routes
//! on, with the limits it enforces and its policy for client text.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use tinyagent::Agent;
use tinyagent::agent::SessionRunner;
use tinyagent::store::SessionStore;
use tokio::sync::Semaphore;

use crate::keys::KeyRing;

/// What becomes of the `system` and `developer` messages a client sends to
/// `/v1/chat/completions`.
///
/// The agent's instruction is the operator's, and the agent's tools run with the operator's
/// credentials: a client's text must not rank with it. Whatever the policy, a provider's
/// system field (Anthropic's `system`, Gemini's `systemInstruction`) holds only the agent's
/// instruction unless the policy is [`Allow`](Self::Allow).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum ClientInstructions {
    /// They reach the model as user messages, marked as the client's and as ranking below the
    /// system prompt (the default).
    #[default]
    Below,
    /// Requests that carry them are refused with `400` (`client_instructions_not_allowed`).
    Deny,
    /// They become system messages, as in OpenAI's API: with Anthropic and Gemini they join
    /// the agent's instruction. For trusted clients only.
    Allow,
}

impl std::str::FromStr for ClientInstructions {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text.trim().to_ascii_lowercase().as_str() {
            "below" => Ok(Self::Below),
            "deny" => Ok(Self::Deny),
            "allow" => Ok(Self::Allow),
            other => Err(format!(
                "{other:?} is not a client-instructions policy: use below, deny or allow"
            )),
        }
    }
}

/// The limits a [`Server`] enforces.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Limits {
    pub(crate) max_body_bytes: usize,
    pub(crate) request_timeout: Option<Duration>,
    pub(crate) body_timeout: Duration,
    pub(crate) max_concurrent_per_key: usize,
    pub(crate) drain_timeout: Duration,
    pub(crate) header_timeout: Duration,
    pub(crate) write_timeout: Option<Duration>,
    pub(crate) max_connections: usize,
}

/// What every handler shares.
pub(crate) struct AppState {
    pub(crate) agents: Vec<Arc<dyn Agent>>,
    pub(crate) runners: HashMap<String, SessionRunner>,
    pub(crate) store: Arc<dyn SessionStore>,
    pub(crate) keys: KeyRing,
    pub(crate) slots: HashMap<String, Arc<Semaphore>>,
    pub(crate) limits: Limits,
    pub(crate) draining: Arc<AtomicBool>,
    pub(crate) page: bool,
    pub(crate) client_instructions: ClientInstructions,
    pub(crate) client_tool_results: bool,
    /// Chat Completions fields accepted and not used, by the operator's choice.
    pub(crate) parameters: crate::options::Parameters,
    pub(crate) tenancy: crate::tenancy::Tenancy,
    /// Each agent's A2A service per key.
    pub(crate) a2a: A2aTenants,
    /// The metrics `/metrics` shows, when the server was given them.
    pub(crate) metrics: Option<tinyagent_otel::Prometheus>,
}

impl AppState {
    /// The agent of this name.
    pub(crate) fn agent(&self, name: &str) -> Option<&Arc<dyn Agent>> {
        self.agents.iter().find(|a| a.name() == name)
    }

    /// The names of the agents, for error messages.
    pub(crate) fn agent_names(&self) -> String {
        self.agents
            .iter()
            .map(|a| format!("{:?}", a.name()))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// The A2A service of each (agent, key) pair: its JSON-RPC router, made on first use.
#[derive(Default)]
pub(crate) struct A2aTenants {
    pub(crate) routers: std::sync::Mutex<HashMap<(String, Arc<str>), axum::Router>>,
}
