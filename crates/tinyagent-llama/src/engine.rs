//! The blocking part: one generation on a llama.cpp context of its own, its prompt's
//! beginning restored from the prefix cache where an earlier prompt shared it.

use std::num::NonZeroU32;
use std::sync::Arc;
use std::time::Instant;

use llama_cpp_2::context::LlamaContext;
use llama_cpp_2::context::params::LlamaContextParams;
use llama_cpp_2::context::session::SeqState;
use llama_cpp_2::llama_batch::LlamaBatch;
use llama_cpp_2::model::LlamaModel as RawModel;
use llama_cpp_2::sampling::LlamaSampler;
use llama_cpp_2::token::LlamaToken;
use llama_cpp_2::token::data::LlamaTokenData;
use llama_cpp_2::token::data_array::LlamaTokenDataArray;
use tinyagent::{ModelError, model::ModelErrorKind};

use crate::backend;
use crate::prefix::PrefixCache;
use crate::saved_prompts::{MIN_READ_TOKENS, SavedPrompts};
use crate::speed::{Completion, Speed};

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
    /// Stop free text that starts repeating itself.
    pub repetition_guard: bool,
    /// Stop a grammar-constrained value that starts repeating itself (`"深圳, China, China,
    /// …"`), its text cut where the second copy of the loop begins.
    pub cut_loops: bool,
    /// The most bytes the prefix cache may keep (0: no cache).
    pub prompt_cache_bytes: usize,
    /// Where prompts read are saved on disk for later processes, if anywhere.
    pub saved_prompts: Option<Arc<SavedPrompts>>,
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
    /// The text began to repeat itself; the repetition was cut off. `first` is the byte
    /// offset in the returned text where the loop's first copy begins.
    Repetition {
        /// Where the loop's first copy begins in the returned text.
        first: usize,
    },
}

/// The context to allocate for a prompt of `prompt_tokens` and a reply of up to `max_tokens`
/// in a `window`: what they need with room to spare (scoring reads a few more tokens), at least
/// 2048 tokens, rounded up to 512, never more than the window. Allocating the whole window
/// would cost its full KV cache (hundreds of megabytes for a 32k context) on every call.
fn context_to_allocate(window: u32, prompt_tokens: usize, max_tokens: u32) -> u32 {
    let need = u32::try_from(prompt_tokens)
        .unwrap_or(u32::MAX)
        .saturating_add(max_tokens)
        .saturating_add(1024);
    need.div_ceil(512).saturating_mul(512).max(2048).min(window)
}

/// A failure of the engine or the model that retrying does not mend.
pub(crate) fn other(message: String) -> ModelError {
    ModelError::other(message).retryable(false)
}

/// The error of a generation the caller stopped waiting for.
pub(crate) fn cancelled() -> ModelError {
    ModelError::new(ModelErrorKind::Cancelled, "generation cancelled").retryable(false)
}

/// A point in a [`Decoder`]'s context (see [`Decoder::mark`]).
#[derive(Clone)]
pub(crate) struct Mark {
    pos: usize,
    logits: Vec<f32>,
}

/// A prompt read into a fresh llama.cpp context, ready to be continued: scored against
/// candidate continuations, extended with forced text, or continued by generation.
pub(crate) struct Decoder<'m> {
    model: &'m RawModel,
    ctx: LlamaContext<'m>,
    batch: LlamaBatch<'m>,
    n_ctx: usize,
    /// Tokens in the context (the next position).
    pos: usize,
    /// The logits after the last token fed (a copy: scoring overwrites the context's).
    last_logits: Vec<f32>,
    /// Tokens read and generated so far, and the time each took.
    pub stats: Speed,
}

impl<'m> Decoder<'m> {
    /// Creates a context for `job` and reads `job.prompt` into it: the part it shares with a
    /// prompt in `cache` is restored from there, the rest is read; the prompt is then kept in
    /// `cache` for the next one.
    pub fn new(model: &'m RawModel, cache: &PrefixCache, job: &Job) -> Result<Self, ModelError> {
        let backend = backend()?;
        let trained = model.n_ctx_train().max(64);
        // The window: the configured size (0: the model's own trained context), never more
        // than the model was trained on.
        let window = match job.context_size {
            0 => trained,
            n => n.clamp(64, trained),
        };
        let tokens = model.vocab().tokenize(job.prompt.as_bytes(), true, true);
        if tokens.is_empty() {
            return Err(ModelError::new(
                ModelErrorKind::InvalidRequest,
                "the prompt is empty",
            ));
        }
        if tokens.len() + 1 >= window as usize {
            let raise = if window < trained {
                format!(
                    "raise the context size, up to the model's {trained} tokens \
                     (--context-size on the command line, LlamaConfig::context_size in code), \
                     or shorten the history or the tool list"
                )
            } else {
                "the model cannot read more; shorten the history or the tool list".to_owned()
            };
            return Err(ModelError::new(
                ModelErrorKind::ContextLengthExceeded,
                format!(
                    "the prompt has {} tokens, more than the context window of {window} \
                     tokens allows ({raise})",
                    tokens.len()
                ),
            ));
        }
        let n_ctx = context_to_allocate(window, tokens.len(), job.max_tokens);
        let threads = i32::try_from(job.threads.max(1)).unwrap_or(1);
        let params = LlamaContextParams::default()
            .with_n_ctx(NonZeroU32::new(n_ctx))
            .with_n_batch(n_ctx)
            .with_n_ubatch(n_ctx.min(512))
            .with_n_threads(threads)
            .with_n_threads_batch(threads);
        let ctx = model
            .new_context(backend, params)
            .map_err(|e| other(format!("llama.cpp could not create a context: {e}")))?;
        let mut decoder = Self {
            model,
            ctx,
            batch: LlamaBatch::new(n_ctx as usize, 1),
            n_ctx: n_ctx as usize,
            pos: 0,
            last_logits: Vec::new(),
            stats: Speed::default(),
        };
        let started = Instant::now();
        let restored = decoder.restore_prefix(cache, job, &tokens)?;
        decoder.feed_tokens(&tokens[restored..])?;
        decoder.stats.prompt_tokens = tokens.len() - restored;
        decoder.stats.cached_tokens = restored;
        if let Some(saved) = job.saved_prompts.as_deref() {
            if tokens.len() - restored >= MIN_READ_TOKENS {
                if let Err(error) = saved.save(&decoder.ctx, &tokens) {
                    tracing::warn!(%error, "the prompt read is not kept on disk");
                }
            }
        }
        if job.prompt_cache_bytes > 0 && restored + 1 < tokens.len() {
            if let Ok(state) = decoder.ctx.state_seq_get(0, Default::default()) {
                cache.insert(tokens, state, job.prompt_cache_bytes);
            }
        }
        decoder.stats.prompt_time = started.elapsed();
        tracing::debug!(
            tokens = decoder.stats.prompt_tokens + restored,
            restored,
            ms = decoder.stats.prompt_time.as_secs_f64() * 1000.0,
            "prompt read"
        );
        Ok(decoder)
    }

    /// Restores the longest beginning of `tokens` that a prompt read before shares, from the
    /// prefix cache or, when a saved prompt shares more, from disk; returns how many tokens
    /// are restored.
    fn restore_prefix(
        &mut self,
        cache: &PrefixCache,
        job: &Job,
        tokens: &[LlamaToken],
    ) -> Result<usize, ModelError> {
        let in_memory = if job.prompt_cache_bytes > 0 {
            cache.longest_shared(tokens)
        } else {
            0
        };
        let on_disk = job.saved_prompts.as_deref().and_then(|saved| {
            let found = saved.longest(tokens)?;
            (found.shared > in_memory).then_some((saved, found))
        });
        if let Some((saved, found)) = on_disk {
            self.pos = saved.load(&mut self.ctx, &found);
            return Ok(self.pos);
        }
        if in_memory == 0 {
            return Ok(0);
        }
        cache
            .with_longest(tokens, |state, shared| self.restore(state, shared))
            .unwrap_or(Ok(0))
    }

    /// Loads a cached prompt's context and keeps its first `shared` tokens; returns how many
    /// were kept (0 when the state does not fit this context: the prompt is then read whole).
    fn restore(&mut self, state: &SeqState, shared: usize) -> Result<usize, ModelError> {
        if self.ctx.state_seq_set(state, 0).is_err() {
            self.ctx.clear_kv_cache();
            return Ok(0);
        }
        let kept = u32::try_from(shared).unwrap_or(u32::MAX);
        match self.ctx.clear_kv_cache_seq(Some(0), Some(kept), None) {
            Ok(true) => {
                self.pos = shared;
                Ok(shared)
            }
            _ => {
                self.ctx.clear_kv_cache();
                Ok(0)
            }
        }
    }

    /// The tokens of `text` (no BOS; special tokens such as `<|im_end|>` recognized).
    pub fn tokenize(&self, text: &str) -> Vec<LlamaToken> {
        self.model.vocab().tokenize(text.as_bytes(), false, true)
    }

    /// Reads `tokens` into the context; the logits after the last one are kept.
    fn feed_tokens(&mut self, tokens: &[LlamaToken]) -> Result<(), ModelError> {
        if tokens.is_empty() {
            return Ok(());
        }
        if self.pos + tokens.len() + 1 >= self.n_ctx {
            return Err(ModelError::new(
                ModelErrorKind::ContextLengthExceeded,
                format!(
                    "the reply does not fit the context window of {} tokens",
                    self.n_ctx
                ),
            ));
        }
        self.batch.clear();
        let last = tokens.len() - 1;
        for (i, token) in tokens.iter().enumerate() {
            self.batch
                .add(*token, position(self.pos + i), &[0], i == last)
                .map_err(|e| other(format!("cannot queue the prompt: {e}")))?;
        }
        self.ctx
            .decode(&mut self.batch)
            .map_err(|e| other(format!("llama.cpp could not read the prompt: {e}")))?;
        self.pos += tokens.len();
        self.last_logits.clear();
        self.last_logits
            .extend_from_slice(self.ctx.get_logits_ith(position(last)));
        Ok(())
    }

    /// Where the context is now, to come back to with [`rewind`](Self::rewind).
    pub fn mark(&self) -> Mark {
        Mark {
            pos: self.pos,
            logits: self.last_logits.clone(),
        }
    }

    /// Forgets everything read or written since `mark`.
    pub fn rewind(&mut self, mark: Mark) -> Result<(), ModelError> {
        if mark.pos < self.pos {
            self.ctx
                .clear_kv_cache_seq(Some(0), u32::try_from(mark.pos).ok(), None)
                .map_err(|e| other(format!("llama.cpp could not rewind: {e}")))?;
        }
        self.pos = mark.pos;
        self.last_logits = mark.logits;
        Ok(())
    }

    /// Appends `text` as if the model had written it.
    pub fn force(&mut self, text: &str) -> Result<(), ModelError> {
        let tokens = self.tokenize(text);
        self.feed_tokens(&tokens)
    }

    /// Generates at most `job.max_tokens` tokens under `job`'s grammar, if any. `on_text` gets
    /// each piece of decoded text and returns `false` to stop (the caller went away).
    pub fn generate(
        &mut self,
        job: &Job,
        grammar: Option<&str>,
        mut on_text: impl FnMut(&str) -> bool,
    ) -> Result<(String, Stop), ModelError> {
        let model = self.model;
        let vocab = model.vocab();
        let room = self.n_ctx.saturating_sub(self.pos + 1);
        let max_tokens = (job.max_tokens as usize).min(room).max(1);
        let mut sampler = Sampler::new(model, grammar, job)?;
        let started = Instant::now();
        let mut text = String::new();
        let mut pending: Vec<u8> = Vec::new();
        let mut piece = Vec::new();
        let mut produced: Vec<LlamaToken> = Vec::new();
        // The text's length before each produced token's piece: where a loop's copies begin.
        let mut starts: Vec<usize> = Vec::new();
        let guard = (job.repetition_guard && grammar.is_none()) || job.cut_loops;
        let mut logits = std::mem::take(&mut self.last_logits);
        let mut stop = Stop::Length;
        while produced.len() < max_tokens {
            let (token, own) = sampler.pick(model, &logits)?;
            // A complete JSON value that the model wants to end (it would write something the
            // grammar forbids, such as the comma after an argument) is done.
            if !own && job.stop_at_json_end && !text.trim().is_empty() && is_json(&text) {
                stop = Stop::Done;
                break;
            }
            if vocab.is_eog(token) || vocab.is_control(token) {
                stop = Stop::Done;
                break;
            }
            produced.push(token);
            starts.push(text.len());
            piece.clear();
            vocab.token_to_piece_into(token, &mut piece, false, None);
            pending.extend_from_slice(&piece);
            let delta = take_utf8(&mut pending);
            if let Some(run) = guard.then(|| repeating_tail(&produced)).flatten() {
                // Free text: what came so far (one or more rounds of the loop) was already
                // sent; stop here. A constrained value keeps one copy of the loop; the caller
                // decides whether that copy stays.
                if job.cut_loops {
                    text.truncate(starts[run.first + run.period]);
                }
                stop = Stop::Repetition {
                    first: starts[run.first],
                };
                break;
            }
            text.push_str(&delta);
            if !on_text(&delta) {
                stop = Stop::Cancelled;
                break;
            }
            if job.stop_at_json_end && text.trim_end().ends_with('}') && is_json(&text) {
                stop = Stop::Done;
                break;
            }
            if produced.len() == max_tokens {
                break;
            }
            self.batch.clear();
            self.batch
                .add(token, position(self.pos), &[0], true)
                .map_err(|e| other(format!("cannot queue a token: {e}")))?;
            self.ctx
                .decode(&mut self.batch)
                .map_err(|e| other(format!("llama.cpp could not decode: {e}")))?;
            self.pos += 1;
            logits.clear();
            logits.extend_from_slice(self.ctx.get_logits_ith(0));
        }
        if !pending.is_empty() && !matches!(stop, Stop::Repetition { .. }) {
            let rest = String::from_utf8_lossy(&pending).into_owned();
            text.push_str(&rest);
            on_text(&rest);
        }
        self.last_logits = logits;
        self.stats.output_tokens += produced.len();
        self.stats.generation_time += started.elapsed();
        Ok((text, stop))
    }
}

fn position(i: usize) -> i32 {
    i32::try_from(i).unwrap_or(i32::MAX)
}

/// Runs `job` on `model` in a context of its own: reads the prompt, then generates.
pub(crate) fn generate(
    model: &RawModel,
    cache: &PrefixCache,
    job: &Job,
    on_text: impl FnMut(&str) -> bool,
) -> Result<(Completion, Stop), ModelError> {
    let mut decoder = Decoder::new(model, cache, job)?;
    let (text, stop) = decoder.generate(job, job.grammar.as_deref(), on_text)?;
    let speed = decoder.stats;
    Ok((Completion { text, speed }, stop))
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
    fn new(model: &RawModel, grammar: Option<&str>, job: &Job) -> Result<Self, ModelError> {
        let grammar = match grammar {
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

    /// The next token, and whether it is the model's own first choice (not one the grammar
    /// forced instead).
    fn pick(&mut self, model: &RawModel, logits: &[f32]) -> Result<(LlamaToken, bool), ModelError> {
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
            return Ok((first, true));
        };
        let logit = logits.get(first.0 as usize).copied().unwrap_or(0.0);
        let mut one = LlamaTokenDataArray::new(vec![LlamaTokenData::new(first, logit, 0.0)], false);
        one.apply_sampler(grammar);
        let own = one.data.first().is_some_and(|d| d.logit().is_finite());
        let token = if own {
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
        Ok((token, own))
    }
}

mod logits;
mod loops;
mod score;
mod values;

use logits::{argmax, full_array, is_json, take_utf8};
use loops::repeating_tail;

#[cfg(test)]
mod tests;
