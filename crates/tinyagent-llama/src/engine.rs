//! The blocking part: one generation on a fresh llama.cpp context.

use std::num::NonZeroU32;
use std::time::{Duration, Instant};

use llama_cpp_2::context::LlamaContext;
use llama_cpp_2::context::params::LlamaContextParams;
use llama_cpp_2::llama_batch::LlamaBatch;
use llama_cpp_2::model::LlamaModel as RawModel;
use llama_cpp_2::sampling::LlamaSampler;
use llama_cpp_2::token::LlamaToken;
use llama_cpp_2::token::data::LlamaTokenData;
use llama_cpp_2::token::data_array::LlamaTokenDataArray;
use tinyagent::{ModelError, ModelErrorKind};

use crate::backend;

/// One generation's settings.
#[derive(Debug, Clone)]
pub(crate) struct Job {
    pub prompt: String,
    /// A GBNF grammar the output must match, if any.
    pub grammar: Option<String>,
    pub max_tokens: u32,
    pub temperature: f32,
    pub seed: u32,
    pub threads: u32,
    pub context_size: u32,
    /// Stop as soon as the output is one complete JSON value.
    pub stop_at_json_end: bool,
}

/// Why generation stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Stop {
    /// End of turn, or the end of the JSON value.
    Done,
    /// The token limit.
    Length,
    /// The caller went away.
    Cancelled,
}

/// What one generation produced, with its speed.
#[derive(Debug, Clone)]
pub(crate) struct Generated {
    pub text: String,
    pub stop: Stop,
    pub prompt_tokens: usize,
    pub output_tokens: usize,
    pub prompt_time: Duration,
    pub generation_time: Duration,
}

impl Generated {
    /// Prompt tokens read per second.
    pub fn prompt_tokens_per_second(&self) -> f64 {
        per_second(self.prompt_tokens, self.prompt_time)
    }

    /// Tokens generated per second.
    pub fn generation_tokens_per_second(&self) -> f64 {
        per_second(self.output_tokens, self.generation_time)
    }
}

fn per_second(tokens: usize, time: Duration) -> f64 {
    let secs = time.as_secs_f64();
    if secs > 0.0 {
        tokens as f64 / secs
    } else {
        0.0
    }
}

fn other(message: String) -> ModelError {
    ModelError::other(message).retryable(false)
}

/// Runs `job` on `model`. `on_text` gets each piece of decoded text as it is generated and
/// returns `false` to stop (the caller went away).
pub(crate) fn generate(
    model: &RawModel,
    job: &Job,
    mut on_text: impl FnMut(&str) -> bool,
) -> Result<Generated, ModelError> {
    let backend = backend()?;
    let vocab = model.vocab();
    let n_ctx = job.context_size.min(model.n_ctx_train().max(64)).max(64);
    let tokens = vocab.tokenize(job.prompt.as_bytes(), true, true);
    let prompt_tokens = tokens.len();
    if prompt_tokens == 0 {
        return Err(ModelError::new(
            ModelErrorKind::InvalidRequest,
            "the prompt is empty",
        ));
    }
    if prompt_tokens + 1 >= n_ctx as usize {
        return Err(ModelError::new(
            ModelErrorKind::ContextLengthExceeded,
            format!(
                "the prompt has {prompt_tokens} tokens, more than the context window of {n_ctx} \
                 tokens allows (raise LlamaConfig::context_size or shorten the history)"
            ),
        ));
    }
    let room = n_ctx as usize - prompt_tokens;
    let max_tokens = (job.max_tokens as usize).min(room).max(1);

    let threads = i32::try_from(job.threads.max(1)).unwrap_or(1);
    let params = LlamaContextParams::default()
        .with_n_ctx(NonZeroU32::new(n_ctx))
        .with_n_batch(n_ctx)
        .with_n_ubatch(n_ctx.min(512))
        .with_n_threads(threads)
        .with_n_threads_batch(threads);
    let mut ctx = model
        .new_context(backend, params)
        .map_err(|e| other(format!("llama.cpp could not create a context: {e}")))?;

    let mut sampler = Sampler::new(model, job)?;

    // Read the prompt.
    let started = Instant::now();
    let mut batch = LlamaBatch::new(n_ctx as usize, 1);
    let last = prompt_tokens - 1;
    for (i, token) in tokens.iter().enumerate() {
        batch
            .add(
                *token,
                i32::try_from(i).unwrap_or(i32::MAX),
                &[0],
                i == last,
            )
            .map_err(|e| other(format!("cannot queue the prompt: {e}")))?;
    }
    ctx.decode(&mut batch)
        .map_err(|e| other(format!("llama.cpp could not read the prompt: {e}")))?;
    let prompt_time = started.elapsed();

    // Generate.
    let started = Instant::now();
    let mut text = String::new();
    let mut pending: Vec<u8> = Vec::new();
    let mut piece = Vec::new();
    let mut logits_index = i32::try_from(last).unwrap_or(i32::MAX);
    let mut pos = i32::try_from(prompt_tokens).unwrap_or(i32::MAX);
    let mut output_tokens = 0;
    let mut stop = Stop::Length;
    while output_tokens < max_tokens {
        let token = sampler.pick(model, &ctx, logits_index)?;
        if vocab.is_eog(token) || vocab.is_control(token) {
            stop = Stop::Done;
            break;
        }
        output_tokens += 1;
        piece.clear();
        vocab.token_to_piece_into(token, &mut piece, false, None);
        pending.extend_from_slice(&piece);
        let delta = take_utf8(&mut pending);
        text.push_str(&delta);
        if !on_text(&delta) {
            stop = Stop::Cancelled;
            break;
        }
        if job.stop_at_json_end && text.trim_end().ends_with('}') && is_json(&text) {
            stop = Stop::Done;
            break;
        }
        if output_tokens == max_tokens {
            break;
        }
        batch.clear();
        batch
            .add(token, pos, &[0], true)
            .map_err(|e| other(format!("cannot queue a token: {e}")))?;
        pos += 1;
        logits_index = 0;
        decode(&mut ctx, &mut batch)?;
    }
    if !pending.is_empty() {
        let rest = String::from_utf8_lossy(&pending).into_owned();
        text.push_str(&rest);
        on_text(&rest);
    }
    Ok(Generated {
        text,
        stop,
        prompt_tokens,
        output_tokens,
        prompt_time,
        generation_time: started.elapsed(),
    })
}

fn decode(ctx: &mut LlamaContext<'_>, batch: &mut LlamaBatch<'_>) -> Result<(), ModelError> {
    ctx.decode(batch)
        .map_err(|e| other(format!("llama.cpp could not decode: {e}")))
}

fn is_json(text: &str) -> bool {
    serde_json::from_str::<serde_json::Value>(text).is_ok()
}

/// Takes the longest valid UTF-8 prefix out of `pending`; an incomplete character at the end
/// waits for the next token, invalid bytes become U+FFFD.
fn take_utf8(pending: &mut Vec<u8>) -> String {
    let mut out = String::new();
    loop {
        match std::str::from_utf8(pending) {
            Ok(s) => {
                out.push_str(s);
                pending.clear();
                return out;
            }
            Err(e) => {
                let valid = e.valid_up_to();
                // The valid part is valid UTF-8 by construction.
                out.push_str(&String::from_utf8_lossy(&pending[..valid]));
                match e.error_len() {
                    // Invalid bytes: give them up now and go on.
                    Some(len) => {
                        out.push(char::REPLACEMENT_CHARACTER);
                        pending.drain(..valid + len);
                    }
                    // An incomplete character at the end: keep it for the next token.
                    None => {
                        pending.drain(..valid);
                        return out;
                    }
                }
            }
        }
    }
}

/// Token choice: greedy or temperature sampling, optionally under a grammar.
///
/// With a grammar, the unconstrained choice is checked against the grammar first and taken if
/// it is allowed (llama.cpp's own shortcut); only when it is not is the whole vocabulary masked.
/// The grammar accepts each chosen token exactly once.
struct Sampler {
    grammar: Option<LlamaSampler>,
    random: Option<LlamaSampler>,
    n_vocab: usize,
}

impl Sampler {
    fn new(model: &RawModel, job: &Job) -> Result<Self, ModelError> {
        let grammar = match &job.grammar {
            Some(g) => Some(LlamaSampler::grammar(model, g, "root").map_err(|e| {
                other(format!(
                    "llama.cpp rejected the output grammar built from the tools' schemas: {e}"
                ))
            })?),
            None => None,
        };
        let random = (job.temperature > 0.0).then(|| {
            LlamaSampler::chain_simple([
                LlamaSampler::temp(job.temperature),
                LlamaSampler::dist(job.seed),
            ])
        });
        Ok(Self {
            grammar,
            random,
            n_vocab: usize::try_from(model.n_vocab()).unwrap_or(0),
        })
    }

    fn pick(
        &mut self,
        model: &RawModel,
        ctx: &LlamaContext<'_>,
        index: i32,
    ) -> Result<LlamaToken, ModelError> {
        let logits = ctx.get_logits_ith(index);
        let logits = &logits[..self.n_vocab.min(logits.len())];
        let first = match &mut self.random {
            None => argmax(logits.iter().copied().enumerate()),
            Some(random) => {
                let mut all = full_array(logits);
                all.apply_sampler(random);
                all.selected_token().map(|t| t.0 as usize)
            }
        }
        .ok_or_else(|| other("the model produced no usable logits".into()))?;
        let first = LlamaToken(i32::try_from(first).unwrap_or(0));
        let Some(grammar) = &mut self.grammar else {
            return Ok(first);
        };
        let logit = logits.get(first.0 as usize).copied().unwrap_or(0.0);
        let mut one = LlamaTokenDataArray::new(vec![LlamaTokenData::new(first, logit, 0.0)], false);
        one.apply_sampler(grammar);
        let token = if one.data.first().is_some_and(|d| d.logit().is_finite()) {
            first
        } else {
            let mut all = full_array(logits);
            all.apply_sampler(grammar);
            let chosen = match &mut self.random {
                None => argmax(all.data.iter().map(|d| (d.id().0 as usize, d.logit()))),
                Some(random) => {
                    all.apply_sampler(random);
                    all.selected_token().map(|t| t.0 as usize)
                }
            };
            let chosen =
                chosen.ok_or_else(|| other("the output grammar allows no next token".into()))?;
            LlamaToken(i32::try_from(chosen).unwrap_or(0))
        };
        // End-of-generation tokens end the loop and are never fed to the grammar.
        if !model.vocab().is_eog(token) {
            grammar
                .try_accept(token)
                .map_err(|e| other(format!("the output grammar refused token {token}: {e}")))?;
        }
        Ok(token)
    }
}

fn full_array(logits: &[f32]) -> LlamaTokenDataArray {
    LlamaTokenDataArray::new(
        logits
            .iter()
            .enumerate()
            .map(|(i, &l)| LlamaTokenData::new(LlamaToken(i32::try_from(i).unwrap_or(0)), l, 0.0))
            .collect(),
        false,
    )
}

/// The index of the largest finite value.
fn argmax(values: impl Iterator<Item = (usize, f32)>) -> Option<usize> {
    values
        .filter(|(_, v)| v.is_finite())
        .fold(None, |best: Option<(usize, f32)>, (i, v)| match best {
            Some((_, b)) if b >= v => best,
            _ => Some((i, v)),
        })
        .map(|(i, _)| i)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utf8_split_across_tokens_waits_for_the_rest() {
        let bytes = "北京".as_bytes();
        let mut pending = bytes[..2].to_vec();
        assert_eq!(take_utf8(&mut pending), "");
        pending.extend_from_slice(&bytes[2..4]);
        assert_eq!(take_utf8(&mut pending), "北");
        pending.extend_from_slice(&bytes[4..]);
        assert_eq!(take_utf8(&mut pending), "京");
        let mut bad = vec![b'a', 0xff, b'b'];
        assert_eq!(take_utf8(&mut bad), "a\u{fffd}b");
    }

    #[test]
    fn argmax_skips_masked_tokens() {
        let v = [
            (0, 1.0),
            (1, f32::INFINITY),
            (2, 3.0),
            (3, f32::NEG_INFINITY),
        ];
        assert_eq!(argmax(v.into_iter()), Some(2));
        assert_eq!(argmax([(0, f32::NEG_INFINITY)].into_iter()), None);
    }
}
