//! Scoring candidate continuations: the log-probability of each, the tokens they all begin
//! with read once.

use llama_cpp_2::token::LlamaToken;
use tinyagent::ModelError;

use super::logits::log_softmax;
use super::{Decoder, other, position};

impl Decoder<'_> {
    /// The log-probability of each candidate continuation (the sum over its tokens), without
    /// changing what the context holds. Candidates that do not fit score `-inf`.
    ///
    /// The tokens all candidates begin with (`{"name": "` before each tool's name) are read
    /// once, and only what follows them per candidate.
    pub fn score(&mut self, candidates: &[Vec<LlamaToken>]) -> Result<Vec<f64>, ModelError> {
        let shared = shared_beginning(candidates);
        if shared == 0 || self.pos + shared + 1 >= self.n_ctx {
            return self.score_each(candidates);
        }
        let mark = self.mark();
        let result = self.read_shared(&candidates[0][..shared]).and_then(|lead| {
            let rests: Vec<Vec<LlamaToken>> =
                candidates.iter().map(|c| c[shared..].to_vec()).collect();
            let scores = self.score_each(&rests)?;
            Ok(scores.into_iter().map(|s| lead + s).collect())
        });
        self.rewind(mark)?;
        result
    }

    /// Reads `tokens` into the context and returns their log-probability.
    fn read_shared(&mut self, tokens: &[LlamaToken]) -> Result<f64, ModelError> {
        let mut total = logprob(&self.last_logits, tokens[0]);
        self.decode_scoring(tokens)?;
        for (i, token) in tokens.iter().enumerate().skip(1) {
            total += logprob(self.ctx.get_logits_ith(position(i - 1)), *token);
        }
        self.pos += tokens.len();
        self.last_logits.clear();
        self.last_logits
            .extend_from_slice(self.ctx.get_logits_ith(position(tokens.len() - 1)));
        Ok(total)
    }

    /// Reads `tokens` after the context's position in one batch, keeping the logits after each.
    fn decode_scoring(&mut self, tokens: &[LlamaToken]) -> Result<(), ModelError> {
        self.batch.clear();
        for (i, token) in tokens.iter().enumerate() {
            self.batch
                .add(*token, position(self.pos + i), &[0], true)
                .map_err(|e| other(format!("cannot queue a candidate: {e}")))?;
        }
        self.ctx
            .decode(&mut self.batch)
            .map_err(|e| other(format!("llama.cpp could not score a candidate: {e}")))
    }

    /// [`score`](Self::score) one candidate after the other.
    fn score_each(&mut self, candidates: &[Vec<LlamaToken>]) -> Result<Vec<f64>, ModelError> {
        let first = log_softmax(&self.last_logits);
        let mut scores = Vec::with_capacity(candidates.len());
        for tokens in candidates {
            let Some((head, rest)) = tokens.split_first() else {
                scores.push(f64::NEG_INFINITY);
                continue;
            };
            if self.pos + tokens.len() + 1 >= self.n_ctx {
                scores.push(f64::NEG_INFINITY);
                continue;
            }
            let mut total = first
                .get(head.0 as usize)
                .copied()
                .unwrap_or(f64::NEG_INFINITY);
            if !rest.is_empty() {
                self.decode_scoring(&tokens[..tokens.len() - 1])?;
                for (i, token) in rest.iter().enumerate() {
                    total += logprob(self.ctx.get_logits_ith(position(i)), *token);
                }
                self.ctx
                    .clear_kv_cache_seq(Some(0), u32::try_from(self.pos).ok(), None)
                    .map_err(|e| other(format!("llama.cpp could not rewind: {e}")))?;
            }
            scores.push(total);
        }
        Ok(scores)
    }
}

/// The log-probability of `token` after `logits` (`-inf` for a token out of range).
fn logprob(logits: &[f32], token: LlamaToken) -> f64 {
    log_softmax(logits)
        .get(token.0 as usize)
        .copied()
        .unwrap_or(f64::NEG_INFINITY)
}

/// How many leading tokens every candidate shares, leaving each at least one of its own; 0
/// for fewer than two candidates.
pub(super) fn shared_beginning(candidates: &[Vec<LlamaToken>]) -> usize {
    let Some((first, others)) = candidates.split_first() else {
        return 0;
    };
    if others.is_empty() {
        return 0;
    }
    let shortest = candidates.iter().map(Vec::len).min().unwrap_or(0);
    let mut shared = 0;
    while shared + 1 < shortest && others.iter().all(|c| c[shared] == first[shared]) {
        shared += 1;
    }
    shared
}
