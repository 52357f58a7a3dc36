//! The blank question calibration compares against: the same conversation with the user's
//! last message saying nothing, so that a value's score after it is what the value scores
//! for itself rather than for the question.

use tinyagent::{Message, ModelError, ModelRequest, Role};

use super::LlamaModel;
use crate::blank_scores;
use crate::engine::Decoder;
use crate::prompt::{self, Style};

impl LlamaModel {
    /// The rendered prompt of `req` with a question that says nothing.
    pub(super) fn blank_prompt(
        &self,
        req: &ModelRequest,
        style: Style,
    ) -> Result<String, ModelError> {
        let plan = prompt::plan(&blank_question(req), &self.config, style)?;
        self.render(&plan.chat)
    }

    /// A decoder over the blank question's `prompt` (see [`blank_prompt`](Self::blank_prompt)),
    /// with the call written so far (`prefix`, then `text`): what calibration compares against.
    pub(super) fn blank_decoder(
        &self,
        prompt: &str,
        prefix: &str,
        text: &str,
    ) -> Result<Decoder<'_>, ModelError> {
        let probe = self.job(prompt.to_owned(), None, 1, 0.0, false);
        let mut blank = self.decoder(&probe)?;
        blank.force(prefix)?;
        blank.force(text)?;
        Ok(blank)
    }

    /// The blank question's scores of `candidates` after `parts` (its rendered prompt, then
    /// the text forced after it): the kept ones (see [`crate::blank_scores`]), else those
    /// `compute` gives, then kept.
    pub(super) fn kept_blank_scores(
        &self,
        parts: &[&str],
        candidates: &[String],
        compute: impl FnOnce() -> Result<Vec<f64>, ModelError>,
    ) -> Result<Vec<f64>, ModelError> {
        let dir = self.saved_dir();
        let key = blank_scores::key(parts, candidates);
        let kept = &self.weights.blank_scores;
        if let Some(scores) = kept.get(dir.as_deref(), key, candidates.len()) {
            return Ok(scores);
        }
        let scores = compute()?;
        kept.put(dir.as_deref(), key, &scores);
        Ok(scores)
    }
}

/// `req` with the user's last message replaced by one that says nothing.
pub(super) fn blank_question(req: &ModelRequest) -> ModelRequest {
    let mut blank = req.clone();
    if let Some(last) = blank
        .messages
        .iter_mut()
        .rev()
        .find(|m| m.role == Role::User)
    {
        *last = Message::user("N/A");
    }
    blank
}
