//! What one invocation tree may spend, beyond the [`Budget`] itself: the [`SharedBudget`] every
//! agent of the tree draws from, what ran out, and the defaults.

#[doc(hidden)]
pub mod limits;
mod shared;

#[doc(hidden)]
pub use limits::Budget;
pub use limits::{
    DEFAULT_MAX_DURATION, DEFAULT_MAX_MODEL_CALLS, DEFAULT_MAX_TOKENS, DEFAULT_MAX_TOOL_CALLS,
};
pub use shared::{BudgetExceeded, BudgetResource, BudgetUsage, SharedBudget};
