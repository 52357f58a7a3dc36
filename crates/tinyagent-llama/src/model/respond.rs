//! How one step is answered: a tool chosen by constrained decoding (a name from the offered
//! tools, then its arguments), by the question's likelihood per tool (the channel), or in one
//! grammar for the whole output; and the free-text answer after tool results.

use futures::channel::mpsc::UnboundedSender;
use tinyagent::model::{FinishReason, ModelEvent, ToolDefinition};
use tinyagent::tools::schema::SchemaValidator;
use tinyagent::{Message, ModelError, ModelRequest, ModelResponse, Part, Role, Usage};

use super::LlamaModel;
use crate::ToolSelection;
use crate::config::CALL_LEAD_WEIGHT;
use crate::engine::{Decoder, Job, Stop, cancelled};
use crate::prompt::{self, Format, JsonOutput, Output, Style};
use crate::speed::Speed;

impl LlamaModel {
    /// One step, on the worker thread: events go to `tx`; returns the final response.
    pub(super) fn respond(
        &self,
        req: &ModelRequest,
        tx: &UnboundedSender<Result<ModelEvent, ModelError>>,
    ) -> Result<ModelResponse, ModelError> {
        let style = self.style();
        let plan = prompt::plan(req, &self.config, style)?;
        let max_tokens = req.max_tokens.unwrap_or(self.config.max_tokens).max(1);
        let temperature = req
            .sampling
            .temperature
            .filter(|t| t.is_finite())
            .unwrap_or(self.config.temperature)
            .max(0.0);
        match &plan.output {
            Output::Text => {
                let results = prompt::recent_results(req);
                let text = self.render(&plan.chat)?;
                if results.is_empty() && prompt::recent_errors(req).is_empty() {
                    return self.answer(req, text, max_tokens, temperature, Usage::default(), tx);
                }
                // An answer after tool calls must quote their results and state no number
                // written nowhere in the conversation (a small model whose tool failed, or
                // that cannot read a result, tends to invent a value). A small model asked to
                // answer in a language it writes badly may fail this: then it is asked once
                // more without the language request, and the answer that passes is kept
                // (the first when neither does). The answer is sent when it is chosen, in
                // one piece.
                let good = |answer: &ModelResponse| {
                    let text = answer.message.text();
                    prompt::quotes_results(&text, &results) && !prompt::invents_numbers(&text, req)
                };
                let (quiet, _unsent) = futures::channel::mpsc::unbounded();
                let first =
                    self.answer(req, text, max_tokens, temperature, Usage::default(), &quiet)?;
                let chosen = if good(&first) {
                    first
                } else {
                    let plain = Style {
                        follow_language: false,
                        ..style
                    };
                    let again = self.render(&prompt::answer_plan(req, plain).chat)?;
                    let second =
                        self.answer(req, again, max_tokens, temperature, first.usage, &quiet)?;
                    if good(&second) {
                        second
                    } else {
                        ModelResponse::new(first.message, second.usage, first.finish_reason)
                    }
                };
                // A copy of the instruction or of the question before the answer is not part
                // of it.
                let question = prompt::last_user_text(req).unwrap_or_default();
                let chosen = match prompt::without_echoes(
                    &chosen.message.text(),
                    &[&req.instruction, &question],
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
            Output::Json(out) if self.selection() == ToolSelection::Grammar => {
                let text = self.render(&plan.chat)?;
                self.respond_with_one_grammar(text, out, max_tokens, temperature, tx)
            }
            Output::Json(out) => {
                let text = self.render(&plan.chat)?;
                self.respond_by_choice(req, style, text, out, max_tokens, temperature, tx)
            }
        }
    }

    /// The answer to the rendered `prompt`, streamed; `before` is the usage of the steps that
    /// led here. Free text, or, when the request asks for a shape
    /// ([`ModelRequest::response_format`]), JSON constrained by the grammar of its schema.
    fn answer(
        &self,
        req: &ModelRequest,
        prompt: String,
        max_tokens: u32,
        temperature: f32,
        before: Usage,
        tx: &UnboundedSender<Result<ModelEvent, ModelError>>,
    ) -> Result<ModelResponse, ModelError> {
        let job = match &req.response_format {
            None => self.job(prompt, None, max_tokens, temperature, false),
            Some(format) => {
                let grammar = self.schema_grammar(&format.schema)?;
                self.job(prompt, Some(grammar), max_tokens, temperature, true)
            }
        };
        let (done, stop) = self.run_job(&job, |delta| {
            delta.is_empty()
                || tx
                    .unbounded_send(Ok(ModelEvent::TextDelta(delta.to_owned())))
                    .is_ok()
        })?;
        let finish = match stop {
            Stop::Length => FinishReason::Length,
            Stop::Cancelled => return Err(cancelled()),
            Stop::Done | Stop::Repetition { .. } => FinishReason::Stop,
        };
        Ok(ModelResponse::new(
            Message::assistant(done.text.trim()),
            before + done.speed.usage(),
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
        if self.selection() == ToolSelection::Channel
            && out.tools.len() + usize::from(out.allow_answer) > 1
        {
            return self.respond_by_channel(req, style, job, out, max_tokens, temperature, tx);
        }
        let guard = self.lock();
        let mut decoder = self.decoder(&job)?;
        let mut texts: Vec<String> = out.tools.iter().map(|t| format.choice(&t.name)).collect();
        // Where an answer is anything but a call, "no tool" is the probability that the reply
        // does not open as a call.
        let answer_is_not_a_call = out.allow_answer && format.no_call().is_none();
        if out.allow_answer {
            texts.push(match format {
                // Answering is listed as a tool: its name is scored as theirs are.
                Format::Json => format.choice(prompt::answer_name(&out.tools)),
                _ => format.no_call().unwrap_or(format.call_opening()).to_owned(),
            });
        }
        let not_a_call = |mut scores: Vec<f64>| {
            if answer_is_not_a_call {
                if let Some(last) = scores.last_mut() {
                    *last = (-last.exp()).ln_1p();
                }
            }
            scores
        };
        let chosen = if texts.len() == 1 {
            0
        } else {
            let candidates: Vec<_> = texts.iter().map(|t| decoder.tokenize(t)).collect();
            let mut scores = not_a_call(decoder.score(&candidates)?);
            let raw = scores.clone();
            let mut blank_scores = Vec::new();
            if self.config.calibrate_tool_choice {
                // The same scores for a question that says nothing: what the model would pick
                // from the tool list alone. Subtracting it leaves what the question adds.
                // It does not depend on the question: kept once computed.
                let blank = self.blank_prompt(req, style)?;
                let baseline = self.kept_blank_scores(&[&blank], &texts, || {
                    let job = self.job(blank.clone(), None, 1, 0.0, false);
                    let mut prior = self.decoder(&job)?;
                    let scores = prior.score(&candidates)?;
                    decoder.stats += prior.stats;
                    Ok(scores)
                })?;
                let baseline = not_a_call(baseline);
                for (score, base) in scores.iter_mut().zip(&baseline) {
                    *score -= base;
                }
                blank_scores = baseline;
            }
            tracing::debug!(?texts, ?raw, blank = ?blank_scores, ?scores, "tool choice");
            let highest = scores
                .iter()
                .enumerate()
                .fold((0, f64::NEG_INFINITY), |best, (i, &s)| {
                    if s > best.1 { (i, s) } else { best }
                })
                .0;
            match self.config.call_threshold {
                Some(threshold)
                    if self.config.calibrate_tool_choice
                        && out.allow_answer
                        && out.tools.len() >= 2 =>
                {
                    call_or_answer(&scores, out.tools.len(), f64::from(threshold))
                }
                _ => highest,
            }
        };
        let Some(tool) = out.tools.get(chosen) else {
            // No tool: answer in free text, from a prompt without the tools.
            let before = decoder.stats.usage();
            self.log(&decoder.stats, Stop::Done);
            drop(decoder);
            drop(guard);
            let plan = prompt::direct_answer_plan(req, style);
            let text = self.render(&plan.chat)?;
            return self.answer(req, text, max_tokens, temperature, before, tx);
        };
        self.fill_arguments(decoder, guard, req, style, tool, &job, out, max_tokens, tx)
    }

    /// Writes the call to `tool` up to its arguments, then generates them under the tool's
    /// own grammar.
    #[allow(clippy::too_many_arguments)]
    fn fill_arguments<'m>(
        &'m self,
        mut decoder: Decoder<'m>,
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
            // One argument at a time (see `fill_fields`).
            Some(fields) => {
                self.fill_fields(&mut decoder, req, style, tool, &prefix, &fields, job, tx)?
            }
            None => {
                let grammar = self.schema_grammar(&tool.input_schema)?;
                decoder.generate(job, Some(&grammar), |_| !tx.is_closed())?
            }
        };
        let mut done = decoder.stats;
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
            Stop::Done | Stop::Repetition { .. } => {}
        }
        let call_text = format!(
            "{{\"name\": {}, \"arguments\": {}}}",
            serde_json::Value::String(tool.name.clone()),
            arguments.trim()
        );
        let validators = self.validators(out);
        let part = prompt::parse_json_output(&call_text, out, &validators)?;
        if let Part::ToolCall(call) = &part {
            // A call whose values the conversation never gave serves nothing the user asked:
            // answer instead (see `prompt::invented_arguments`).
            let invented = if out.allow_answer && self.config.check_arguments {
                let arguments = serde_json::from_str(&call.arguments).unwrap_or_default();
                prompt::invented_arguments(tool, &arguments, req)
            } else {
                Vec::new()
            };
            let answer_instead = if !invented.is_empty() {
                tracing::debug!(tool = %tool.name, ?invented, "a call with made-up arguments, answered instead");
                true
            } else if out.allow_answer && self.config.confirm_calls {
                // A call that serves something else than what was asked: answer instead (see
                // `LlamaConfig::confirm_calls`).
                let (yes, asked) = self.confirms(req, &out.tools, tool, &call.arguments)?;
                done += asked;
                !yes
            } else {
                false
            };
            if answer_instead {
                let plan = prompt::direct_answer_plan(req, style);
                let text = self.render(&plan.chat)?;
                return self.answer(req, text, max_tokens, job.temperature, done.usage(), tx);
            }
        }
        self.send_part(&part, tx);
        Ok(ModelResponse::new(
            Message::new(Role::Assistant, vec![part]),
            done.usage(),
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
        let question = prompt::last_user_text(req).unwrap_or_default();
        let mut spent = Speed::default();
        let mut gains = Vec::with_capacity(out.tools.len());
        {
            let _guard = self.lock();
            let asked = format!("User: {}", question.trim());
            let score = |context: &str, spent: &mut Speed| -> Result<f64, ModelError> {
                let probe = self.job(context.to_owned(), None, 1, 0.0, false);
                let mut decoder = self.decoder(&probe)?;
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
            let plan = prompt::direct_answer_plan(req, style);
            let text = self.render(&plan.chat)?;
            return self.answer(req, text, max_tokens, temperature, spent.usage(), tx);
        }
        let tool = &out.tools[best];
        let guard = self.lock();
        let mut decoder = self.decoder(&job)?;
        decoder.stats += spent;
        let _ = temperature;
        self.fill_arguments(decoder, guard, req, style, tool, &job, out, max_tokens, tx)
    }

    /// `log P(blank | tool) - log P(blank)` for a content-free question, cached per tool text.
    /// The caller holds the generation lock.
    fn channel_bias(&self, tool_text: &str, spent: &mut Speed) -> Result<f64, ModelError> {
        if let Some(bias) = self
            .weights
            .biases
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(tool_text)
        {
            return Ok(*bias);
        }
        let mut score = |context: &str| -> Result<f64, ModelError> {
            let probe = self.job(context.to_owned(), None, 1, 0.0, false);
            let mut decoder = self.decoder(&probe)?;
            let tokens = decoder.tokenize("\nUser: N/A");
            let score = decoder.score(&[tokens])?[0];
            *spent += decoder.stats;
            Ok(score)
        };
        let bias = score(tool_text)? - score(CHANNEL_BASE)?;
        self.weights
            .biases
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
            Stop::Length => {
                match prompt::salvage_answer(&done.text, prompt::answer_name(&out.tools)) {
                    Some(answer) if out.allow_answer => (Part::text(answer), FinishReason::Length),
                    _ => {
                        return Err(ModelError::invalid_response(format!(
                            "the local model's reply was cut off at {max_tokens} tokens \
                         before its tool call was complete: {:?}",
                            done.text
                        ))
                        .retryable(false));
                    }
                }
            }
            Stop::Done | Stop::Repetition { .. } => {
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
            done.speed.usage(),
            finish,
        ))
    }
}
/// The context a question is scored in without any tool.
const CHANNEL_BASE: &str = "A message.";

/// The least gain (in nats) of `log P(question | tool) - log P(question)` for which
/// [`ToolSelection::Channel`] calls the tool rather than answering.
const CHANNEL_MIN_GAIN: f64 = 1.0;

/// `req` with its last user message replaced by a content-free one.
/// The choice among `tools` tool scores and the answer's (the last of `scores`): the best
/// tool when its lead over answering, plus [`CALL_LEAD_WEIGHT`] times its lead over the
/// next-best tool, reaches `threshold`; otherwise the answer.
fn call_or_answer(scores: &[f64], tools: usize, threshold: f64) -> usize {
    let answer = scores[tools];
    let (mut best, mut first, mut second) = (0, f64::NEG_INFINITY, f64::NEG_INFINITY);
    for (i, &score) in scores[..tools].iter().enumerate() {
        if score > first {
            (best, first, second) = (i, score, first);
        } else if score > second {
            second = score;
        }
    }
    let clarity = (first - answer) + CALL_LEAD_WEIGHT * (first - second);
    tracing::debug!(clarity, threshold, "call or answer");
    if clarity >= threshold { best } else { tools }
}

#[cfg(test)]
mod tests {
    use super::call_or_answer;
    use crate::CALL_LEAD_WEIGHT;

    #[test]
    fn a_tool_is_called_only_when_the_question_points_to_it() {
        // Scores of two tools, then the answer's.
        // The weather tool leads the answer by 2 and the clock by 2: 2 + 1.5 × 2 = 5.
        assert_eq!(call_or_answer(&[1.0, -2.0, -1.0], 2, 4.6), 0);
        // Both tools alike (a greeting): a lead over the answer alone is not enough.
        assert_eq!(call_or_answer(&[1.0, 0.8, -1.0], 2, 4.6), 2);
        // The second tool clearly ahead.
        assert_eq!(call_or_answer(&[-3.0, 0.5, -0.5], 2, 4.6), 1);
        // The answer ahead of tools that are alike: answered.
        assert_eq!(call_or_answer(&[-1.0, -1.5, 0.0], 2, 4.6), 2);
        // The answer a little ahead, but one tool far ahead of the others: the question
        // points to it, so it is called (the weather in Beijing, with the command line's tool
        // descriptions, scores so).
        assert_eq!(call_or_answer(&[-0.5, -7.0, 0.0], 2, 4.6), 0);
        // At the threshold exactly, the tool is called; just below it, answered.
        let exactly = 2.0 + CALL_LEAD_WEIGHT;
        assert_eq!(call_or_answer(&[0.0, -1.0, -2.0], 2, exactly), 0);
        assert_eq!(call_or_answer(&[0.0, -1.0, -2.0], 2, exactly + 0.01), 2);
    }
}
