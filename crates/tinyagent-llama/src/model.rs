//! [`LlamaModel`]: a [`Model`] running a GGUF file in-process.

use std::collections::HashMap;
use std::panic::AssertUnwindSafe;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::StreamExt;
use futures::channel::mpsc::UnboundedSender;
use futures::stream::{self, BoxStream};
use llama_cpp_2::model::params::LlamaModelParams;
use llama_cpp_2::model::{LlamaChatMessage, LlamaChatTemplate, LlamaModel as RawModel};
use serde_json::json;
use tinyagent::tools::SchemaValidator;
use tinyagent::{
    BoxFuture, FinishReason, Message, Model, ModelError, ModelErrorKind, ModelEvent, ModelRequest,
    ModelResponse, Part, Role, Usage,
};

use crate::engine::{self, Generated, Job, Stop};
use crate::locate::{check_gguf, find_default_model};
use crate::prompt::{self, ChatTurn, JsonOutput, Output};
use crate::{LlamaConfig, ToolPrompt, backend};

/// A [`Model`] that runs a GGUF model in-process through llama.cpp: no network, no API key.
///
/// * The chat is rendered with the chat template stored in the GGUF file's metadata; when the
///   file has none, or llama.cpp does not recognize it, the ChatML format
///   (`<|im_start|>role\n…<|im_end|>`) is used instead ([`LlamaModel::uses_fallback_template`]).
/// * Decoding is greedy (deterministic) unless [`LlamaConfig::temperature`] is above zero.
/// * When a request offers tools, the output is constrained by a grammar built from the tools'
///   input schemas: the model can only write `{"name": "<offered tool>", "arguments": {…}}`
///   with arguments its schema accepts, or `{"answer": "…"}`. That is parsed into the same
///   [`Part::ToolCall`] / [`Part::Text`] parts an HTTP provider returns. After
///   [`LlamaConfig::max_tool_rounds`] rounds of tool calls the model answers in free text.
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
/// let model = LlamaModel::default_model()?; // models/SmolLM2-135M-Instruct.Q4_1.gguf or $TINYAGENT_MODEL
/// let agent = LlmAgent::builder("smart-assistant")
///     .model(model)
///     .instruction("你是一个全能助手。")
///     .tools([tinyagent::demo::weather_tool()])
///     .build()?;
/// let answer = agent.ask(&Session::new(), "北京天气怎么样？").await?;
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

fn other(message: String) -> ModelError {
    ModelError::other(message).retryable(false)
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
    /// let model = LlamaModel::load("models/SmolLM2-135M-Instruct.Q4_1.gguf", LlamaConfig::default().threads(1))?;
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
            }),
            config,
        })
    }

    /// Loads the default model with the default [`LlamaConfig`]: the file named by
    /// `TINYAGENT_MODEL`, or `models/SmolLM2-135M-Instruct.Q4_1.gguf` in the repository (see
    /// [`find_default_model`]).
    ///
    /// # Errors
    ///
    /// When no model is found, the error says how to get one: run `bash scripts/fetch-model.sh`
    /// or set `TINYAGENT_MODEL`. Otherwise as [`LlamaModel::load`].
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
        let plan = prompt::plan(req, &self.config, self.terse())?;
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
    /// println!("{} ({:.0} tokens/s)", done.text, done.generation_tokens_per_second());
    /// # Ok::<(), tinyagent::ModelError>(())
    /// ```
    pub fn complete(&self, prompt: &str, max_tokens: u32) -> Result<Completion, ModelError> {
        let job = self.job(
            prompt.to_owned(),
            None,
            max_tokens,
            self.config.temperature,
            false,
        );
        let generated = self.run_job(&job, |_| true)?;
        Ok(Completion::from(generated))
    }

    fn job(
        &self,
        prompt: String,
        grammar: Option<String>,
        max_tokens: u32,
        temperature: f32,
        stop_at_json_end: bool,
    ) -> Job {
        Job {
            prompt,
            grammar,
            max_tokens,
            temperature,
            seed: self.config.seed,
            threads: self.config.threads,
            context_size: self.config.context_size,
            stop_at_json_end,
        }
    }

    fn run_job(
        &self,
        job: &Job,
        on_text: impl FnMut(&str) -> bool,
    ) -> Result<Generated, ModelError> {
        let generated = {
            // The lock covers context creation inside `generate` only in spirit: contexts are
            // cheap for small models, so one generation at a time per loaded model keeps both
            // llama.cpp's context creation sound and the CPU undivided.
            let _guard = self
                .weights
                .context_lock
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            engine::generate(&self.weights.model, job, on_text)?
        };
        tracing::debug!(
            model = %self.weights.name,
            prompt_tokens = generated.prompt_tokens,
            prompt_ms = generated.prompt_time.as_secs_f64() * 1000.0,
            prompt_tokens_per_second = generated.prompt_tokens_per_second(),
            output_tokens = generated.output_tokens,
            generation_ms = generated.generation_time.as_secs_f64() * 1000.0,
            generation_tokens_per_second = generated.generation_tokens_per_second(),
            stop = ?generated.stop,
            "local generation"
        );
        Ok(generated)
    }

    fn render(&self, chat: &[ChatTurn]) -> Result<String, ModelError> {
        let messages = chat
            .iter()
            .map(|turn| LlamaChatMessage::new(turn.role.to_owned(), turn.content.replace('\0', "")))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| other(format!("cannot pass a message to llama.cpp: {e}")))?;
        self.weights
            .model
            .apply_chat_template(&self.weights.template, &messages, true)
            .map_err(|e| other(format!("cannot apply the chat template: {e}")))
    }

    /// The grammar for `out`, and a validator per tool for the arguments.
    fn grammar(
        &self,
        out: &JsonOutput,
    ) -> Result<(String, Vec<(String, SchemaValidator)>), ModelError> {
        let validators = out
            .tools
            .iter()
            .filter_map(|t| Some((t.name.clone(), SchemaValidator::new(&t.input_schema).ok()?)))
            .collect();
        let key = out.schema.to_string();
        let mut cache = self
            .weights
            .grammars
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(grammar) = cache.get(&key) {
            return Ok((grammar.clone(), validators));
        }
        let grammar = match llama_cpp_2::json_schema_to_grammar(&key) {
            Ok(grammar) => grammar,
            Err(error) => {
                // Some keyword of some tool's schema has no grammar equivalent: constrain that
                // tool's arguments to "any object" and rely on the validators after decoding.
                tracing::warn!(%error, "a tool schema cannot be turned into a grammar; falling back");
                let mut branches: Vec<_> = out
                    .tools
                    .iter()
                    .map(|t| {
                        let exact = prompt::call_schema(&t.name, &t.input_schema);
                        if llama_cpp_2::json_schema_to_grammar(&exact.to_string()).is_ok() {
                            exact
                        } else {
                            tracing::warn!(tool = %t.name, "arguments constrained to any JSON object");
                            prompt::call_schema(&t.name, &json!({"type": "object"}))
                        }
                    })
                    .collect();
                if out.allow_answer {
                    branches.push(prompt::answer_schema());
                }
                llama_cpp_2::json_schema_to_grammar(&prompt::one_of(branches).to_string())
                    .map_err(|e| other(format!("cannot build the tool-call grammar: {e}")))?
            }
        };
        cache.insert(key, grammar.clone());
        Ok((grammar, validators))
    }

    /// Whether the tool list leaves argument descriptions out.
    fn terse(&self) -> bool {
        match self.config.tool_prompt {
            ToolPrompt::Terse => true,
            ToolPrompt::Full => false,
            _ => self.weights.model.n_params() < 1_000_000_000,
        }
    }

    /// One step, on the worker thread: events go to `tx`; returns the final response.
    fn respond(
        &self,
        req: &ModelRequest,
        tx: &UnboundedSender<Result<ModelEvent, ModelError>>,
    ) -> Result<ModelResponse, ModelError> {
        let plan = prompt::plan(req, &self.config, self.terse())?;
        let text = self.render(&plan.chat)?;
        let max_tokens = req.max_tokens.unwrap_or(self.config.max_tokens).max(1);
        let temperature = req
            .temperature
            .filter(|t| t.is_finite())
            .unwrap_or(self.config.temperature)
            .max(0.0);
        match &plan.output {
            Output::Text => {
                let job = self.job(text, None, max_tokens, temperature, false);
                let generated = self.run_job(&job, |delta| {
                    delta.is_empty()
                        || tx
                            .unbounded_send(Ok(ModelEvent::TextDelta(delta.to_owned())))
                            .is_ok()
                })?;
                let usage = usage(&generated);
                let finish = match generated.stop {
                    Stop::Length => FinishReason::Length,
                    Stop::Cancelled => return Err(cancelled()),
                    Stop::Done => FinishReason::Stop,
                };
                Ok(ModelResponse::new(
                    Message::assistant(generated.text.trim()),
                    usage,
                    finish,
                ))
            }
            Output::Json(out) => {
                let (grammar, validators) = self.grammar(out)?;
                let job = self.job(text, Some(grammar), max_tokens, temperature, true);
                let generated = self.run_job(&job, |_| !tx.is_closed())?;
                let usage = usage(&generated);
                let (part, finish) = match generated.stop {
                    Stop::Cancelled => return Err(cancelled()),
                    Stop::Length => match prompt::salvage_answer(&generated.text) {
                        Some(answer) if out.allow_answer => {
                            (Part::text(answer), FinishReason::Length)
                        }
                        _ => {
                            return Err(ModelError::invalid_response(format!(
                                "the local model's reply was cut off at {max_tokens} tokens \
                                 before its tool call was complete: {:?}",
                                generated.text
                            ))
                            .retryable(false));
                        }
                    },
                    Stop::Done => {
                        let part = prompt::parse_json_output(&generated.text, out, &validators)?;
                        let finish = if matches!(part, Part::ToolCall(_)) {
                            FinishReason::ToolCalls
                        } else {
                            FinishReason::Stop
                        };
                        (part, finish)
                    }
                };
                match &part {
                    Part::ToolCall(call) => {
                        let _ = tx.unbounded_send(Ok(ModelEvent::ToolCallStart {
                            id: call.id.clone(),
                            name: call.name.clone(),
                        }));
                        let _ = tx.unbounded_send(Ok(ModelEvent::ToolCallDelta {
                            id: call.id.clone(),
                            arguments_fragment: call.arguments.clone(),
                        }));
                    }
                    part => {
                        if let Some(text) = part.as_text() {
                            let _ = tx.unbounded_send(Ok(ModelEvent::TextDelta(text.to_owned())));
                        }
                    }
                }
                Ok(ModelResponse::new(
                    Message::new(Role::Assistant, vec![part]),
                    usage,
                    finish,
                ))
            }
        }
    }
}

fn usage(generated: &Generated) -> Usage {
    Usage::new(
        generated.prompt_tokens as u64,
        generated.output_tokens as u64,
    )
}

fn cancelled() -> ModelError {
    ModelError::new(ModelErrorKind::Cancelled, "generation cancelled").retryable(false)
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

/// A raw completion and its speed (see [`LlamaModel::complete`]).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Completion {
    /// The generated text.
    pub text: String,
    /// Tokens in the prompt.
    pub prompt_tokens: usize,
    /// Tokens generated.
    pub output_tokens: usize,
    /// Time spent reading the prompt.
    pub prompt_time: Duration,
    /// Time spent generating.
    pub generation_time: Duration,
}

impl Completion {
    /// Prompt tokens read per second.
    pub fn prompt_tokens_per_second(&self) -> f64 {
        rate(self.prompt_tokens, self.prompt_time)
    }

    /// Tokens generated per second.
    pub fn generation_tokens_per_second(&self) -> f64 {
        rate(self.output_tokens, self.generation_time)
    }
}

fn rate(tokens: usize, time: Duration) -> f64 {
    let secs = time.as_secs_f64();
    if secs > 0.0 {
        tokens as f64 / secs
    } else {
        0.0
    }
}

impl From<Generated> for Completion {
    fn from(g: Generated) -> Self {
        Self {
            text: g.text,
            prompt_tokens: g.prompt_tokens,
            output_tokens: g.output_tokens,
            prompt_time: g.prompt_time,
            generation_time: g.generation_time,
        }
    }
}

impl Model for LlamaModel {
    fn name(&self) -> &str {
        &self.weights.name
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
