//! The blank question calibration compares against: the same conversation with the user's
//! last message saying nothing, so that a value's score after it is what the value scores
//! for itself rather than for the question.

use tinyagent::{Message, ModelError, ModelRequest, Role};

use super::LlamaModel;
use crate::engine::Decoder;
use crate::prompt::{self, Style};

impl LlamaModel {
    /// A decoder over the prompt of a question that says nothing, with the call written so
    /// far (`prefix`, then `text`): what calibration compares against.
    pub(super) fn blank_decoder(
        &self,
        req: &ModelRequest,
        style: Style,
        prefix: &str,
        text: &str,
    ) -> Result<Decoder<'_>, ModelError> {
        let plan = prompt::plan(&blank_question(req), &self.config, style)?;
        let probe = self.job(self.render(&plan.chat)?, None, 1, 0.0, false);
        let mut blank = self.decoder(&probe)?;
        blank.force(prefix)?;
        blank.force(text)?;
        Ok(blank)
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
