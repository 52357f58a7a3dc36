//! [`SharedBudget`]: the tally of one invocation tree against its [`Budget`], and what it
//! reports when something runs out.

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::time::Instant;

use super::Budget;
use crate::model::Cost;

/// What ran out; see [`BudgetExceeded`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum BudgetResource {
    /// Model calls.
    ModelCalls,
    /// Tool calls.
    ToolCalls,
    /// Tokens (input plus output).
    Tokens,
    /// Wall time, counted in milliseconds.
    WallTime,
    /// Money, in nano-dollars (see [`Cost`]).
    Cost,
}

impl BudgetResource {
    /// A short, stable, snake-case name, for logs and metrics.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::ModelCalls => "model_calls",
            Self::ToolCalls => "tool_calls",
            Self::Tokens => "tokens",
            Self::WallTime => "wall_time",
            Self::Cost => "cost",
        }
    }

    fn unit(self) -> &'static str {
        match self {
            Self::ModelCalls => "model calls",
            Self::ToolCalls => "tool calls",
            Self::Tokens => "tokens",
            Self::WallTime => "ms of wall time",
            Self::Cost => "nano-USD",
        }
    }
}

impl fmt::Display for BudgetResource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A budget ran out: which resource, its limit, and how much was asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct BudgetExceeded {
    /// What ran out.
    pub resource: BudgetResource,
    /// The limit (milliseconds for [`BudgetResource::WallTime`], nano-dollars for
    /// [`BudgetResource::Cost`]).
    pub limit: u64,
    /// How much was used or asked for when it ran out.
    pub used: u64,
}

impl fmt::Display for BudgetExceeded {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.resource == BudgetResource::Cost {
            return write!(
                f,
                "the invocation's budget of {} is used up ({} spent)",
                Cost::from_nano_usd(self.limit),
                Cost::from_nano_usd(self.used)
            );
        }
        write!(
            f,
            "the invocation's budget of {} {} is used up ({} needed)",
            self.limit,
            self.resource.unit(),
            self.used
        )
    }
}

impl std::error::Error for BudgetExceeded {}

/// What an invocation tree has spent so far; see [`SharedBudget::usage`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct BudgetUsage {
    /// Model calls made.
    pub model_calls: u64,
    /// Tool calls run.
    pub tool_calls: u64,
    /// Tokens reported, input plus output.
    pub tokens: u64,
    /// Time since the tree started.
    pub elapsed: Duration,
    /// What the model calls cost, where their price is known.
    pub cost: Cost,
}

struct Inner {
    limits: Budget,
    started: Instant,
    model_calls: AtomicU64,
    tool_calls: AtomicU64,
    tokens: AtomicU64,
    cost: AtomicU64,
    exceeded: Mutex<Option<BudgetExceeded>>,
}

/// The tally of one invocation tree against its [`Budget`]: cheap to clone, and clones share
/// it. The top invocation gets one from its agent's budget; [`Invocation::child`] passes it on
/// to agents called as tools.
///
/// [`Invocation::child`]: crate::Invocation::child
///
/// ```
/// use tinyagent::{Budget, budget::{BudgetResource, SharedBudget}};
///
/// let budget = SharedBudget::new(Budget::UNLIMITED.max_model_calls(2));
/// let nested = budget.clone();
/// budget.charge_model_call().unwrap();
/// nested.charge_model_call().unwrap();
/// let err = budget.charge_model_call().unwrap_err();
/// assert_eq!(err.resource, BudgetResource::ModelCalls);
/// assert_eq!((err.limit, err.used), (2, 3));
/// assert_eq!(nested.exceeded(), Some(err));
/// ```
#[derive(Clone)]
pub struct SharedBudget(Arc<Inner>);

impl fmt::Debug for SharedBudget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SharedBudget")
            .field("limits", &self.0.limits)
            .field("usage", &self.usage())
            .finish()
    }
}

impl SharedBudget {
    /// A fresh tally against `limits`, its clock started now.
    pub fn new(limits: Budget) -> Self {
        Self(Arc::new(Inner {
            limits,
            started: Instant::now(),
            model_calls: AtomicU64::new(0),
            tool_calls: AtomicU64::new(0),
            tokens: AtomicU64::new(0),
            cost: AtomicU64::new(0),
            exceeded: Mutex::new(None),
        }))
    }

    /// The limits.
    pub fn limits(&self) -> Budget {
        self.0.limits
    }

    /// What was spent so far.
    pub fn usage(&self) -> BudgetUsage {
        BudgetUsage {
            model_calls: self.0.model_calls.load(Ordering::Relaxed),
            tool_calls: self.0.tool_calls.load(Ordering::Relaxed),
            tokens: self.0.tokens.load(Ordering::Relaxed),
            elapsed: self.0.started.elapsed(),
            cost: Cost::from_nano_usd(self.0.cost.load(Ordering::Relaxed)),
        }
    }

    /// When the wall-time budget ends, if it has one.
    pub fn deadline(&self) -> Option<Instant> {
        self.0
            .limits
            .max_duration
            .and_then(|d| self.0.started.checked_add(d))
    }

    /// The first limit that ran out, once one has.
    pub fn exceeded(&self) -> Option<BudgetExceeded> {
        *self
            .0
            .exceeded
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Records that a limit ran out (the first record is kept) and returns it.
    pub fn exceed(&self, exceeded: BudgetExceeded) -> BudgetExceeded {
        let mut slot = self
            .0
            .exceeded
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        *slot.get_or_insert(exceeded)
    }

    /// Checks the limits that do not count calls: time and tokens (and whether anything ran
    /// out before).
    pub fn check(&self) -> Result<(), BudgetExceeded> {
        if let Some(exceeded) = self.exceeded() {
            return Err(exceeded);
        }
        if let Some(max) = self.0.limits.max_duration {
            let elapsed = self.0.started.elapsed();
            if elapsed >= max {
                return Err(self.wall_time_exceeded());
            }
        }
        if let Some(max) = self.0.limits.max_cost {
            let used = self.0.cost.load(Ordering::Relaxed);
            if used >= max.nano_usd() {
                return Err(self.exceed(BudgetExceeded {
                    resource: BudgetResource::Cost,
                    limit: max.nano_usd(),
                    used,
                }));
            }
        }
        if let Some(max) = self.0.limits.max_tokens {
            let used = self.0.tokens.load(Ordering::Relaxed);
            if used >= max {
                return Err(self.exceed(BudgetExceeded {
                    resource: BudgetResource::Tokens,
                    limit: max,
                    used,
                }));
            }
        }
        Ok(())
    }

    /// The wall-time budget, recorded as run out.
    pub fn wall_time_exceeded(&self) -> BudgetExceeded {
        let max = self.0.limits.max_duration.unwrap_or_default();
        let ms = |d: Duration| u64::try_from(d.as_millis()).unwrap_or(u64::MAX);
        self.exceed(BudgetExceeded {
            resource: BudgetResource::WallTime,
            limit: ms(max),
            used: ms(self.0.started.elapsed()),
        })
    }

    fn charge(
        &self,
        counter: &AtomicU64,
        limit: Option<u64>,
        resource: BudgetResource,
    ) -> Result<(), BudgetExceeded> {
        self.check()?;
        let used = counter.fetch_add(1, Ordering::Relaxed).saturating_add(1);
        match limit {
            Some(limit) if used > limit => Err(self.exceed(BudgetExceeded {
                resource,
                limit,
                used,
            })),
            _ => Ok(()),
        }
    }

    /// Counts one model call, or fails when the budget is spent.
    pub fn charge_model_call(&self) -> Result<(), BudgetExceeded> {
        self.charge(
            &self.0.model_calls,
            self.0.limits.max_model_calls,
            BudgetResource::ModelCalls,
        )
    }

    /// Counts one tool call, or fails when the budget is spent.
    pub fn charge_tool_call(&self) -> Result<(), BudgetExceeded> {
        self.charge(
            &self.0.tool_calls,
            self.0.limits.max_tool_calls,
            BudgetResource::ToolCalls,
        )
    }

    /// Adds the tokens a model call reported; the limit is enforced by the next
    /// [`check`](Self::check) or charge.
    pub fn add_tokens(&self, tokens: u64) {
        self.0.tokens.fetch_add(tokens, Ordering::Relaxed);
    }

    /// Counts what a paused run had spent before it was resumed: its model calls, tokens and
    /// cost (limits are enforced by the next charge).
    #[doc(hidden)]
    pub fn restore(&self, model_calls: usize, usage: crate::model::Usage) {
        self.0
            .model_calls
            .fetch_add(model_calls as u64, Ordering::Relaxed);
        self.add_tokens(usage.total_tokens().unwrap_or(0));
        if let Some(cost) = usage.cost {
            self.add_cost(cost);
        }
    }

    /// Adds what a model call cost. Like tokens, a cost is known only once the call is over:
    /// the next [`charge_model_call`](Self::charge_model_call) (or [`check`](Self::check))
    /// fails once the tree's costs reach [`Budget::max_cost`].
    pub fn add_cost(&self, cost: Cost) {
        self.0.cost.fetch_add(cost.nano_usd(), Ordering::Relaxed);
    }
}
