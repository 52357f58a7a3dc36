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
    ModelResponse, Part, Role, ToolDefinition, Usage,
};

use crate::engine::{self, Decoder, Job, Stop};
use crate::locate::{check_gguf, find_default_model};
use crate::prompt::{self, ChatTurn, Format, JsonOutput, Output, Style};
use crate::{LlamaConfig, ToolFormat, ToolPrompt, ToolSelection, backend};

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
    /// The call syntax [`ToolFormat::Auto`] stands for with this model.
    native_format: Format,
    /// The speed of everything generated so far.
    totals: Mutex<Speed>,
    /// Per tool text, its channel score's bias (see `channel_bias`).
    channel_bias: Mutex<HashMap<String, f64>>,
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
                channel_bias: Mutex::new(HashMap::new()),
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
        }
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
            engine::generate(&self.weights.model, job, on_text)?
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

    /// The grammar of one JSON Schema (cached); when some keyword has no grammar equivalent,
    /// the grammar of any JSON object (the validator then decides).
    fn schema_grammar(&self, schema: &serde_json::Value) -> Result<String, ModelError> {
        let key = schema.to_string();
        let mut cache = self
            .weights
            .grammars
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(grammar) = cache.get(&key) {
            return Ok(grammar.clone());
        }
        let grammar = match llama_cpp_2::json_schema_to_grammar(&key) {
            Ok(grammar) => grammar,
            Err(error) => {
                tracing::warn!(%error, "a tool schema cannot be turned into a grammar; arguments constrained to any JSON object");
                llama_cpp_2::json_schema_to_grammar(r#"{"type": "object"}"#)
                    .map_err(|e| other(format!("cannot build an argument grammar: {e}")))?
            }
        };
        cache.insert(key, grammar.clone());
        Ok(grammar)
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
            _ if self.config.tool_selection == ToolSelection::Grammar => Format::Json,
            ToolFormat::Json => Format::Json,
            ToolFormat::Tagged => Format::Tagged,
            _ => self.weights.native_format,
        };
        Style {
            format,
            terse,
            examples: self.config.tool_examples,
            follow_language: true,
        }
    }

    /// One step, on the worker thread: events go to `tx`; returns the final response.
    fn respond(
        &self,
        req: &ModelRequest,
        tx: &UnboundedSender<Result<ModelEvent, ModelError>>,
    ) -> Result<ModelResponse, ModelError> {
        let style = self.style();
        let plan = prompt::plan(req, &self.config, style)?;
        let max_tokens = req.max_tokens.unwrap_or(self.config.max_tokens).max(1);
        let temperature = req
            .temperature
            .filter(|t| t.is_finite())
            .unwrap_or(self.config.temperature)
            .max(0.0);
        match &plan.output {
            Output::Text => {
                let results = prompt::recent_results(req);
                let text = self.render(&plan.chat)?;
                if results.is_empty() {
                    return self.answer(text, max_tokens, temperature, Usage::default(), tx);
                }
                // An answer from tool results must quote them. A small model asked to answer
                // in a language it writes badly may not: then it is asked once more without
                // the language request, and the answer that quotes the results is kept. The
                // answer is sent when it is chosen, in one piece.
                let (quiet, _unsent) = futures::channel::mpsc::unbounded();
                let first = self.answer(text, max_tokens, temperature, Usage::default(), &quiet)?;
                let chosen = if prompt::quotes_results(&first.message.text(), &results) {
                    first
                } else {
                    let plain = Style {
                        follow_language: false,
                        ..style
                    };
                    let again = self.render(&prompt::answer_plan(req, plain).chat)?;
                    let second =
                        self.answer(again, max_tokens, temperature, first.usage, &quiet)?;
                    if prompt::quotes_results(&second.message.text(), &results) {
                        second
                    } else {
                        ModelResponse::new(first.message, second.usage, first.finish_reason)
                    }
                };
                // A copy of the instruction before the answer is not part of it.
                let chosen = match prompt::without_echoed_instruction(
                    &chosen.message.text(),
                    &req.instruction,
                ) {
                    Some(answer) => ModelResponse::new(
                        Message::assistant(answer),
                        chosen.usage,
                        chosen.finish_reason,
                    ),
                    None => chosen,
                };
                let _ = tx.unbounded_send(Ok(ModelEvent::TextDelta(chosen.message.text())));
                Ok(chosen)
            }
            Output::Json(out) if self.config.tool_selection == ToolSelection::Grammar => {
                let text = self.render(&plan.chat)?;
                self.respond_with_one_grammar(text, out, max_tokens, temperature, tx)
            }
            Output::Json(out) => {
                let text = self.render(&plan.chat)?;
                self.respond_by_choice(req, style, text, out, max_tokens, temperature, tx)
            }
        }
    }

    /// A free-text answer to the rendered `prompt`, streamed; `before` is the usage of the
    /// steps that led here.
    fn answer(
        &self,
        prompt: String,
        max_tokens: u32,
        temperature: f32,
        before: Usage,
        tx: &UnboundedSender<Result<ModelEvent, ModelError>>,
    ) -> Result<ModelResponse, ModelError> {
        let job = self.job(prompt, None, max_tokens, temperature, false);
        let (done, stop) = self.run_job(&job, |delta| {
            delta.is_empty()
                || tx
                    .unbounded_send(Ok(ModelEvent::TextDelta(delta.to_owned())))
                    .is_ok()
        })?;
        let finish = match stop {
            Stop::Length => FinishReason::Length,
            Stop::Cancelled => return Err(cancelled()),
            Stop::Done | Stop::Repetition => FinishReason::Stop,
        };
        Ok(ModelResponse::new(
            Message::assistant(done.text.trim()),
            add(before, usage(&done.speed)),
            finish,
        ))
    }

    /// Tool choice as its own step: the offered tools' names (and "no tool") are scored, then
    /// the chosen tool's arguments are generated under its own grammar, or an answer is
    /// written.
    #[allow(clippy::too_many_arguments)]
    fn respond_by_choice(
        &self,
        req: &ModelRequest,
        style: Style,
        prompt: String,
        out: &JsonOutput,
        max_tokens: u32,
        temperature: f32,
        tx: &UnboundedSender<Result<ModelEvent, ModelError>>,
    ) -> Result<ModelResponse, ModelError> {
        let format = style.format;
        let job = self.job(prompt, None, max_tokens, temperature, true);
        if self.config.tool_selection == ToolSelection::Channel
            && out.tools.len() + usize::from(out.allow_answer) > 1
        {
            return self.respond_by_channel(req, style, job, out, max_tokens, temperature, tx);
        }
        let guard = self.lock();
        let mut decoder = Decoder::new(&self.weights.model, &job)?;
        let mut texts: Vec<String> = out.tools.iter().map(|t| format.choice(&t.name)).collect();
        if out.allow_answer {
            texts.push(format.no_call().to_owned());
        }
        let chosen = if texts.len() == 1 {
            0
        } else {
            let candidates: Vec<_> = texts.iter().map(|t| decoder.tokenize(t)).collect();
            let mut scores = decoder.score(&candidates)?;
            if self.config.calibrate_tool_choice {
                // The same scores for a question that says nothing: what the model would pick
                // from the tool list alone. Subtracting it leaves what the question adds.
                let blank = prompt::plan(&blank_question(req), &self.config, style)?;
                let blank = self.job(self.render(&blank.chat)?, None, 1, 0.0, false);
                let mut prior = Decoder::new(&self.weights.model, &blank)?;
                let baseline = prior.score(&candidates)?;
                decoder.stats += prior.stats;
                for (score, base) in scores.iter_mut().zip(baseline) {
                    *score -= base;
                }
            }
            tracing::debug!(?texts, ?scores, "tool choice");
            scores
                .iter()
                .enumerate()
                .fold((0, f64::NEG_INFINITY), |best, (i, &s)| {
                    if s > best.1 { (i, s) } else { best }
                })
                .0
        };
        let Some(tool) = out.tools.get(chosen) else {
            // No tool: answer in free text, from a prompt without the tools.
            let before = usage(&decoder.stats);
            self.log(&decoder.stats, Stop::Done);
            drop(decoder);
            drop(guard);
            let plan = prompt::answer_plan(req, style);
            let text = self.render(&plan.chat)?;
            return self.answer(text, max_tokens, temperature, before, tx);
        };
        self.fill_arguments(decoder, guard, req, style, tool, &job, out, max_tokens, tx)
    }

    /// Writes the call to `tool` up to its arguments, then generates them under the tool's
    /// own grammar.
    #[allow(clippy::too_many_arguments)]
    fn fill_arguments(
        &self,
        mut decoder: Decoder<'_>,
        guard: std::sync::MutexGuard<'_, ()>,
        req: &ModelRequest,
        style: Style,
        tool: &ToolDefinition,
        job: &Job,
        out: &JsonOutput,
        max_tokens: u32,
        tx: &UnboundedSender<Result<ModelEvent, ModelError>>,
    ) -> Result<ModelResponse, ModelError> {
        let fields = prompt::simple_fields(&tool.input_schema);
        // With one argument at a time, the call is written up to the first key's colon:
        // `…"arguments": {"city":`, and each value starts with its own space, as the model
        // would write it.
        let prefix = style.format.call_prefix(&tool.name);
        let prefix = if fields.is_some() {
            format!("{prefix}{{")
        } else {
            prefix
        };
        decoder.force(&prefix)?;
        let (arguments, stop) = match fields {
            // One argument at a time: an enum's value is chosen by score (calibrated against a
            // blank question, so the most common value does not win by default), any other
            // value is generated under its own grammar.
            Some(fields) => {
                let mut blank: Option<Decoder<'_>> = None;
                let mut text = String::new();
                let mut stop = Stop::Done;
                for (i, (name, schema)) in fields.iter().enumerate() {
                    let key = format!(
                        "{}{}:",
                        if i == 0 { "" } else { ", " },
                        serde_json::Value::String(name.clone())
                    );
                    decoder.force(&key)?;
                    if let Some(values) = schema.get("enum").and_then(serde_json::Value::as_array) {
                        let options: Vec<String> = values.iter().map(|v| format!(" {v}")).collect();
                        let tokens: Vec<_> = options.iter().map(|o| decoder.tokenize(o)).collect();
                        let mut scores = decoder.score(&tokens)?;
                        // An optional argument left unsaid takes the tool's default: calibrating
                        // it would turn the slightest hint into a change; only required ones are.
                        let required = prompt::is_required(&tool.input_schema, name);
                        if self.config.calibrate_tool_choice && required && options.len() > 1 {
                            if blank.is_none() {
                                let plan = prompt::plan(&blank_question(req), &self.config, style)?;
                                let probe = self.job(self.render(&plan.chat)?, None, 1, 0.0, false);
                                let mut b = Decoder::new(&self.weights.model, &probe)?;
                                b.force(&prefix)?;
                                b.force(&text)?;
                                blank = Some(b);
                            }
                            if let Some(b) = blank.as_mut() {
                                b.force(&key)?;
                                let base = b.score(&tokens)?;
                                for (s, b) in scores.iter_mut().zip(base) {
                                    *s -= b;
                                }
                            }
                        }
                        let best = scores
                            .iter()
                            .enumerate()
                            .fold(
                                (0, f64::NEG_INFINITY),
                                |b, (i, &s)| if s > b.1 { (i, s) } else { b },
                            )
                            .0;
                        decoder.force(&options[best])?;
                        if let Some(b) = blank.as_mut() {
                            b.force(&options[best])?;
                        }
                        text.push_str(&key);
                        text.push_str(&options[best]);
                    } else {
                        let grammar = self.schema_grammar(schema)?;
                        let grammar = lead_with_space(&grammar);
                        let (value, s) =
                            decoder.generate(job, Some(&grammar), |_| !tx.is_closed())?;
                        stop = s;
                        text.push_str(&key);
                        if stop != Stop::Done {
                            text.push_str(&value);
                            break;
                        }
                        let value = format!(" {}", value.trim());
                        if let Some(b) = blank.as_mut() {
                            b.force(&key)?;
                            b.force(&value)?;
                        }
                        text.push_str(&value);
                    }
                }
                if let Some(b) = blank {
                    decoder.stats += b.stats;
                }
                text.push('}');
                (format!("{{{text}"), stop)
            }
            None => {
                let grammar = self.schema_grammar(&tool.input_schema)?;
                decoder.generate(job, Some(&grammar), |_| !tx.is_closed())?
            }
        };
        let done = decoder.stats;
        drop(decoder);
        drop(guard);
        self.log(&done, stop);
        match stop {
            Stop::Cancelled => return Err(cancelled()),
            Stop::Length => {
                return Err(ModelError::invalid_response(format!(
                    "the local model's arguments for {} were cut off at {max_tokens} tokens: \
                     {arguments:?}",
                    tool.name
                ))
                .retryable(false));
            }
            Stop::Done | Stop::Repetition => {}
        }
        let call_text = format!(
            "{{\"name\": {}, \"arguments\": {}}}",
            serde_json::Value::String(tool.name.clone()),
            arguments.trim()
        );
        let validators = self.validators(out);
        let part = prompt::parse_json_output(&call_text, out, &validators)?;
        self.send_part(&part, tx);
        Ok(ModelResponse::new(
            Message::new(Role::Assistant, vec![part]),
            usage(&done),
            FinishReason::ToolCalls,
        ))
    }

    /// Tool choice the noisy-channel way: each tool is scored by how much more likely the
    /// user's question becomes once the model has read that tool's description,
    /// `log P(question | tool) - log P(question)`. The best tool is called when its gain is
    /// above [`CHANNEL_MIN_GAIN`] (or a call is required); otherwise the model answers.
    #[allow(clippy::too_many_arguments)]
    fn respond_by_channel(
        &self,
        req: &ModelRequest,
        style: Style,
        job: Job,
        out: &JsonOutput,
        max_tokens: u32,
        temperature: f32,
        tx: &UnboundedSender<Result<ModelEvent, ModelError>>,
    ) -> Result<ModelResponse, ModelError> {
        let question = req
            .messages
            .iter()
            .rev()
            .find(|m| m.role == Role::User)
            .map(Message::text)
            .unwrap_or_default();
        let mut spent = Speed::default();
        let mut gains = Vec::with_capacity(out.tools.len());
        {
            let _guard = self.lock();
            let asked = format!("User: {}", question.trim());
            let score = |context: &str, spent: &mut Speed| -> Result<f64, ModelError> {
                let probe = self.job(context.to_owned(), None, 1, 0.0, false);
                let mut decoder = Decoder::new(&self.weights.model, &probe)?;
                let tokens = decoder.tokenize(&format!("\n{asked}"));
                let score = decoder.score(&[tokens])?[0];
                *spent += decoder.stats;
                Ok(score)
            };
            let base = score(CHANNEL_BASE, &mut spent)?;
            for tool in &out.tools {
                let text = prompt::channel_text(tool);
                let mut gain = score(&text, &mut spent)? - base;
                if self.config.calibrate_tool_choice {
                    // What the tool's text adds to a question that says nothing: its bias.
                    gain -= self.channel_bias(&text, &mut spent)?;
                }
                gains.push(gain);
            }
        }
        tracing::debug!(?gains, "tool choice by channel");
        let (best, gain) =
            gains.iter().enumerate().fold(
                (0, f64::NEG_INFINITY),
                |b, (i, &g)| if g > b.1 { (i, g) } else { b },
            );
        if out.allow_answer && gain < CHANNEL_MIN_GAIN {
            self.log(&spent, Stop::Done);
            let plan = prompt::answer_plan(req, style);
            let text = self.render(&plan.chat)?;
            return self.answer(text, max_tokens, temperature, usage(&spent), tx);
        }
        let tool = &out.tools[best];
        let guard = self.lock();
        let mut decoder = Decoder::new(&self.weights.model, &job)?;
        decoder.stats += spent;
        let _ = temperature;
        self.fill_arguments(decoder, guard, req, style, tool, &job, out, max_tokens, tx)
    }

    /// `log P(blank | tool) - log P(blank)` for a content-free question, cached per tool text.
    /// The caller holds the generation lock.
    fn channel_bias(&self, tool_text: &str, spent: &mut Speed) -> Result<f64, ModelError> {
        if let Some(bias) = self
            .weights
            .channel_bias
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(tool_text)
        {
            return Ok(*bias);
        }
        let mut score = |context: &str| -> Result<f64, ModelError> {
            let probe = self.job(context.to_owned(), None, 1, 0.0, false);
            let mut decoder = Decoder::new(&self.weights.model, &probe)?;
            let tokens = decoder.tokenize("\nUser: N/A");
            let score = decoder.score(&[tokens])?[0];
            *spent += decoder.stats;
            Ok(score)
        };
        let bias = score(tool_text)? - score(CHANNEL_BASE)?;
        self.weights
            .channel_bias
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert(tool_text.to_owned(), bias);
        Ok(bias)
    }

    fn validators(&self, out: &JsonOutput) -> Vec<(String, SchemaValidator)> {
        out.tools
            .iter()
            .filter_map(|t| Some((t.name.clone(), SchemaValidator::new(&t.input_schema).ok()?)))
            .collect()
    }

    fn send_part(&self, part: &Part, tx: &UnboundedSender<Result<ModelEvent, ModelError>>) {
        match part {
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
    }

    /// One grammar for the whole reply: any offered tool's call, or `{"answer": …}`.
    fn respond_with_one_grammar(
        &self,
        prompt: String,
        out: &JsonOutput,
        max_tokens: u32,
        temperature: f32,
        tx: &UnboundedSender<Result<ModelEvent, ModelError>>,
    ) -> Result<ModelResponse, ModelError> {
        let (grammar, validators) = self.grammar(out)?;
        let job = self.job(prompt, Some(grammar), max_tokens, temperature, true);
        let (done, stop) = self.run_job(&job, |_| !tx.is_closed())?;
        let (part, finish) = match stop {
            Stop::Cancelled => return Err(cancelled()),
            Stop::Length => match prompt::salvage_answer(&done.text) {
                Some(answer) if out.allow_answer => (Part::text(answer), FinishReason::Length),
                _ => {
                    return Err(ModelError::invalid_response(format!(
                        "the local model's reply was cut off at {max_tokens} tokens \
                         before its tool call was complete: {:?}",
                        done.text
                    ))
                    .retryable(false));
                }
            },
            Stop::Done | Stop::Repetition => {
                let part = prompt::parse_json_output(&done.text, out, &validators)?;
                let finish = if matches!(part, Part::ToolCall(_)) {
                    FinishReason::ToolCalls
                } else {
                    FinishReason::Stop
                };
                (part, finish)
            }
        };
        self.send_part(&part, tx);
        Ok(ModelResponse::new(
            Message::new(Role::Assistant, vec![part]),
            usage(&done.speed),
            finish,
        ))
    }
}

/// `grammar` with an optional space before its root: a value as the model writes it after a
/// key's colon.
fn lead_with_space(grammar: &str) -> String {
    let body: Vec<String> = grammar
        .lines()
        .map(|line| match line.strip_prefix("root ::=") {
            Some(rest) => format!("value-root ::={rest}"),
            None => line.to_owned(),
        })
        .collect();
    format!("root ::= \" \"? value-root\n{}", body.join("\n"))
}

/// The context a question is scored in without any tool.
const CHANNEL_BASE: &str = "A message.";

/// The least gain (in nats) of `log P(question | tool) - log P(question)` for which
/// [`ToolSelection::Channel`] calls the tool rather than answering.
const CHANNEL_MIN_GAIN: f64 = 1.0;

/// `req` with its last user message replaced by a content-free one.
fn blank_question(req: &ModelRequest) -> ModelRequest {
    let mut blank = req.clone();
    if let Some(last) = blank
        .messages
        .iter_mut()
        .rev()
        .find(|m| m.role == Role::User)
    {
        *last = Message::user("N/A");
    }
    blank
}

fn add(a: Usage, b: Usage) -> Usage {
    a + b
}

fn usage(done: &Speed) -> Usage {
    Usage::new(done.prompt_tokens as u64, done.output_tokens as u64)
}

fn cancelled() -> ModelError {
    ModelError::new(ModelErrorKind::Cancelled, "generation cancelled").retryable(false)
}

/// [`Format::Tagged`] when the model's chat template has a tool section in that syntax (the
/// model was trained on it, as Qwen and Hermes-style models are); else [`Format::Json`].
fn native_format(model: &RawModel) -> Format {
    let template = model
        .meta_val_str("tokenizer.chat_template")
        .unwrap_or_default();
    if template.contains("<tool_call>") || template.contains("<tools>") {
        Format::Tagged
    } else {
        Format::Json
    }
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
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct Completion {
    /// The generated text.
    pub text: String,
    /// Tokens read and generated, and the time each took.
    pub speed: Speed,
}

/// Tokens read and generated, and the time each took: of one completion
/// ([`Completion::speed`]) or of everything a loaded model did ([`LlamaModel::speed_totals`]).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
#[non_exhaustive]
pub struct Speed {
    /// Tokens of prompt read.
    pub prompt_tokens: usize,
    /// Time spent reading prompts.
    pub prompt_time: Duration,
    /// Tokens generated.
    pub output_tokens: usize,
    /// Time spent generating.
    pub generation_time: Duration,
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
        self.prompt_time += other.prompt_time;
        self.output_tokens += other.output_tokens;
        self.generation_time += other.generation_time;
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
