//! [`LlamaConfig`]: how a GGUF model is run.

/// How a [`LlamaModel`](crate::LlamaModel) runs: threads, sampling and limits.
///
/// The defaults are deterministic: greedy decoding (temperature 0), at most 256 new tokens per
/// reply, a 2048-token context, and half the machine's cores (at least 1, at most 4).
/// A request's own `temperature` and `max_tokens` take precedence over these.
///
/// ```
/// use tinyagent_llama::LlamaConfig;
///
/// let config = LlamaConfig::default().threads(1).seed(7).temperature(0.7).max_tokens(128);
/// assert_eq!(config.threads, 1);
/// assert_eq!(config.max_tokens, 128);
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct LlamaConfig {
    /// CPU threads used for prompt reading and generation. On a busy or shared CPU, fewer is
    /// often faster: 1 thread is what the tests use.
    pub threads: u32,
    /// The seed of the random sampler (used only when `temperature > 0`).
    pub seed: u32,
    /// Sampling temperature; `0.0` (the default) is greedy decoding: always the most likely token.
    pub temperature: f32,
    /// The most tokens one reply may generate (default 256); a request's `max_tokens` overrides it.
    pub max_tokens: u32,
    /// The context window in tokens (prompt plus reply; default 2048), capped by the model's own.
    pub context_size: u32,
    /// How many tool-call rounds in a row (since the user's last message) the model may make
    /// before it must answer in text (default 1). Very small models tend to call tools forever;
    /// a larger value lets bigger models chain calls.
    pub max_tool_rounds: u32,
    /// How much of each tool's input schema the prompt spells out (default
    /// [`ToolPrompt::Auto`]).
    pub tool_prompt: ToolPrompt,
}

/// How tools are described to the model in its system message. Whatever the choice, the
/// output grammar enforces each tool's full input schema.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum ToolPrompt {
    /// [`ToolPrompt::Terse`] for models under one billion parameters, [`ToolPrompt::Full`]
    /// otherwise. Very small models tend to copy the examples in an argument's description
    /// (asked about 北京, SmolLM2-135M fills in 上海 from "城市名称，如北京、上海、广州")
    /// instead of the user's words.
    #[default]
    Auto,
    /// Tool names and descriptions, argument names, types and whether they are required.
    Terse,
    /// As `Terse`, plus each argument's description.
    Full,
}

impl Default for LlamaConfig {
    fn default() -> Self {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let threads = u32::try_from((cores / 2).clamp(1, 4)).unwrap_or(1);
        Self {
            threads,
            seed: 0,
            temperature: 0.0,
            max_tokens: 256,
            context_size: 2048,
            max_tool_rounds: 1,
            tool_prompt: ToolPrompt::Auto,
        }
    }
}

impl LlamaConfig {
    /// Sets the number of CPU threads (values below 1 become 1).
    #[must_use]
    pub fn threads(mut self, threads: u32) -> Self {
        self.threads = threads.max(1);
        self
    }

    /// Sets the sampler's seed.
    #[must_use]
    pub fn seed(mut self, seed: u32) -> Self {
        self.seed = seed;
        self
    }

    /// Sets the temperature; `0.0` is greedy decoding. Negative or non-finite values become `0.0`.
    #[must_use]
    pub fn temperature(mut self, temperature: f32) -> Self {
        self.temperature = if temperature.is_finite() {
            temperature.max(0.0)
        } else {
            0.0
        };
        self
    }

    /// Sets the most tokens one reply may generate (values below 1 become 1).
    #[must_use]
    pub fn max_tokens(mut self, max_tokens: u32) -> Self {
        self.max_tokens = max_tokens.max(1);
        self
    }

    /// Sets the context window in tokens (values below 64 become 64).
    #[must_use]
    pub fn context_size(mut self, context_size: u32) -> Self {
        self.context_size = context_size.max(64);
        self
    }

    /// Sets how tools are described in the prompt.
    #[must_use]
    pub fn tool_prompt(mut self, tool_prompt: ToolPrompt) -> Self {
        self.tool_prompt = tool_prompt;
        self
    }

    /// Sets how many tool-call rounds in a row the model may make before it must answer.
    #[must_use]
    pub fn max_tool_rounds(mut self, rounds: u32) -> Self {
        self.max_tool_rounds = rounds;
        self
    }
}
