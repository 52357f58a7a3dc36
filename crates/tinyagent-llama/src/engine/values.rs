//! The values a grammar allows where the model hesitates: what a constrained argument is
//! chosen among.

use std::collections::VecDeque;

use llama_cpp_2::token::LlamaToken;
use tinyagent::ModelError;

use super::logits::{full_array, is_json, log_softmax, take_utf8};
use super::{Decoder, Job, Sampler};

impl Decoder<'_> {
    /// The values `grammar` allows here as the model would write them (each a complete JSON
    /// value, such as a string with its quotes): its own, greedy one first, then the ones it
    /// writes when, at a step of its own where it hesitates (one of the two next allowed
    /// tokens at least `ratio` times as likely as its choice), it takes that token instead.
    /// At most `most` values of at most `job.max_tokens` tokens each; the decoder is back
    /// where it was.
    pub fn likely_values(
        &mut self,
        job: &Job,
        grammar: &str,
        most: usize,
        ratio: f64,
    ) -> Result<Vec<String>, ModelError> {
        let start = self.mark();
        let mut values: Vec<String> = Vec::new();
        let mut branches: VecDeque<Vec<LlamaToken>> = VecDeque::from([Vec::new()]);
        let mut greedy = true;
        while let Some(forced) = branches.pop_front() {
            if values.len() >= most {
                break;
            }
            self.rewind(start.clone())?;
            let mut sampler = Sampler::new(self.model, Some(grammar), job)?;
            let mut path: Vec<LlamaToken> = Vec::new();
            let mut text = String::new();
            // Bytes of a character split across tokens, until it is whole.
            let mut pending: Vec<u8> = Vec::new();
            let mut piece: Vec<u8> = Vec::new();
            let mut complete = false;
            while path.len() < job.max_tokens as usize {
                let ranked = sampler.allowed(&self.last_logits, 3);
                let Some(&(chosen, best)) = ranked.first() else {
                    break;
                };
                let token = match forced.get(path.len()) {
                    Some(&token) => token,
                    None => {
                        if greedy {
                            for &(other, score) in &ranked[1..] {
                                if score - best >= ratio.ln() {
                                    let mut branch = path.clone();
                                    branch.push(other);
                                    branches.push_back(branch);
                                }
                            }
                        }
                        chosen
                    }
                };
                if self.model.vocab().is_eog(token) || !sampler.accept(token) {
                    break;
                }
                path.push(token);
                piece.clear();
                self.model
                    .vocab()
                    .token_to_piece_into(token, &mut piece, false, None);
                pending.extend_from_slice(&piece);
                text.push_str(&take_utf8(&mut pending));
                if is_json(text.trim()) {
                    complete = true;
                    break;
                }
                self.feed_tokens(&[token])?;
            }
            greedy = false;
            let value = text.trim().to_owned();
            if complete && !values.contains(&value) {
                values.push(value);
            }
        }
        self.rewind(start)?;
        Ok(values)
    }
}

impl Sampler {
    /// The `k` likeliest tokens the grammar allows next, with their log-probabilities,
    /// likeliest first.
    fn allowed(&mut self, logits: &[f32], k: usize) -> Vec<(LlamaToken, f64)> {
        let logits = &logits[..self.n_vocab.min(logits.len())];
        let lp = log_softmax(logits);
        let mut all = full_array(logits);
        if let Some(grammar) = &mut self.grammar {
            all.apply_sampler(grammar);
        }
        let mut ranked: Vec<(LlamaToken, f64)> = all
            .data
            .iter()
            .filter(|d| d.logit().is_finite())
            .map(|d| {
                (
                    d.id(),
                    lp.get(d.id().0 as usize)
                        .copied()
                        .unwrap_or(f64::NEG_INFINITY),
                )
            })
            .collect();
        ranked.sort_by(|a, b| b.1.total_cmp(&a.1));
        ranked.truncate(k);
        ranked
    }

    /// Takes `token` as chosen; `false` when the grammar does not allow it.
    fn accept(&mut self, token: LlamaToken) -> bool {
        match &mut self.grammar {
            None => true,
            Some(grammar) => grammar.try_accept(token).is_ok(),
        }
    }
}
