//! [`Budget`]: what one invocation tree may spend (model calls, tool calls, tokens, wall
//! time), and its defaults.

use std::time::Duration;

use crate::model::Cost;

/// Default of [`Budget::max_model_calls`](Budget#structfield.max_model_calls): model calls per invocation tree.
pub const DEFAULT_MAX_MODEL_CALLS: u64 = 64;
/// Default of [`Budget::max_tool_calls`]: tool calls per invocation tree.
pub const DEFAULT_MAX_TOOL_CALLS: u64 = 256;
/// Default of [`Budget::max_tokens`]: input plus output tokens per invocation tree.
pub const DEFAULT_MAX_TOKENS: u64 = 2_000_000;
/// Default of [`Budget::max_duration`]: wall time per invocation tree.
pub const DEFAULT_MAX_DURATION: Duration = Duration::from_secs(15 * 60);

/// What one invocation tree may spend: a user message, the agent answering it, and every
/// agent it calls as a tool, at any depth, draw from one budget.
///
/// Limits on depth or on steps per agent bound how deep or how long one agent goes, not how
/// much a tree of agents does: an agent that calls itself as a tool, 16 steps at each of 4
/// levels, would make hundreds of thousands of model calls for one message. A budget bounds the
/// whole tree. When any part of it runs out the run ends with
/// `AgentError::BudgetExhausted`, naming what ran out;
/// agents deeper in the tree fail the same way, and their callers see that failure as a tool
/// error first.
///
/// The defaults ([`Budget::default`]) are generous for one answer and make runaway trees
/// impossible: 64 model calls, 256 tool calls, 2,000,000 tokens (input plus output, as the
/// model reports them) and 15 minutes. [`Budget::UNLIMITED`] has no limit at all.
///
/// ```
/// use std::time::Duration;
/// use tinyagent::Budget;
///
/// let budget = Budget::default().max_model_calls(20).max_duration(Duration::from_secs(60));
/// assert_eq!(budget.max_model_calls, Some(20));
/// assert_eq!(budget.max_tool_calls, Some(256));
/// assert_eq!(Budget::UNLIMITED.max_tokens, None);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Budget {
    /// The most model calls in the tree.
    pub max_model_calls: Option<u64>,
    /// The most tool calls run in the tree (calls refused before they run, such as unknown
    /// tools, do not count).
    pub max_tool_calls: Option<u64>,
    /// The most tokens, input plus output, that the tree's model calls may report.
    pub max_tokens: Option<u64>,
    /// The most wall time from the start of the top invocation.
    pub max_duration: Option<Duration>,
    /// The most money the tree's model calls may cost, priced by each agent's
    /// [`PriceTable`](crate::model::PriceTable) (calls of models without a price count as
    /// free). No limit by default.
    pub max_cost: Option<Cost>,
}

impl Default for Budget {
    fn default() -> Self {
        Self {
            max_model_calls: Some(DEFAULT_MAX_MODEL_CALLS),
            max_tool_calls: Some(DEFAULT_MAX_TOOL_CALLS),
            max_tokens: Some(DEFAULT_MAX_TOKENS),
            max_duration: Some(DEFAULT_MAX_DURATION),
            max_cost: None,
        }
    }
}

impl Budget {
    /// No limits at all; add some with the setters.
    pub const UNLIMITED: Self = Self {
        max_model_calls: None,
        max_tool_calls: None,
        max_tokens: None,
        max_duration: None,
        max_cost: None,
    };

    /// Sets [`max_model_calls`](Self::max_model_calls).
    pub const fn max_model_calls(mut self, n: u64) -> Self {
        self.max_model_calls = Some(n);
        self
    }

    /// Sets [`max_tool_calls`](Self::max_tool_calls).
    pub const fn max_tool_calls(mut self, n: u64) -> Self {
        self.max_tool_calls = Some(n);
        self
    }

    /// Sets [`max_tokens`](Self::max_tokens).
    pub const fn max_tokens(mut self, n: u64) -> Self {
        self.max_tokens = Some(n);
        self
    }

    /// Sets [`max_duration`](Self::max_duration). Needs a Tokio runtime with its time driver
    /// to interrupt a model or tool call in flight; without a runtime, it is checked between
    /// calls.
    pub const fn max_duration(mut self, d: Duration) -> Self {
        self.max_duration = Some(d);
        self
    }

    /// Sets [`max_cost`](Self::max_cost): the run stops with
    /// `AgentError::BudgetExhausted` before a model call
    /// once the tree's calls have cost this much.
    #[must_use]
    pub const fn max_cost(mut self, cost: Cost) -> Self {
        self.max_cost = Some(cost);
        self
    }
}
