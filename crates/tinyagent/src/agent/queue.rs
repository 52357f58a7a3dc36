//! [`Queue`]: the events a run produced and its consumer has not taken yet.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use super::Event;
use super::journal::Recorder;
use crate::context::StoreError;

/// Events produced by the driver and not yet taken by the consumer.
///
/// The driver only runs while the consumer polls the stream, and the stream looks at the queue
/// right after polling the driver, so no waker is needed and the queue never grows beyond what
/// one poll of the driver produces.
#[derive(Clone, Default)]
pub(super) struct Queue(Arc<Mutex<VecDeque<Event>>>, Arc<OnceLock<Recorder>>);

impl Queue {
    /// Makes the run's journal record the events [`record`](Self::record) is given.
    pub(super) fn keep_journal(&self, recorder: Recorder) {
        let _ = self.1.set(recorder);
    }

    /// The run's journal, if it keeps one.
    pub(super) fn journal(&self) -> Option<&Recorder> {
        self.1.get()
    }

    /// Records `event` in the run's journal (written before the run goes on), then queues it;
    /// the store's error when the journal could not be written.
    pub(super) async fn record(&self, event: Event) -> Result<(), StoreError> {
        if self.record_call(event).await {
            return Ok(());
        }
        match self.journal().and_then(Recorder::take_failure) {
            Some(err) => Err(err),
            None => Ok(()),
        }
    }

    /// [`record`](Self::record) for a tool call's start or end: whether the journal holds (its
    /// error is kept for the step to end the run with).
    pub(super) async fn record_call(&self, event: Event) -> bool {
        let written = match self.journal() {
            Some(journal) => journal.record(&event).await,
            None => true,
        };
        self.push(event);
        written
    }

    pub(super) fn push(&self, event: Event) {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push_back(event);
    }

    pub(super) fn pop(&self) -> Option<Event> {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .pop_front()
    }
}
