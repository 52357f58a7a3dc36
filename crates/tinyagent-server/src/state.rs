//! What every handler shares: the [`AppState`] a [`Server`](crate::Server) builds its routes
//! on, with the limits it enforces and its policy for client text.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use tinyagent::agent::{OnBusy, SessionRunner};
use tinyagent::budget::BudgetResource;
use tinyagent::store::SessionStore;
use tinyagent::{Agent, AgentError};
use tokio::sync::Semaphore;

use crate::cost_limit::Spending;
use crate::error::ApiError;
use crate::keys::KeyRing;
use crate::metered::Metered;
use crate::tenancy::Caller;

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
    pub(crate) store: Arc<dyn SessionStore>,
    /// What a post to a busy session does.
    pub(crate) on_busy: OnBusy,
    /// What each key has left of its money.
    pub(crate) spending: Arc<Spending>,
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

    /// The agent `agent` as `caller` runs it: within the key's money, when keys have a limit.
    pub(crate) fn metered(&self, agent: &Arc<dyn Agent>, caller: &Caller) -> Arc<dyn Agent> {
        if self.spending.limit.is_none() {
            return agent.clone();
        }
        Arc::new(Metered::new(
            agent.clone(),
            self.spending.clone(),
            caller.name.clone(),
        ))
    }

    /// A runner of `agent` (metered for `caller`) on the sessions of `store`, as posts run:
    /// a busy session waited for as the operator said, an interrupted turn kept.
    pub(crate) fn runner(
        &self,
        agent: Arc<dyn Agent>,
        store: Arc<dyn SessionStore>,
        owner: Arc<str>,
    ) -> SessionRunner {
        SessionRunner::new(agent, store)
            .on_busy(self.on_busy)
            .owner(owner)
            .keep_interrupted(true)
    }

    /// `Err` (`429 cost_limit_exceeded`) when `caller`'s key has spent its money.
    pub(crate) fn afford(&self, caller: &Caller) -> Result<(), ApiError> {
        match (self.spending.limit, self.spending.wait(&caller.name)) {
            (Some(limit), Some(wait)) => Err(ApiError::cost_limit(&limit.to_string(), wait, false)),
            _ => Ok(()),
        }
    }

    /// The answer for a run of `caller`'s that failed: one that ran out of the key's money
    /// (its budget's cost, when keys have a limit) is the key's `429 cost_limit_exceeded`.
    pub(crate) fn run_error(&self, err: AgentError, caller: &Caller) -> ApiError {
        match (&err, self.spending.limit) {
            (
                AgentError::BudgetExhausted {
                    resource: BudgetResource::Cost,
                    ..
                },
                Some(limit),
            ) => {
                let wait = self.spending.wait(&caller.name).unwrap_or_default();
                ApiError::cost_limit(&limit.to_string(), wait, true)
            }
            _ => ApiError::from(err),
        }
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
