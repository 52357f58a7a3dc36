//! [`Metered`]: an agent as one key runs it — within what the key has left of its money, each
//! run's cost taken from the key as it is spent.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use futures::Stream;
use futures::stream::{self, BoxStream, StreamExt};
use tinyagent::agent::{PausedRun, RunOptions};
use tinyagent::budget::{BudgetResource, SharedBudget};
use tinyagent::model::Cost;
use tinyagent::{Agent, AgentError, Event, Invocation};

use crate::cost_limit::Spending;

/// An agent run for one key. With a money limit per key, each run draws from its agent's
/// budget ([`Agent::budget`]) with its `max_cost` at most what the key has left (so it stops
/// before a model call once it has spent that), and every model call's cost is taken from the key as it is
/// reported (the whole tree's, agents called as tools included, when the run ends). Without a
/// limit, the agent's own budget applies and nothing is counted. A run may also be made inside
/// a span naming the key (for a run away from its request: an A2A task), so that the cost
/// metric counts it for the key.
pub(crate) struct Metered {
    inner: Arc<dyn Agent>,
    spending: Arc<Spending>,
    key: Arc<str>,
    span: Option<tracing::Span>,
}

impl Metered {
    pub(crate) fn new(inner: Arc<dyn Agent>, spending: Arc<Spending>, key: Arc<str>) -> Self {
        Self {
            inner,
            spending,
            key,
            span: None,
        }
    }

    /// Runs inside `span`.
    pub(crate) fn in_span(mut self, span: tracing::Span) -> Self {
        self.span = Some(span);
        self
    }

    /// The error of a run the key cannot pay for: the budget error of a run that spent
    /// everything it had (the server answers it as the key's `cost_limit_exceeded`).
    fn no_money(&self) -> AgentError {
        AgentError::BudgetExhausted {
            agent: self.inner.name().to_owned(),
            resource: BudgetResource::Cost,
            limit: 0,
            used: 0,
        }
    }
}

impl Agent for Metered {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn description(&self) -> &str {
        self.inner.description()
    }

    fn check_options(&self, options: &RunOptions) -> Result<(), AgentError> {
        self.inner.check_options(options)
    }

    fn run(&self, inv: Invocation) -> BoxStream<'static, Result<Event, AgentError>> {
        let _entered = self.span.as_ref().map(tracing::Span::enter);
        let left = match self.spending.left(&self.key) {
            Err(_wait) => {
                let err = self.no_money();
                return stream::once(async move { Err(err) }).boxed();
            }
            Ok(left) => left,
        };
        let Some(left) = left else {
            let events = self.inner.run(inv);
            return match &self.span {
                Some(span) => InSpan {
                    inner: events,
                    span: span.clone(),
                }
                .boxed(),
                None => events,
            };
        };
        // A resumed run's budget starts with what the run spent before it paused, which the
        // key has paid for already.
        let paid = inv
            .decisions()
            .and_then(|_| PausedRun::from_session(inv.session()))
            .and_then(Result::ok)
            .and_then(|paused| paused.usage.cost)
            .unwrap_or(Cost::ZERO);
        // The agent's own limits, with its money capped at what the key has left.
        let own = self.inner.budget();
        let allowed = own.max_cost.map_or(left + paid, |max| max.min(left + paid));
        let budget = SharedBudget::new(own.max_cost(allowed));
        let inv = inv.with_budget(budget.clone());
        let events = Metering {
            inner: self.inner.run(inv),
            charged: Charged {
                spending: self.spending.clone(),
                key: self.key.clone(),
                budget,
                paid,
                taken: Cost::ZERO,
            },
        };
        match &self.span {
            Some(span) => InSpan {
                inner: events.boxed(),
                span: span.clone(),
            }
            .boxed(),
            None => events.boxed(),
        }
    }
}

/// A run's charges: what it has taken from its key so far; the rest of its tree's cost is
/// taken when the run ends (or is dropped).
struct Charged {
    spending: Arc<Spending>,
    key: Arc<str>,
    budget: SharedBudget,
    /// What the run had spent before it paused (already paid).
    paid: Cost,
    taken: Cost,
}

impl Drop for Charged {
    fn drop(&mut self) {
        let spent = self.budget.usage().cost.nano_usd();
        let owed = spent.saturating_sub(self.paid.nano_usd() + self.taken.nano_usd());
        self.spending.spend(&self.key, Cost::from_nano_usd(owed));
    }
}

/// The events of a metered run: each model step's cost is taken from the key as it is
/// reported, so that the key's other runs see what is left.
struct Metering {
    inner: BoxStream<'static, Result<Event, AgentError>>,
    charged: Charged,
}

impl Stream for Metering {
    type Item = Result<Event, AgentError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let polled = self.inner.as_mut().poll_next(cx);
        if let Poll::Ready(Some(Ok(Event::Usage { usage, .. }))) = &polled {
            if let Some(cost) = usage.cost {
                let charged = &mut self.charged;
                charged.taken += cost;
                charged.spending.spend(&charged.key, cost);
            }
        }
        polled
    }
}

/// A stream polled inside a span.
struct InSpan {
    inner: BoxStream<'static, Result<Event, AgentError>>,
    span: tracing::Span,
}

impl Stream for InSpan {
    type Item = Result<Event, AgentError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let span = self.span.clone();
        let _entered = span.enter();
        self.inner.as_mut().poll_next(cx)
    }
}
