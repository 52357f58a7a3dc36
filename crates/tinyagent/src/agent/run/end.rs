//! How a run ends without an error: it finishes with the model's answer, or pauses while calls
//! wait for a decision.

use super::state::Run;
use crate::agent::Event;
use crate::agent::pause::{PausedRun, PendingCall};
use crate::message::Message;

impl Run<'_> {
    /// Finishes the run at step `step` with the model's answer: the turn joins the session's
    /// history.
    pub(super) fn finish(mut self, step: usize, message: Message) {
        let answer = message.text();
        self.req.messages.push(message);
        self.session
            .append(self.req.messages.drain(self.first_new..));
        self.out.push(Event::Finished {
            answer,
            usage: self.total,
            steps: step,
        });
    }

    /// Pauses the run: the paused run is kept in the session's state, for a resume.
    pub(super) fn pause(&self, paused: &PausedRun) {
        paused.store_in(&self.session);
        self.still_paused(paused.pending(), paused.steps);
    }

    /// Reports a run that stays paused after `steps` steps, `pending` calls still waiting.
    pub(super) fn still_paused(&self, pending: Vec<PendingCall>, steps: usize) {
        self.out.push(Event::Paused {
            pending,
            usage: self.total,
            steps,
        });
    }
}
