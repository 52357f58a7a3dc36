//! [`Queue`]: the events a run produced and its consumer has not taken yet.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, PoisonError};

use super::Event;

/// Events produced by the driver and not yet taken by the consumer.
///
/// The driver only runs while the consumer polls the stream, and the stream looks at the queue
/// right after polling the driver, so no waker is needed and the queue never grows beyond what
/// one poll of the driver produces.
#[derive(Clone, Default)]
pub(super) struct Queue(Arc<Mutex<VecDeque<Event>>>);

impl Queue {
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
