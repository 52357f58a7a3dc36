//! A call's arguments, one at a time: each value chosen by what the question adds to it.
//!
//! - A required enum takes the value whose score rises most over a blank question's
//!   (calibration: the most common value does not win by default).
//! - An optional enum is said only when the question raises one value clearly above the
//!   others; otherwise it is left out and the tool's default applies (a weather question that
//!   names no unit gets no unit).
//! - A number the user has just written, when the model writes it, is kept as written.
//!   Otherwise a number is the model's own value or one the conversation holds (the
//!   question's, an earlier result's), whichever the question raises most over a blank
//!   question; numbers an earlier call took and its result only echoes are not offered:
//!   "再乘以 2" after 7 × 8 = 56 multiplies 56 by 2, where a small model copying the earlier
//!   call would multiply 7.
//! - A string the schema constrains to a pattern (an IANA time zone) is chosen like an enum,
//!   by calibrated score, among the values the model writes where it hesitates: "What time
//!   is it in London?" is `Europe/London`, not the description's example `Asia/Shanghai`.
//! - Any other value is generated under its schema's grammar.

use serde_json::Value;

use futures::channel::mpsc::UnboundedSender;
use tinyagent::model::{ModelEvent, ToolDefinition};
use tinyagent::{Message, ModelError, ModelRequest};

use super::LlamaModel;
use crate::engine::{Decoder, Job, Mark, Stop};
use crate::prompt::{self, Style, numbers_of};

/// How far (in nats, calibrated) an optional enum's best value must lead the next one to be
/// said rather than left to the tool's default.
const OPTIONAL_ENUM_LEAD: f64 = 1.0;

/// The most numbers of the conversation offered as a number argument's values.
const MAX_NUMBER_CANDIDATES: usize = 12;

/// How many of the last messages the numbers are taken from.
const NUMBER_MESSAGES: usize = 6;

impl LlamaModel {
    /// The arguments of a call to `tool` (a plain object schema of `fields`), written after
    /// `prefix` (the call up to its arguments' opening brace) into `decoder`.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn fill_fields<'m>(
        &'m self,
        decoder: &mut Decoder<'m>,
        req: &ModelRequest,
        style: Style,
        tool: &ToolDefinition,
        prefix: &str,
        fields: &[(String, Value)],
        job: &Job,
        tx: &UnboundedSender<Result<ModelEvent, ModelError>>,
    ) -> Result<(String, Stop), ModelError> {
        let calibrate = self.config.calibrate_tool_choice;
        let mut call = Call {
            blank: None,
            blank_prompt: None,
            text: String::new(),
            req,
            style,
            prefix,
        };
        let numbers = Numbers::of(req, calibrate);
        let mut stop = Stop::Done;
        for (name, schema) in fields {
            let key = format!(
                "{}{}:",
                if call.text.is_empty() { "" } else { ", " },
                Value::String(name.clone())
            );
            if let Some(values) = schema.get("enum").and_then(Value::as_array) {
                let required = prompt::is_required(&tool.input_schema, name);
                self.fill_enum(decoder, &mut call, &key, name, values, required)?;
                continue;
            }
            call.force(decoder, &key)?;
            let kind = schema.get("type").and_then(Value::as_str);
            let field = Field {
                name,
                grammar: lead_with_space(&self.schema_grammar(schema)?),
                before: decoder.mark(),
                is_string: kind == Some("string"),
            };
            let value = match self.generate_value(decoder, &mut call, &field, job, tx)? {
                Generated::Value(value) => value,
                Generated::Failed(failed) => {
                    stop = failed;
                    break;
                }
            };
            let mut candidates = numbers.candidates(&value, kind);
            // A string the schema constrains to a pattern (a time zone, a code) is drawn
            // from a closed set, like an enum: it is chosen by calibrated score among the
            // values the model finds likely, so that the description's example does not win
            // by default ("What time is it in Seoul?" is not `Asia/Shanghai`).
            if field.is_string && calibrate && schema.get("pattern").is_some() {
                self.add_likely_values(decoder, &field, &value, &mut candidates, job)?;
            }
            self.choose_value(decoder, &mut call, &field, &value, &candidates)?;
        }
        if let Some(blank) = call.blank {
            decoder.stats += blank.stats;
        }
        let mut text = call.text;
        text.push('}');
        Ok((format!("{{{text}"), stop))
    }

    /// An enum's value: a required one by calibrated score; an optional one only when the
    /// question raises it clearly above the others (else the key is left out).
    fn fill_enum<'m>(
        &'m self,
        decoder: &mut Decoder<'m>,
        call: &mut Call<'_, 'm>,
        key: &str,
        name: &str,
        values: &[Value],
        required: bool,
    ) -> Result<(), ModelError> {
        let calibrate = self.config.calibrate_tool_choice;
        let options: Vec<String> = values.iter().map(|v| format!(" {v}")).collect();
        if !required && calibrate && options.len() > 1 {
            let said: Vec<String> = options.iter().map(|o| format!("{key}{o}")).collect();
            let scores = self.calibrated(decoder, call, &said)?;
            let (best, lead) = best_and_lead(&scores);
            tracing::debug!(argument = %name, ?said, ?scores, "optional value");
            if lead >= OPTIONAL_ENUM_LEAD {
                call.force(decoder, &said[best])?;
            }
            return Ok(());
        }
        call.force(decoder, key)?;
        let scores = if calibrate && required && options.len() > 1 {
            self.calibrated(decoder, call, &options)?
        } else {
            let tokens: Vec<_> = options.iter().map(|o| decoder.tokenize(o)).collect();
            decoder.score(&tokens)?
        };
        let (best, _) = best_and_lead(&scores);
        call.force(decoder, &options[best])
    }

    /// The model's own value for `field`, under its grammar (with its leading space); a
    /// string that loops ("深圳, China, China, …") is cut before the loop. A value that
    /// cannot be finished fails the call with its stop.
    fn generate_value<'m>(
        &'m self,
        decoder: &mut Decoder<'m>,
        call: &mut Call<'_, 'm>,
        field: &Field<'_>,
        job: &Job,
        tx: &UnboundedSender<Result<ModelEvent, ModelError>>,
    ) -> Result<Generated, ModelError> {
        let value_job = Job {
            cut_loops: field.is_string,
            ..job.clone()
        };
        let (value, stop) =
            decoder.generate(&value_job, Some(&field.grammar), |_| !tx.is_closed())?;
        let cut = match stop {
            Stop::Repetition { first } => cut_string(&value, first),
            _ => None,
        };
        match cut {
            Some(cut) => {
                tracing::debug!(argument = %field.name, looped = %value, kept = %cut, "loop cut");
                decoder.rewind(field.before.clone())?;
                decoder.force(&format!(" {cut}"))?;
                Ok(Generated::Value(format!(" {}", cut.trim())))
            }
            None if stop == Stop::Done => Ok(Generated::Value(format!(" {}", value.trim()))),
            None => {
                call.text.push_str(&value);
                // A loop with nothing worth keeping fails the call as the token limit does.
                Ok(Generated::Failed(match stop {
                    Stop::Repetition { .. } => Stop::Length,
                    other => other,
                }))
            }
        }
    }

    /// Adds to a pattern-constrained string's `candidates` the values the model writes where
    /// it hesitates, those it finds plausible as a whole (a value made by one different step
    /// can be one no one writes, such as `Europe/Tokyo`). Leaves the decoder after the
    /// model's own value when it is the only candidate, else at the value's start.
    fn add_likely_values<'m>(
        &'m self,
        decoder: &mut Decoder<'m>,
        field: &Field<'_>,
        value: &str,
        candidates: &mut Vec<String>,
        job: &Job,
    ) -> Result<(), ModelError> {
        decoder.rewind(field.before.clone())?;
        let short = Job {
            max_tokens: job.max_tokens.min(PATTERN_VALUE_TOKENS),
            ..job.clone()
        };
        let others: Vec<String> = decoder
            .likely_values(&short, &field.grammar, PATTERN_VALUES, HESITATION)?
            .into_iter()
            .map(|other| format!(" {other}"))
            .filter(|other| !candidates.contains(other))
            .collect();
        let tokens: Vec<_> = std::iter::once(value)
            .chain(others.iter().map(String::as_str))
            .map(|v| decoder.tokenize(v))
            .collect();
        let own_scores = decoder.score(&tokens)?;
        let floor = own_scores[0] + HESITATION.ln();
        candidates.extend(
            others
                .into_iter()
                .zip(&own_scores[1..])
                .filter(|(_, score)| **score >= floor)
                .map(|(other, _)| other),
        );
        if *candidates == [value] {
            decoder.force(value)?;
        }
        Ok(())
    }

    /// Writes the value of `field` chosen among `candidates`: the model's own `value`, already
    /// in the decoder, when it is the only one; else the one the question raises most.
    fn choose_value<'m>(
        &'m self,
        decoder: &mut Decoder<'m>,
        call: &mut Call<'_, 'm>,
        field: &Field<'_>,
        value: &str,
        candidates: &[String],
    ) -> Result<(), ModelError> {
        if candidates == [value] {
            call.mirror(value)?;
            call.text.push_str(value);
            return Ok(());
        }
        decoder.rewind(field.before.clone())?;
        let best = if candidates.len() == 1 {
            0
        } else {
            let scores = self.calibrated(decoder, call, candidates)?;
            tracing::debug!(argument = %field.name, ?candidates, ?scores, "value");
            best_and_lead(&scores).0
        };
        call.force(decoder, &candidates[best])
    }

    /// The scores of `candidates` as the call's continuation after the question, less their
    /// scores after a blank question with the same call so far.
    fn calibrated<'m>(
        &'m self,
        decoder: &mut Decoder<'m>,
        call: &mut Call<'_, 'm>,
        candidates: &[String],
    ) -> Result<Vec<f64>, ModelError> {
        let tokens: Vec<_> = candidates.iter().map(|c| decoder.tokenize(c)).collect();
        let mut scores = decoder.score(&tokens)?;
        let prompt = match &call.blank_prompt {
            Some(prompt) => prompt.clone(),
            None => {
                let prompt = self.blank_prompt(call.req, call.style)?;
                call.blank_prompt = Some(prompt.clone());
                prompt
            }
        };
        let text = call.text.clone();
        let baseline =
            self.kept_blank_scores(&[&prompt, call.prefix, &text], candidates, || {
                // The blank question's decoder is made when a score is first not kept, and
                // follows the call from then on.
                let blank = match &mut call.blank {
                    Some(blank) => blank,
                    None => call
                        .blank
                        .insert(self.blank_decoder(&prompt, call.prefix, &text)?),
                };
                blank.score(&tokens)
            })?;
        for (score, base) in scores.iter_mut().zip(baseline) {
            *score -= base;
        }
        Ok(scores)
    }
}

/// A value being written: its argument's name, its grammar, where it starts in the decoder.
struct Field<'a> {
    name: &'a str,
    grammar: String,
    before: Mark,
    is_string: bool,
}

/// The model's own value for an argument, or the stop that ended the call without one.
enum Generated {
    Value(String),
    Failed(Stop),
}

/// The numbers of the conversation a number argument is chosen among, read once per call.
struct Numbers {
    /// The last few messages' numbers (none without calibration).
    recent: Vec<f64>,
    /// The numbers of the user's last message.
    stated: Vec<f64>,
    /// The numbers earlier calls took and their results only echo.
    stale: Vec<f64>,
}

impl Numbers {
    fn of(req: &ModelRequest, calibrate: bool) -> Self {
        Self {
            recent: if calibrate {
                numbers_in(&req.messages)
            } else {
                Vec::new()
            },
            stated: numbers_of(&prompt::last_user_text(req).unwrap_or_default()),
            stale: stale_numbers(&req.messages),
        }
    }

    /// What the model's own `value` (of JSON type `kind`) is weighed against: for a number,
    /// the conversation's numbers, unless the user has just written the model's own (then it
    /// is taken as written: the choice is there for numbers copied from earlier); the model's
    /// own value too, unless it is a stale copy and there is something else to choose.
    fn candidates(&self, value: &str, kind: Option<&str>) -> Vec<String> {
        let integer = kind == Some("integer");
        let numeric = integer || kind == Some("number");
        let own: Option<f64> = value.trim().parse().ok();
        let copied_from_question = own.is_some_and(|n| self.stated.contains(&n));
        let mut candidates: Vec<String> = if numeric && !copied_from_question {
            self.recent
                .iter()
                .filter(|n| !integer || n.fract() == 0.0)
                .filter(|n| !self.stale.contains(n) || self.stated.contains(n))
                .map(|n| format!(" {}", number_text(*n)))
                .collect()
        } else {
            Vec::new()
        };
        let own_is_stale =
            own.is_some_and(|n| self.stale.contains(&n) && !self.stated.contains(&n));
        if !candidates.iter().any(|c| c == value) && (!own_is_stale || candidates.is_empty()) {
            candidates.push(value.to_owned());
        }
        candidates
    }
}

/// The arguments written so far, and the blank question's decoder that follows them.
struct Call<'a, 'm> {
    blank: Option<Decoder<'m>>,
    /// The blank question's rendered prompt, once needed.
    blank_prompt: Option<String>,
    text: String,
    req: &'a ModelRequest,
    style: Style,
    prefix: &'a str,
}

impl Call<'_, '_> {
    /// Writes `text` into the call (and the blank question's copy of it).
    fn force(&mut self, decoder: &mut Decoder<'_>, text: &str) -> Result<(), ModelError> {
        decoder.force(text)?;
        self.mirror(text)?;
        self.text.push_str(text);
        Ok(())
    }

    /// Writes `text` into the blank question's copy of the call only.
    fn mirror(&mut self, text: &str) -> Result<(), ModelError> {
        match self.blank.as_mut() {
            Some(blank) => blank.force(text),
            None => Ok(()),
        }
    }
}

/// A string value that began to loop, closed where the loop's first copy begins (`first`,
/// a byte offset in `looped`), or failing that after one copy of the loop: its trailing
/// spaces and separators (`,`, `;`, …) dropped and a closing quote added. `None` when
/// neither is a JSON string with something in it.
fn cut_string(looped: &str, first: usize) -> Option<String> {
    const SEPARATORS: [char; 11] = [',', ';', ':', '.', '-', '/', '|', '、', '，', '；', '。'];
    let close = |text: &str| -> Option<String> {
        let mut text = text
            .trim_end_matches(|c: char| c.is_whitespace() || SEPARATORS.contains(&c))
            .to_owned();
        // A backslash that escapes nothing would escape the closing quote.
        let backslashes = text.len() - text.trim_end_matches('\\').len();
        if backslashes % 2 == 1 {
            text.pop();
        }
        text.push('"');
        let parsed: String = serde_json::from_str(text.trim()).ok()?;
        (!parsed.trim().is_empty()).then(|| text.trim().to_owned())
    };
    looped
        .get(..first)
        .and_then(close)
        .or_else(|| close(looped))
}

/// The index of the highest score, and how far it leads the next one (infinite when alone).
fn best_and_lead(scores: &[f64]) -> (usize, f64) {
    let (mut best, mut first, mut second) = (0, f64::NEG_INFINITY, f64::NEG_INFINITY);
    for (i, &score) in scores.iter().enumerate() {
        if score > first {
            (best, first, second) = (i, score, first);
        } else if score > second {
            second = score;
        }
    }
    (best, first - second)
}

/// The numbers of the last few messages (text, call arguments and results), most recent
/// first, each once.
fn numbers_in(messages: &[Message]) -> Vec<f64> {
    let mut found: Vec<f64> = Vec::new();
    for message in messages.iter().rev().take(NUMBER_MESSAGES) {
        let mut texts = vec![message.text()];
        texts.extend(message.tool_results().map(|r| r.content.clone()));
        texts.extend(message.tool_calls().map(|c| c.arguments.clone()));
        for text in texts {
            for n in numbers_of(&text) {
                if !found.contains(&n) {
                    found.push(n);
                }
            }
        }
    }
    found.truncate(MAX_NUMBER_CANDIDATES);
    found
}

/// The most values a pattern-constrained string is chosen among.
const PATTERN_VALUES: usize = 6;

/// The most tokens of each value a pattern-constrained string is chosen among (its own,
/// greedy value is not cut: it was written already).
const PATTERN_VALUE_TOKENS: u32 = 48;

/// How likely (against the model's own choice) another token must be for a
/// pattern-constrained string's value written with it to be weighed too.
const HESITATION: f64 = 0.05;

/// The numbers earlier calls of the conversation took as arguments and their results only
/// echo: what a small model copies from the previous call when a follow-up ("再乘以 2")
/// means its result. A number a result holds more often than its call's arguments do (the
/// 12 of 144 / 12 = 12) is the result's own, and not stale.
fn stale_numbers(messages: &[Message]) -> Vec<f64> {
    let recent = &messages[messages.len().saturating_sub(NUMBER_MESSAGES)..];
    let mut stale = Vec::new();
    for message in recent {
        for call in message.tool_calls() {
            let mut given = numbers_of(&call.arguments);
            let mut answered: Vec<f64> = recent
                .iter()
                .flat_map(|m| m.tool_results())
                .filter(|r| r.call_id == call.id)
                .flat_map(|r| numbers_of(&r.content))
                .collect();
            // The result's own numbers: what is left once each argument is taken out once.
            given.retain(|n| match answered.iter().position(|a| a == n) {
                Some(i) => {
                    answered.swap_remove(i);
                    !answered.contains(n)
                }
                None => true,
            });
            stale.extend(given);
        }
    }
    stale
}

/// A number as JSON writes it, whole numbers without a fraction (`56`, not `56.0`).
fn number_text(n: f64) -> String {
    if n.fract() == 0.0 && n.abs() < 1e15 {
        format!("{}", n as i64)
    } else {
        format!("{n}")
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

#[cfg(test)]
mod tests {
    use super::*;
    use tinyagent::{Part, Role, ToolCall, ToolResult};

    #[test]
    fn a_looping_string_is_closed_before_its_loop() {
        // `"深圳, China, China` with the loop (`, China`) from byte 9 on.
        let looped = r#" "深圳, China, China"#;
        let first = looped.find(", China").unwrap();
        assert_eq!(cut_string(looped, first).as_deref(), Some(r#""深圳""#));
        // Nothing before the loop: one copy of it is kept.
        let looped = r#" "ha ha ha"#;
        assert_eq!(cut_string(looped, 2).as_deref(), Some(r#""ha ha ha""#));
        // A dangling escape is dropped rather than escaping the quote.
        assert_eq!(
            cut_string(r#" "C:\\dir\"#, 100).as_deref(),
            Some(r#""C:\\dir""#)
        );
        // Only an opening quote and separators: nothing worth keeping.
        assert_eq!(cut_string(r#" ", , ,"#, 2), None);
    }

    #[test]
    fn numbers_are_read_from_text_results_and_calls() {
        assert_eq!(numbers_of("7乘以8等于56。"), vec![7.0, 8.0, 56.0]);
        assert_eq!(
            numbers_of(r#"{"result":56.0,"expression":"7.00 * 8.00 = 56.00"}"#),
            vec![56.0, 7.0, 8.0, 56.0]
        );
        assert_eq!(
            numbers_of("3.5 加 4.25, -2 and 5-3"),
            vec![3.5, 4.25, -2.0, 5.0, 3.0]
        );
        assert_eq!(numbers_of("no numbers. 1."), vec![1.0]);
        let history = vec![
            Message::user("帮我算一下 7 乘以 8 等于多少。"),
            Message::assistant("7乘以8等于56。"),
            Message::user("再乘以 2 呢？"),
        ];
        assert_eq!(numbers_in(&history), vec![2.0, 7.0, 8.0, 56.0]);
        assert_eq!(number_text(56.0), "56");
        assert_eq!(number_text(3.5), "3.5");
        assert_eq!(number_text(-2.0), "-2");
        assert_eq!(best_and_lead(&[1.0, 3.0, 2.5]), (1, 0.5));
        assert_eq!(best_and_lead(&[1.0]).0, 0);
    }

    fn call_and_result(args: &str, result: &str) -> Vec<Message> {
        let call = ToolCall::new("call_1", "calculator", args);
        vec![
            Message::user("…"),
            Message::new(Role::Assistant, vec![Part::ToolCall(call)]),
            Message::new(
                Role::Tool,
                vec![Part::ToolResult(ToolResult::ok(
                    "call_1",
                    "calculator",
                    result,
                ))],
            ),
        ]
    }

    #[test]
    fn numbers_a_result_only_echoes_from_its_call_are_stale() {
        // 7 × 8 = 56: the 7 and the 8 are the call's; 56 is the result's own.
        let history = call_and_result(
            r#"{"operation":"multiply","a":7,"b":8}"#,
            r#"{"result":56.0,"expression":"7.00 * 8.00 = 56.00"}"#,
        );
        assert_eq!(stale_numbers(&history), vec![7.0, 8.0]);
        // 144 / 12 = 12: the result holds 12 more often than the call does, so 12 is its own.
        let history = call_and_result(
            r#"{"operation":"divide","a":144,"b":12}"#,
            r#"{"result":12.0,"expression":"144.00 / 12.00 = 12.00"}"#,
        );
        assert_eq!(stale_numbers(&history), vec![144.0]);
        // No calls: nothing is stale.
        assert!(stale_numbers(&[Message::user("7 乘以 8")]).is_empty());
    }
}
