//! [`LlamaModel`]: a [`Model`] running a GGUF file in-process.

use std::collections::HashMap;
use std::panic::AssertUnwindSafe;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::StreamExt;
use futures::stream::{self, BoxStream};
use llama_cpp_2::model::params::LlamaModelParams;
use llama_cpp_2::model::{LlamaChatMessage, LlamaChatTemplate, LlamaModel as RawModel};
use tinyagent::{
    BoxFuture, Model, ModelError, ModelRequest, ModelResponse,
    model::{ModelErrorKind, ModelEvent},
};

use crate::blank_scores::BlankScores;
use crate::engine::{self, Decoder, Job, Stop, other};
use crate::locate::{check_gguf, find_default_model};
use crate::prefix::PrefixCache;
use crate::prompt::{self, ChatTurn, Format, Style};
use crate::saved_prompts::{SavedPrompts, model_dir_name};
use crate::{LlamaConfig, ToolFormat, ToolPrompt, ToolSelection, backend};

mod blank;
mod confirm;
mod fields;
mod grammar;
mod respond;

use crate::speed::{Completion, Speed};

/// A [`Model`] that runs a GGUF model in-process through llama.cpp: no network, no API key.
///
/// * The chat is rendered with the chat template stored in the GGUF file's metadata; when the
///   file has none, or llama.cpp does not recognize it, the ChatML format
///   (`<|im_start|>role\n…<|im_end|>`) is used instead ([`LlamaModel::uses_fallback_template`]).
/// * Decoding is greedy (deterministic) unless [`LlamaConfig::temperature`] is above zero.
/// * When a request offers tools, the output is constrained by a grammar built from the tools'
///   input schemas: the model can only write `{"name": "<offered tool>", "arguments": {…}}`
///   with arguments its schema accepts, or `{"answer": "…"}`. That is parsed into the same
///   [`Part::ToolCall`](tinyagent::Part::ToolCall) / [`Part::Text`](tinyagent::Part::Text)
///   parts an HTTP provider returns. After [`LlamaConfig::max_tool_rounds`] rounds of tool
///   calls the model answers in free text.
/// * Without tools the reply is free text, streamed token by token
///   ([`ModelEvent::TextDelta`]).
/// * Generation runs on its own thread; dropping the stream (or the `generate` future) stops
///   it after the current token. Load, prompt and generation speeds are logged through
///   `tracing` at debug level.
///
/// Cloning is cheap: clones share the loaded weights; each request gets its own context.
///
/// ```no_run
/// use tinyagent::{AgentExt, LlmAgent, Session};
/// use tinyagent_llama::LlamaModel;
///
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// let model = LlamaModel::default_model()?; // models/Qwen2.5-Coder-1.5B-Instruct.Q4_K_M.gguf or $TINYAGENT_GGUF
/// let agent = LlmAgent::builder("smart-assistant")
///     .model(model)
///     .instruction("You are a helpful assistant.")
///     .tools([tinyagent_demo::weather_tool()])
///     .build()?;
/// let answer = agent.ask(&Session::new(), "What's the weather in Beijing?").await?;
/// println!("{answer}");
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct LlamaModel {
    weights: Arc<Weights>,
    config: LlamaConfig,
}

/// The loaded model, shared by clones.
struct Weights {
    model: RawModel,
    template: LlamaChatTemplate,
    fallback_template: bool,
    path: PathBuf,
    name: String,
    load_time: Duration,
    /// Creating contexts concurrently from one model is not sound in llama.cpp.
    context_lock: Mutex<()>,
    /// Grammars built from output schemas, by schema text.
    grammars: Mutex<HashMap<String, String>>,
    /// The call syntax [`ToolFormat::Auto`] stands for with this model.
    native_format: Format,
    /// The speed of everything generated so far.
    totals: Mutex<Speed>,
    /// Per tool text, its channel score's bias (see `channel_bias`).
    biases: Mutex<HashMap<String, f64>>,
    /// Prompts read before, so that the next one reads only what is new.
    prefixes: PrefixCache,
    /// The name of this model's directory of saved prompts (see
    /// [`LlamaConfig::prompt_cache_dir`]).
    saved_dir_name: String,
    /// Calibration's scores after the blank question, kept (see [`crate::blank_scores`]).
    blank_scores: BlankScores,
}

impl std::fmt::Debug for LlamaModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LlamaModel")
            .field("name", &self.weights.name)
            .field("path", &self.weights.path)
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

fn load_error(message: String) -> ModelError {
    ModelError::new(ModelErrorKind::InvalidRequest, message).retryable(false)
}

impl LlamaModel {
    /// Loads the GGUF model at `path`. Blocks while the file is read (well under a second for
    /// the default model).
    ///
    /// # Errors
    ///
    /// A clear [`ModelError`] (kind `InvalidRequest`) when the file is missing, is not a GGUF
    /// file (checked before llama.cpp sees it), or llama.cpp cannot load it (truncated,
    /// corrupted, unsupported architecture).
    ///
    /// ```no_run
    /// use tinyagent_llama::{LlamaConfig, LlamaModel};
    ///
    /// let model = LlamaModel::load("models/Qwen2.5-Coder-1.5B-Instruct.Q4_K_M.gguf", LlamaConfig::default().threads(1))?;
    /// # Ok::<(), tinyagent::ModelError>(())
    /// ```
    pub fn load(path: impl AsRef<Path>, config: LlamaConfig) -> Result<Self, ModelError> {
        let path = path.as_ref();
        check_gguf(path)?;
        let backend = backend()?;
        let started = Instant::now();
        let model =
            RawModel::load_from_file(backend, path, &LlamaModelParams::default()).map_err(|e| {
                load_error(format!(
                    "llama.cpp could not load {} ({e}): the file may be truncated or corrupted, \
                     or hold a model architecture this build of llama.cpp does not support",
                    path.display()
                ))
            })?;
        let load_time = started.elapsed();
        let (template, fallback_template) = chat_template(&model);
        let native_format = native_format(&model);
        let name = model
            .meta_val_str("general.name")
            .ok()
            .filter(|n| !n.trim().is_empty())
            .or_else(|| path.file_stem().map(|s| s.to_string_lossy().into_owned()))
            .unwrap_or_else(|| "gguf".to_owned());
        tracing::debug!(
            path = %path.display(),
            name = %name,
            load_ms = load_time.as_secs_f64() * 1000.0,
            parameters = model.n_params(),
            bytes = model.size(),
            context_train = model.n_ctx_train(),
            fallback_template,
            "loaded GGUF model"
        );
        Ok(Self {
            weights: Arc::new(Weights {
                model,
                template,
                fallback_template,
                path: path.to_owned(),
                name,
                load_time,
                context_lock: Mutex::new(()),
                grammars: Mutex::new(HashMap::new()),
                native_format,
                totals: Mutex::new(Speed::default()),
                biases: Mutex::new(HashMap::new()),
                prefixes: PrefixCache::new(),
                saved_dir_name: model_dir_name(path),
                blank_scores: BlankScores::default(),
            }),
            config,
        })
    }

    /// Loads the default model with the default [`LlamaConfig`]: the file named by
    /// `TINYAGENT_GGUF`, or `models/Qwen2.5-Coder-1.5B-Instruct.Q4_K_M.gguf` in the repository (see
    /// [`find_default_model`]).
    ///
    /// # Errors
    ///
    /// When no model is found, the error says how to get one: run `bash scripts/fetch-model.sh`
    /// or set `TINYAGENT_GGUF`. Otherwise as [`LlamaModel::load`].
    ///
    /// ```no_run
    /// let model = tinyagent_llama::LlamaModel::default_model()?;
    /// # Ok::<(), tinyagent::ModelError>(())
    /// ```
    pub fn default_model() -> Result<Self, ModelError> {
        Self::default_model_with(LlamaConfig::default())
    }

    /// [`LlamaModel::default_model`] with a chosen configuration.
    ///
    /// # Errors
    ///
    /// As [`LlamaModel::default_model`].
    ///
    /// ```no_run
    /// use tinyagent_llama::{LlamaConfig, LlamaModel};
    ///
    /// let model = LlamaModel::default_model_with(LlamaConfig::default().threads(1))?;
    /// # Ok::<(), tinyagent::ModelError>(())
    /// ```
    pub fn default_model_with(config: LlamaConfig) -> Result<Self, ModelError> {
        Self::load(find_default_model()?, config)
    }

    /// The same loaded model with another configuration (no reload).
    ///
    /// ```no_run
    /// # let model = tinyagent_llama::LlamaModel::default_model()?;
    /// let creative = model.with_config(model.config().clone().temperature(0.8).seed(42));
    /// # Ok::<(), tinyagent::ModelError>(())
    /// ```
    #[must_use]
    pub fn with_config(&self, config: LlamaConfig) -> Self {
        Self {
            weights: Arc::clone(&self.weights),
            config,
        }
    }

    /// The configuration in use.
    pub fn config(&self) -> &LlamaConfig {
        &self.config
    }

    /// The GGUF file the model was loaded from.
    pub fn path(&self) -> &Path {
        &self.weights.path
    }

    /// How long llama.cpp took to load the file.
    pub fn load_time(&self) -> Duration {
        self.weights.load_time
    }

    /// Whether the ChatML fallback is used because the file's own chat template is missing or
    /// not recognized by llama.cpp.
    pub fn uses_fallback_template(&self) -> bool {
        self.weights.fallback_template
    }

    /// Tokens read and generated by this loaded model (and its clones) so far, and the time
    /// each took: the sum over every request.
    ///
    /// ```no_run
    /// # let model = tinyagent_llama::LlamaModel::default_model()?;
    /// let speed = model.speed_totals();
    /// println!("{:.0} tokens/s generated", speed.generation_tokens_per_second());
    /// # Ok::<(), tinyagent::ModelError>(())
    /// ```
    pub fn speed_totals(&self) -> Speed {
        *self
            .weights
            .totals
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The exact text the model reads for `req`: the chat rendered with the model's template,
    /// the tools and the output protocol in the system message.
    ///
    /// # Errors
    ///
    /// When the request is invalid (for example `tool_choice` names a tool that is not
    /// offered) or the template cannot be applied.
    ///
    /// ```no_run
    /// use tinyagent::{Message, ModelRequest};
    /// # let model = tinyagent_llama::LlamaModel::default_model()?;
    /// let text = model.prompt(&ModelRequest::new(vec![Message::user("Hi!")]))?;
    /// assert!(text.contains("Hi!"));
    /// # Ok::<(), tinyagent::ModelError>(())
    /// ```
    pub fn prompt(&self, req: &ModelRequest) -> Result<String, ModelError> {
        let plan = prompt::plan(req, &self.config, self.style())?;
        self.render(&plan.chat)
    }

    /// Continues raw `prompt` text (no chat template, no tools) by at most `max_tokens` tokens,
    /// blocking the current thread, and reports the speed: the building block of the speed
    /// example.
    ///
    /// # Errors
    ///
    /// When the prompt does not fit the context window or llama.cpp fails.
    ///
    /// ```no_run
    /// # let model = tinyagent_llama::LlamaModel::default_model()?;
    /// let done = model.complete("The capital of France is", 8)?;
    /// println!("{} ({:.0} tokens/s)", done.text, done.speed.generation_tokens_per_second());
    /// # Ok::<(), tinyagent::ModelError>(())
    /// ```
    pub fn complete(&self, prompt: &str, max_tokens: u32) -> Result<Completion, ModelError> {
        let mut job = self.job(
            prompt.to_owned(),
            None,
            max_tokens,
            self.config.temperature,
            false,
        );
        job.repetition_guard = false;
        let (completion, _) = self.run_job(&job, |_| true)?;
        Ok(completion)
    }

    fn job(
        &self,
        prompt: String,
        grammar: Option<String>,
        max_tokens: u32,
        temperature: f32,
        stop_at_json_end: bool,
    ) -> Job {
        let grammar_is_none = grammar.is_none();
        Job {
            prompt,
            grammar,
            max_tokens,
            temperature,
            seed: self.config.seed,
            threads: self.config.threads,
            context_size: self.config.context_size,
            stop_at_json_end,
            repetition_guard: self.config.repetition_guard && grammar_is_none,
            cut_loops: false,
            prompt_cache_bytes: self.config.prompt_cache_mib as usize * 1024 * 1024,
            saved_prompts: self.saved_dir().map(|dir| Arc::new(SavedPrompts::new(dir))),
        }
    }

    /// This model's directory of saved prompts, when prompts are saved on disk
    /// ([`LlamaConfig::prompt_cache_dir`]).
    fn saved_dir(&self) -> Option<PathBuf> {
        self.config
            .prompt_cache_dir
            .as_ref()
            .map(|dir| dir.join(&self.weights.saved_dir_name))
    }

    /// A context for `job` with its prompt read (its beginning from the prefix cache where it
    /// can be). Call with [`lock`](Self::lock) held.
    fn decoder(&self, job: &Job) -> Result<Decoder<'_>, ModelError> {
        Decoder::new(&self.weights.model, &self.weights.prefixes, job)
    }

    /// One generation at a time per loaded model: it keeps llama.cpp's context creation
    /// sound and the CPU undivided.
    fn lock(&self) -> std::sync::MutexGuard<'_, ()> {
        self.weights
            .context_lock
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn run_job(
        &self,
        job: &Job,
        on_text: impl FnMut(&str) -> bool,
    ) -> Result<(Completion, Stop), ModelError> {
        let (completion, stop) = {
            let _guard = self.lock();
            engine::generate(&self.weights.model, &self.weights.prefixes, job, on_text)?
        };
        self.log(&completion.speed, stop);
        Ok((completion, stop))
    }

    fn log(&self, done: &Speed, stop: Stop) {
        *self
            .weights
            .totals
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) += *done;
        tracing::debug!(
            model = %self.weights.name,
            prompt_tokens = done.prompt_tokens,
            cached_tokens = done.cached_tokens,
            prompt_cache = ?self.weights.prefixes.size(),
            prompt_ms = done.prompt_time.as_secs_f64() * 1000.0,
            prompt_tokens_per_second = done.prompt_tokens_per_second(),
            output_tokens = done.output_tokens,
            generation_ms = done.generation_time.as_secs_f64() * 1000.0,
            generation_tokens_per_second = done.generation_tokens_per_second(),
            stop = ?stop,
            "local generation"
        );
    }

    fn render(&self, chat: &[ChatTurn]) -> Result<String, ModelError> {
        let messages = chat
            .iter()
            .map(|turn| LlamaChatMessage::new(turn.role.to_owned(), turn.content.replace('\0', "")))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| other(format!("cannot pass a message to llama.cpp: {e}")))?;
        let text = self
            .weights
            .model
            .apply_chat_template(&self.weights.template, &messages, true)
            .map_err(|e| other(format!("cannot apply the chat template: {e}")))?;
        tracing::debug!(prompt = %text, "rendered prompt");
        Ok(text)
    }

    /// How this model picks a tool ([`ToolSelection::Auto`] resolved by its size).
    fn selection(&self) -> ToolSelection {
        match self.config.tool_selection {
            ToolSelection::Auto if self.weights.model.n_params() < 300_000_000 => {
                ToolSelection::Channel
            }
            ToolSelection::Auto => ToolSelection::Scored,
            chosen => chosen,
        }
    }

    /// How the prompt is written for this model.
    fn style(&self) -> Style {
        let terse = match self.config.tool_prompt {
            ToolPrompt::Terse => true,
            ToolPrompt::Full => false,
            _ => self.weights.model.n_params() < 1_000_000_000,
        };
        let format = match self.config.tool_format {
            // One grammar for the whole reply speaks JSON only.
            _ if self.selection() == ToolSelection::Grammar => Format::Json,
            ToolFormat::Json => Format::Json,
            ToolFormat::Tagged => Format::Tagged,
            ToolFormat::Hermes => Format::Hermes,
            _ => self.weights.native_format,
        };
        Style {
            format,
            terse,
            examples: self.config.tool_examples,
            follow_language: true,
        }
    }
}

/// The call syntax the model's chat template teaches (the model was trained on it):
/// [`Format::Hermes`] for Qwen 2.5 and Hermes-style templates, [`Format::Tagged`] for other
/// templates with a `<tool_call>` or `<tools>` section, else [`Format::Json`].
fn native_format(model: &RawModel) -> Format {
    let template = model
        .meta_val_str("tokenizer.chat_template")
        .unwrap_or_default();
    Format::of_template(&template)
}

/// The model's own chat template if llama.cpp can apply it, else ChatML.
fn chat_template(model: &RawModel) -> (LlamaChatTemplate, bool) {
    let probe = [("system", "s"), ("user", "u")]
        .iter()
        .filter_map(|(r, c)| LlamaChatMessage::new((*r).to_owned(), (*c).to_owned()).ok())
        .collect::<Vec<_>>();
    if let Ok(template) = model.chat_template(None) {
        let works = std::panic::catch_unwind(AssertUnwindSafe(|| {
            model.apply_chat_template(&template, &probe, true).is_ok()
        }))
        .unwrap_or(false);
        if works {
            return (template, false);
        }
    }
    tracing::debug!("no usable chat template in the model file; using ChatML");
    let chatml = LlamaChatTemplate::new("chatml").unwrap_or_else(|_| unreachable!("no NUL byte"));
    (chatml, true)
}

impl Model for LlamaModel {
    fn name(&self) -> &str {
        &self.weights.name
    }

    /// `"llama.cpp"`: the model runs in this process, on llama.cpp.
    fn provider(&self) -> Option<&str> {
        Some("llama.cpp")
    }

    /// By the model's own vocabulary (special-token text counted as plain text).
    fn count_tokens(&self, text: &str) -> Option<u64> {
        let vocab = self.weights.model.vocab();
        Some(vocab.tokenize(text.as_bytes(), false, false).len() as u64)
    }

    fn generate<'a>(
        &'a self,
        req: &'a ModelRequest,
    ) -> BoxFuture<'a, Result<ModelResponse, ModelError>> {
        Box::pin(async move {
            let mut events = self.stream(req);
            while let Some(event) = events.next().await {
                if let ModelEvent::Done(response) = event? {
                    return Ok(response);
                }
            }
            Err(other("the local model stopped without a response".into()))
        })
    }

    fn stream<'a>(
        &'a self,
        req: &'a ModelRequest,
    ) -> BoxStream<'a, Result<ModelEvent, ModelError>> {
        let (tx, rx) = futures::channel::mpsc::unbounded();
        let model = self.clone();
        let req = req.clone();
        let spawned = std::thread::Builder::new()
            .name("tinyagent-llama".into())
            .spawn(move || {
                let result =
                    std::panic::catch_unwind(AssertUnwindSafe(|| model.respond(&req, &tx)));
                let last = match result {
                    Ok(Ok(response)) => Ok(ModelEvent::Done(response)),
                    Ok(Err(error)) => Err(error),
                    Err(_) => Err(other("the local model's worker thread panicked".into())),
                };
                let _ = tx.unbounded_send(last);
            });
        match spawned {
            Ok(_) => Box::pin(rx),
            Err(e) => Box::pin(stream::once(async move {
                Err(other(format!("cannot start a generation thread: {e}")))
            })),
        }
    }
}

#[cfg(test)]
mod template_tests;
