//! The model's check of a chosen call (see [`LlamaConfig::confirm_calls`]).
//!
//! [`LlamaConfig::confirm_calls`]: crate::LlamaConfig::confirm_calls

use tinyagent::model::ToolDefinition;
use tinyagent::{ModelError, ModelRequest};

use super::LlamaModel;
use crate::engine::Stop;
use crate::prompt::{self, CONFIRM_NO, CONFIRM_YES};
use crate::speed::Speed;

/// How many nats "no" must lead "yes" by for a call to be given up, chosen on the tuning part
/// of `eval/tools.jsonl`: requests the tool serves lead "no" by at most 0.4 there (an umbrella
/// in Seattle, rain in 昆明), a hotel, a restaurant, a museum or a ticket sent to the weather
/// tool by 0.74 to 1.3. Reminders sent to the clock lead by 0.05 to 0.25, as a question about
/// lunchtime in Singapore does: they are not told apart.
pub(super) const CONFIRM_MARGIN: f64 = 0.5;

impl LlamaModel {
    /// Whether the model, asked whether the call to `tool` with `arguments` (JSON text) serves
    /// the last user message of `req` among the offered `tools`, says yes; and what asking
    /// cost.
    pub(super) fn confirms(
        &self,
        req: &ModelRequest,
        tools: &[ToolDefinition],
        tool: &ToolDefinition,
        arguments: &str,
    ) -> Result<(bool, Speed), ModelError> {
        let chat = prompt::confirm_chat(req, tools, tool, arguments);
        let job = self.job(self.render(&chat)?, None, 1, 0.0, false);
        let (yes, no, stats) = {
            let _guard = self.lock();
            let mut decoder = self.decoder(&job)?;
            let mut score = |words: &[&str]| {
                let candidates: Vec<_> = words.iter().map(|w| decoder.tokenize(w)).collect();
                decoder.score(&candidates).map(|s| log_sum_exp(&s))
            };
            let yes = score(&CONFIRM_YES)?;
            let no = score(&CONFIRM_NO)?;
            (yes, no, decoder.stats)
        };
        self.log(&stats, Stop::Done);
        tracing::debug!(tool = %tool.name, arguments, yes, no, lead = no - yes, "call check");
        Ok((no - yes <= CONFIRM_MARGIN, stats))
    }
}

/// `ln(Σ e^x)` of `scores`, `-inf` for none.
fn log_sum_exp(scores: &[f64]) -> f64 {
    let max = scores.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if max == f64::NEG_INFINITY {
        return max;
    }
    max + scores.iter().map(|s| (s - max).exp()).sum::<f64>().ln()
}

#[cfg(test)]
mod tests {
    use super::log_sum_exp;

    #[test]
    fn probabilities_of_alternatives_add_up() {
        let half = 0.5f64.ln();
        assert!((log_sum_exp(&[half, half])).abs() < 1e-12);
        assert_eq!(log_sum_exp(&[]), f64::NEG_INFINITY);
        assert_eq!(log_sum_exp(&[f64::NEG_INFINITY, -1.0]), -1.0);
    }
}
