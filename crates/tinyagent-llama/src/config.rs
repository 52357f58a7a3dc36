//! [`LlamaConfig`]: how a GGUF model is run.

use std::path::PathBuf;

/// The environment variable naming the directory prompts are saved in (`off`: nowhere): see
/// [`LlamaConfig::default_prompt_cache_dir`].
pub const ENV_PROMPT_CACHE: &str = "TINYAGENT_PROMPT_CACHE";

/// The default [`LlamaConfig::call_threshold`], in nats.
pub const DEFAULT_CALL_THRESHOLD: f32 = 6.0;

/// How much the best tool's lead over the next-best counts towards
/// [`LlamaConfig::call_threshold`].
pub const CALL_LEAD_WEIGHT: f64 = 1.5;

/// How a [`LlamaModel`](crate::LlamaModel) runs: threads, sampling and limits.
///
/// The defaults are deterministic: greedy decoding (temperature 0), at most 256 new tokens per
/// reply, a context window as large as the model was trained on (each call allocates only what
/// its prompt needs, at least 2048 tokens), and half the machine's cores (at least 1, at
/// most 4).
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
    /// The context window in tokens (prompt plus reply), capped by the context the model was
    /// trained on; `0` (the default) is that trained context. Each call allocates only what
    /// its prompt and reply need (at least 2048 tokens), so a large window costs memory only
    /// when a prompt is long (many tools, a long history). The command line's
    /// `--context-size` (or `TINYAGENT_CONTEXT_SIZE`) sets it.
    pub context_size: u32,
    /// How many tool-call rounds in a row (since the user's last message) the model may make
    /// before it must answer in text (default 1). Very small models tend to call tools forever;
    /// a larger value lets bigger models chain calls.
    pub max_tool_rounds: u32,
    /// How much of each tool's input schema the prompt spells out (default
    /// [`ToolPrompt::Auto`]).
    pub tool_prompt: ToolPrompt,
    /// The call syntax the prompt teaches (default [`ToolFormat::Json`]).
    pub tool_format: ToolFormat,
    /// How the model picks a tool (default [`ToolSelection::Auto`]).
    pub tool_selection: ToolSelection,
    /// Whether the prompt shows one example call per tool, its values taken from the tool's
    /// schema (`examples`, `default`, `enum`; `<name>` for free strings). Default off.
    pub tool_examples: bool,
    /// Whether free text stops when it starts to repeat itself in a loop (default on).
    pub repetition_guard: bool,
    /// Whether scores are taken relative to the score the same choice gets when the question
    /// says nothing (contextual calibration), which removes the model's bias towards some tool,
    /// some value of a required enum argument, or answering, whatever is asked: for
    /// [`ToolSelection::Scored`] and the values of required enum arguments, one more reading of
    /// the prompt per step; for [`ToolSelection::Channel`], a few short readings per tool,
    /// once. Default on.
    pub calibrate_tool_choice: bool,
    /// How clearly a question must point to one tool before the scored, calibrated choice
    /// ([`ToolSelection::Scored`] with [`calibrate_tool_choice`](Self::calibrate_tool_choice),
    /// two or more tools offered and an answer allowed) calls it rather than answering
    /// directly: the best tool is called when its score beats answering by at least this many
    /// nats, its lead over the next-best tool counting [`CALL_LEAD_WEIGHT`] times. A greeting,
    /// a thanks or a request no tool serves raises no tool above the others, so it is
    /// answered; a question about the weather leads the weather tool by several nats. `None`
    /// takes the highest score, answering included. Default
    /// [`DEFAULT_CALL_THRESHOLD`], chosen on the tuning part of `eval/tools.jsonl`.
    pub call_threshold: Option<f32>,
    /// Whether a call is given up for an answer when a value the tool takes as given (a
    /// required string not drawn from a set or a pattern, a number) appears nowhere in the
    /// conversation: a request no offered tool serves tends to get such a call, with values
    /// the model made up ("Suggest a movie." → the weather of Los Angeles), where a request the
    /// tool serves gives the tool its values. Only when an answer is allowed. Default on.
    pub check_arguments: bool,
    /// Whether a call is given up for an answer when the model, asked in a prompt of its own
    /// whether the call's result is what the user's last message asks for, says no clearly: a
    /// request no offered tool serves tends to get a call to a tool that shares a word with it
    /// ("帮我预订一间北京的酒店。" → the weather of 北京), whose values the argument check
    /// finds in the conversation. One more reading per call (its beginning, the check's
    /// examples and the tools, kept by the prompt cache). Only when an answer is allowed.
    /// Default off: on the held-out part of `eval/tools.jsonl` it raised the recall of requests
    /// that need no tool from 79% to 88%, but it also answered two weather questions of the
    /// reporting part that name no weather ("Will I need a jacket in Toronto today?",
    /// "厦门明天会下雨吗？"); see docs/local-model.md.
    pub confirm_calls: bool,
    /// How many MiB of prompts already read the model keeps (default 64; 0 keeps none), as
    /// llama.cpp sequence states: a prompt that begins like one of them (the same instruction
    /// and tools, the conversation so far) reads only the rest, which is most of a step's time
    /// on a small model. What is restored is what reading computed; reading a prompt in other
    /// pieces can round the last digits of a score differently (llama.cpp's kernels differ
    /// by batch size), which may flip a near tie. Usage reports it as cached input. About
    /// 12 KiB per token for the default model.
    pub prompt_cache_mib: u32,
    /// A directory where prompts read are saved for later processes (default none): a new
    /// process whose prompt begins like a saved one (the same instruction and tools) loads
    /// that beginning instead of reading it, so a one-shot run reads little more than its
    /// question. A model keeps its own subdirectory (named after its file's path, size and
    /// modification time) with its 8 most recently used prompts, about 10 MiB each for the
    /// default model; only prompts of which at least 256 tokens were read are saved. What is
    /// loaded is what reading computed, with the same caveat on near ties as
    /// [`prompt_cache_mib`](Self::prompt_cache_mib). See
    /// [`default_prompt_cache_dir`](Self::default_prompt_cache_dir).
    pub prompt_cache_dir: Option<PathBuf>,
}

/// The call syntax taught to the model. Whatever the choice, calls are parsed into the same
/// [`tinyagent::ToolCall`] parts and their arguments are constrained by the tool's schema.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum ToolFormat {
    /// The format the model's chat template teaches (the model was trained on it):
    /// [`ToolFormat::Hermes`] for Qwen 2.5 and Hermes-style templates, [`ToolFormat::Tagged`]
    /// for other templates that speak of `<tool_call>` or `<tools>`, [`ToolFormat::Json`]
    /// otherwise.
    Auto,
    /// Tools described in words; a call is `{"name": …, "arguments": {…}}`, an answer
    /// `{"answer": …}`. The default: of the formats measured with the `tool_eval` example it
    /// does best with every candidate model, including those whose template teaches another
    /// (Qwen2.5-Coder-0.5B rarely opens a call with `<tool_call>` although its template asks
    /// for it).
    #[default]
    Json,
    /// Tools as JSON inside `<tools></tools>`; calls as `<tool_call>[{"name": …,
    /// "arguments": {…}}]</tool_call>`, `<tool_call>[]</tool_call>` for none.
    Tagged,
    /// Word for word the tool section of Qwen 2.5 and Hermes-style chat templates: one
    /// `{"type": "function", "function": {…}}` line per tool inside `<tools></tools>`, a call
    /// as `<tool_call>\n{"name": …, "arguments": {…}}\n</tool_call>`, results inside
    /// `<tool_response></tool_response>`; an answer is plain text.
    Hermes,
}

/// How the model picks which tool to call (or none).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum ToolSelection {
    /// [`ToolSelection::Channel`] for very small models (under 300 million parameters), which
    /// judge "which tool explains this question" far better than "which tool name comes
    /// next"; [`ToolSelection::Scored`] for bigger ones. Measured with the `tool_eval`
    /// example: SmolLM2-135M picks the right tool 75% of the time by channel and 25% scored;
    /// Qwen2.5-Coder-0.5B 94% scored and 72% by channel.
    #[default]
    Auto,
    /// Tool choice is its own step: every offered tool's name (and "no tool", when an answer
    /// is allowed) is scored by the model's probability of writing it, the most likely wins,
    /// and only then are the arguments generated under that tool's own grammar. An answer is
    /// then written as free text. Costs a few extra tokens of reading per tool.
    Scored,
    /// Tool choice by the noisy channel: each tool is scored by how much more likely the
    /// user's question becomes once the model has read the tool's name, description and
    /// arguments (`log P(question | tool) - log P(question)`); the best tool is called when
    /// that gain is clear, else the model answers. Robust with very small models, which judge
    /// "which tool explains this question" far better than "which tool name comes next". The
    /// arguments are then generated under that tool's grammar.
    Channel,
    /// One grammar for the whole reply (any offered tool's call, or `{"answer": …}`), decoded
    /// token by token: the first tokens of the names decide.
    Grammar,
}

/// How tools are described to the model in its system message. Whatever the choice, the
/// output grammar enforces each tool's full input schema.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum ToolPrompt {
    /// [`ToolPrompt::Terse`] for models under one billion parameters, [`ToolPrompt::Full`]
    /// otherwise. Very small models tend to copy the examples in an argument's description
    /// instead of the user's words (asked about Beijing, SmolLM2-135M fills in Shanghai from
    /// "city name, such as Beijing, Shanghai or Guangzhou").
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
            context_size: 0,
            max_tool_rounds: 1,
            tool_prompt: ToolPrompt::Auto,
            tool_format: ToolFormat::Json,
            tool_selection: ToolSelection::Auto,
            tool_examples: false,
            repetition_guard: true,
            calibrate_tool_choice: true,
            call_threshold: Some(DEFAULT_CALL_THRESHOLD),
            check_arguments: true,
            confirm_calls: false,
            prompt_cache_mib: 64,
            prompt_cache_dir: None,
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

    /// Sets the context window in tokens: `0` is the model's trained context, other values
    /// below 64 become 64, values above the trained context are capped by it.
    #[must_use]
    pub fn context_size(mut self, context_size: u32) -> Self {
        self.context_size = if context_size == 0 {
            0
        } else {
            context_size.max(64)
        };
        self
    }

    /// Sets how tools are described in the prompt.
    #[must_use]
    pub fn tool_prompt(mut self, tool_prompt: ToolPrompt) -> Self {
        self.tool_prompt = tool_prompt;
        self
    }

    /// Sets the call syntax taught to the model.
    #[must_use]
    pub fn tool_format(mut self, tool_format: ToolFormat) -> Self {
        self.tool_format = tool_format;
        self
    }

    /// Sets how the model picks a tool.
    #[must_use]
    pub fn tool_selection(mut self, tool_selection: ToolSelection) -> Self {
        self.tool_selection = tool_selection;
        self
    }

    /// Sets whether the prompt shows an example call per tool.
    #[must_use]
    pub fn tool_examples(mut self, on: bool) -> Self {
        self.tool_examples = on;
        self
    }

    /// Sets whether free text stops when it starts to loop.
    #[must_use]
    pub fn repetition_guard(mut self, on: bool) -> Self {
        self.repetition_guard = on;
        self
    }

    /// Sets whether tool choice is calibrated against a blank question.
    #[must_use]
    pub fn calibrate_tool_choice(mut self, on: bool) -> Self {
        self.calibrate_tool_choice = on;
        self
    }

    /// Sets how clearly a question must point to one tool before it is called (see
    /// [`call_threshold`](Self::call_threshold)); `None` takes the highest score. A
    /// non-finite value means `None`.
    #[must_use]
    pub fn call_threshold(mut self, nats: impl Into<Option<f32>>) -> Self {
        self.call_threshold = nats.into().filter(|n| n.is_finite());
        self
    }

    /// Sets whether a call with values the conversation never gave is answered instead (see
    /// [`check_arguments`](Self::check_arguments)).
    #[must_use]
    pub fn check_arguments(mut self, on: bool) -> Self {
        self.check_arguments = on;
        self
    }

    /// Turns the model's check of a chosen call on or off (see
    /// [`confirm_calls`](Self::confirm_calls)).
    #[must_use]
    pub fn confirm_calls(mut self, on: bool) -> Self {
        self.confirm_calls = on;
        self
    }

    /// Sets how many MiB of prompts already read are kept (see
    /// [`prompt_cache_mib`](Self::prompt_cache_mib)); 0 keeps none.
    #[must_use]
    pub fn prompt_cache_mib(mut self, mib: u32) -> Self {
        self.prompt_cache_mib = mib;
        self
    }

    /// Saves prompts read in `dir`, for later processes (see
    /// [`prompt_cache_dir`](Self::prompt_cache_dir)).
    ///
    /// ```
    /// use tinyagent_llama::LlamaConfig;
    ///
    /// let config = LlamaConfig::default().prompt_cache_dir("/tmp/tinyagent-prompts");
    /// assert!(config.prompt_cache_dir.is_some());
    /// ```
    #[must_use]
    pub fn prompt_cache_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.prompt_cache_dir = Some(dir.into());
        self
    }

    /// Where prompts are saved unless the application says otherwise: the directory
    /// `TINYAGENT_PROMPT_CACHE` names (`off`: nowhere), else `tinyagent/prompts` in the user's
    /// cache directory (`$XDG_CACHE_HOME`, else `~/.cache`); `None` when there is none. The
    /// command line and the demo save prompts there.
    pub fn default_prompt_cache_dir() -> Option<PathBuf> {
        Self::prompt_cache_dir_in(|var| std::env::var(var).ok())
    }

    /// [`default_prompt_cache_dir`](Self::default_prompt_cache_dir) with the environment
    /// read through `env` (a variable's value, `None` when unset).
    ///
    /// ```
    /// use std::path::PathBuf;
    /// use tinyagent_llama::LlamaConfig;
    ///
    /// let env = |var: &str| (var == "HOME").then(|| "/home/ada".to_owned());
    /// assert_eq!(
    ///     LlamaConfig::prompt_cache_dir_in(env),
    ///     Some(PathBuf::from("/home/ada/.cache/tinyagent/prompts"))
    /// );
    /// ```
    pub fn prompt_cache_dir_in(env: impl Fn(&str) -> Option<String>) -> Option<PathBuf> {
        let set = |var: &str| env(var).filter(|v| !v.is_empty()).map(PathBuf::from);
        match set(ENV_PROMPT_CACHE) {
            Some(dir) if dir.as_os_str() == "off" => None,
            Some(dir) => Some(dir),
            None => {
                let cache =
                    set("XDG_CACHE_HOME").or_else(|| set("HOME").map(|h| h.join(".cache")))?;
                Some(cache.join("tinyagent").join("prompts"))
            }
        }
    }

    /// Sets how many tool-call rounds in a row the model may make before it must answer.
    #[must_use]
    pub fn max_tool_rounds(mut self, rounds: u32) -> Self {
        self.max_tool_rounds = rounds;
        self
    }
}
