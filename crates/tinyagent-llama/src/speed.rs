//! What one generation produced and how fast: [`Completion`] and [`Speed`].

use std::time::Duration;

use tinyagent::Usage;

/// A raw completion and its speed (see [`LlamaModel::complete`](crate::LlamaModel::complete)).
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct Completion {
    /// The generated text.
    pub text: String,
    /// Tokens read and generated, and the time each took.
    pub speed: Speed,
}

/// Tokens read and generated, and the time each took: of one completion
/// ([`Completion::speed`]) or of everything a loaded model did
/// ([`LlamaModel::speed_totals`](crate::LlamaModel::speed_totals)).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
#[non_exhaustive]
pub struct Speed {
    /// Tokens of prompt read.
    pub prompt_tokens: usize,
    /// Tokens of prompt restored from the prompt cache instead of read (see
    /// [`LlamaConfig::prompt_cache_mib`](crate::LlamaConfig::prompt_cache_mib)).
    pub cached_tokens: usize,
    /// Time spent reading prompts.
    pub prompt_time: Duration,
    /// Tokens generated.
    pub output_tokens: usize,
    /// Time spent generating.
    pub generation_time: Duration,
}

fn rate(tokens: usize, time: Duration) -> f64 {
    let secs = time.as_secs_f64();
    if secs > 0.0 {
        tokens as f64 / secs
    } else {
        0.0
    }
}

impl Speed {
    /// Prompt tokens read per second.
    pub fn prompt_tokens_per_second(&self) -> f64 {
        rate(self.prompt_tokens, self.prompt_time)
    }

    /// Tokens generated per second.
    pub fn generation_tokens_per_second(&self) -> f64 {
        rate(self.output_tokens, self.generation_time)
    }
}

impl std::ops::AddAssign for Speed {
    fn add_assign(&mut self, other: Self) {
        self.prompt_tokens += other.prompt_tokens;
        self.cached_tokens += other.cached_tokens;
        self.prompt_time += other.prompt_time;
        self.output_tokens += other.output_tokens;
        self.generation_time += other.generation_time;
    }
}
impl Speed {
    /// The usage of what was read and written: every prompt token counts as input, the
    /// cached ones also as cached input.
    pub(crate) fn usage(&self) -> Usage {
        let mut usage = Usage::new(
            (self.prompt_tokens + self.cached_tokens) as u64,
            self.output_tokens as u64,
        );
        if self.cached_tokens > 0 {
            usage.cached_input_tokens = Some(self.cached_tokens as u64);
        }
        usage
    }
}
