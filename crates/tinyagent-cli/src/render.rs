//! Showing an agent run: a spinner and tool calls on standard error and the streamed answer
//! on standard output; or JSON lines; or the answer only.

use std::io::{self, IsTerminal, Write};
use std::time::Duration;

use anstyle::{AnsiColor, Style};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use serde_json::Value;
use tinyagent::{Event, Usage};

use crate::cli::OutputArgs;
use crate::error::CliError;

/// How a run is shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Spinner, tool calls, streamed answer.
    Human,
    /// One JSON object per event, on standard output.
    Json,
    /// The answer only.
    Quiet,
}

impl Mode {
    /// The mode the output options ask for.
    pub fn from_args(args: &OutputArgs) -> Self {
        if args.json {
            Self::Json
        } else if args.quiet {
            Self::Quiet
        } else {
            Self::Human
        }
    }
}

/// The most characters of a tool's arguments or result shown on one line.
const SHOWN_CHARS: usize = 160;

const DIM: Style = Style::new().dimmed();
const NAME: Style = AnsiColor::Cyan.on_default().bold();
const OK: Style = AnsiColor::Green.on_default();
const FAILED: Style = AnsiColor::Red.on_default().bold();

/// Shows the events of runs, one run after another.
pub struct Renderer {
    mode: Mode,
    spinner_enabled: bool,
    spinner: Option<ProgressBar>,
    /// Text of the current step was streamed to standard output.
    streamed: bool,
    /// Standard output is at the start of a line.
    at_line_start: bool,
}

impl Renderer {
    /// A renderer; the spinner is shown only in human mode when standard error is a terminal.
    pub fn new(mode: Mode) -> Self {
        Self {
            mode,
            spinner_enabled: mode == Mode::Human && io::stderr().is_terminal(),
            spinner: None,
            streamed: false,
            at_line_start: true,
        }
    }

    /// Shows that the model is thinking (a spinner), until the next event.
    pub fn thinking(&mut self, what: &str) {
        if !self.spinner_enabled {
            return;
        }
        self.stop();
        let spinner = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
        spinner.set_style(
            ProgressStyle::with_template("{spinner:.cyan} {msg:.dim}")
                .unwrap_or_else(|_| ProgressStyle::default_spinner()),
        );
        spinner.set_message(what.to_owned());
        spinner.enable_steady_tick(Duration::from_millis(100));
        self.spinner = Some(spinner);
    }

    /// Removes the spinner.
    pub fn stop(&mut self) {
        if let Some(spinner) = self.spinner.take() {
            spinner.finish_and_clear();
        }
    }

    /// Shows one event.
    pub fn event(&mut self, event: &Event) -> Result<(), CliError> {
        let shown = match self.mode {
            Mode::Json => match event_json(event) {
                Some(line) => write_line(&mut anstream::stdout(), &line.to_string()),
                None => Ok(()),
            },
            Mode::Quiet => match event {
                Event::Finished { answer, .. } => write_line(&mut io::stdout(), answer.trim_end()),
                _ => Ok(()),
            },
            Mode::Human => self.human(event),
        };
        shown.or_else(crate::error::output_error)
    }

    fn human(&mut self, event: &Event) -> io::Result<()> {
        match event {
            Event::TextDelta(text) => {
                self.stop();
                if text.is_empty() {
                    return Ok(());
                }
                let mut out = anstream::stdout().lock();
                write!(out, "{text}")?;
                out.flush()?;
                self.streamed = true;
                self.at_line_start = text.ends_with('\n');
            }
            Event::ReplyRestarted { reason } => {
                self.stop();
                self.end_line()?;
                let mut err = anstream::stderr().lock();
                writeln!(
                    err,
                    "{FAILED}↻{FAILED:#} {DIM}the reply was cut off and starts again (the text above is void): {}{DIM:#}",
                    shorten(reason)
                )?;
                drop(err);
                self.streamed = false;
                self.thinking("thinking");
            }
            Event::Message(message) if message.has_tool_calls() => {
                self.end_line()?;
                self.streamed = false;
            }
            Event::ToolCallStarted { call } => {
                self.stop();
                self.end_line()?;
                let mut err = anstream::stderr().lock();
                writeln!(
                    err,
                    "{DIM}→{DIM:#} {NAME}{}{NAME:#} {DIM}{}{DIM:#}",
                    call.name,
                    shorten(&readable_arguments(&call.arguments))
                )?;
                drop(err);
                self.thinking(&format!("running {}", call.name));
            }
            Event::ToolProgress {
                progress,
                total,
                message,
                ..
            } => {
                if let Some(spinner) = &self.spinner {
                    let done = match total {
                        Some(total) => format!("{progress}/{total}"),
                        None => progress.to_string(),
                    };
                    let text = match message {
                        Some(message) => format!("{done} {}", shorten(message)),
                        None => done,
                    };
                    spinner.set_message(format!("progress {text}"));
                }
            }
            Event::ToolCallFinished {
                result,
                duration,
                error_kind,
            } => self.tool_call_finished(result, *duration, *error_kind)?,
            Event::Finished {
                answer,
                usage,
                steps,
            } => self.finished(answer, usage, *steps)?,
            _ => {}
        }
        Ok(())
    }

    /// A tool call's result (or error, or wait for approval), on standard error.
    fn tool_call_finished(
        &mut self,
        result: &tinyagent::ToolResult,
        duration: Duration,
        error_kind: Option<tinyagent::ToolErrorKind>,
    ) -> io::Result<()> {
        self.stop();
        let mut err = anstream::stderr().lock();
        let took = format_duration(duration);
        if error_kind == Some(tinyagent::ToolErrorKind::Deferred) {
            writeln!(
                err,
                "{DIM}⏸{DIM:#} {NAME}{}{NAME:#} {DIM}waits for approval{DIM:#}",
                result.name
            )?;
            return Ok(());
        } else if result.is_error {
            writeln!(
                err,
                "{FAILED}✗{FAILED:#} {NAME}{}{NAME:#} {DIM}({took}){DIM:#} {FAILED}error:{FAILED:#} {}",
                result.name,
                shorten(&result.content)
            )?;
        } else {
            writeln!(
                err,
                "{OK}✓{OK:#} {NAME}{}{NAME:#} {DIM}({took}){DIM:#} {}",
                result.name,
                shorten(&result.content)
            )?;
        }
        drop(err);
        self.thinking("thinking");
        Ok(())
    }

    /// The end of a run: the answer when it was not streamed, then what the run took.
    fn finished(&mut self, answer: &str, usage: &Usage, steps: usize) -> io::Result<()> {
        self.stop();
        if !self.streamed && !answer.is_empty() {
            let mut out = anstream::stdout().lock();
            write!(out, "{answer}")?;
            self.at_line_start = answer.ends_with('\n');
        }
        self.end_line()?;
        self.streamed = false;
        writeln!(
            anstream::stderr().lock(),
            "{DIM}{}{DIM:#}",
            summary(steps, usage)
        )
    }

    /// Ends the current line of standard output, if one is open.
    fn end_line(&mut self) -> io::Result<()> {
        if !self.at_line_start {
            let mut out = anstream::stdout().lock();
            writeln!(out)?;
            out.flush()?;
            self.at_line_start = true;
        }
        Ok(())
    }

    /// Shows a failure of the run: in JSON mode as an `error` event on standard output too;
    /// the caller prints the `error:` line.
    pub fn failed(&mut self, error: &CliError) {
        self.stop();
        let _ = self.end_line();
        if self.mode == Mode::Json {
            let _ = write_line(&mut anstream::stdout(), &error.to_json().to_string());
        }
    }
}

impl Drop for Renderer {
    fn drop(&mut self) {
        self.stop();
    }
}

fn write_line(out: &mut impl Write, line: &str) -> io::Result<()> {
    writeln!(out, "{line}")?;
    out.flush()
}

/// The JSON line of an event, in the event's own serde shape (see [`Event`]), or `None` for
/// the events not shown: the assembled message, which repeats the text deltas and tool calls.
pub fn event_json(event: &Event) -> Option<Value> {
    if matches!(event, Event::Message(_)) {
        return None;
    }
    let mut value = serde_json::to_value(event).ok()?;
    if let Event::ToolCallFinished { result, .. } = event {
        // Bounded like what MCP tools pass to the model; a marker says how much was cut.
        value["content"] = Value::String(tinyagent_mcp::truncate_result(
            result.content.clone(),
            tinyagent_mcp::DEFAULT_MAX_RESULT_BYTES,
        ));
    }
    Some(value)
}

/// Tool-call arguments as people read them: JSON written again without `\uXXXX` escapes
/// (`{"city":"北京"}`, not `{"city":"\u5317\u4eac"}`); text that is not JSON as it is.
pub fn readable_arguments(arguments: &str) -> String {
    match serde_json::from_str::<Value>(arguments) {
        Ok(value) => value.to_string(),
        Err(_) => arguments.to_owned(),
    }
}

/// Text on one line, cut to [`SHOWN_CHARS`] characters with an ellipsis.
pub fn shorten(text: &str) -> String {
    let flat = crate::error::one_line(text);
    if flat.chars().count() <= SHOWN_CHARS {
        return flat;
    }
    let mut cut: String = flat.chars().take(SHOWN_CHARS - 1).collect();
    cut.push('…');
    cut
}

/// What a run took, as its last line shows it: `(2 model calls · 1,234 tokens in, 56 out ·
/// $0.000412)`; the tokens when the model reported them, the cost when it is known.
pub fn summary(steps: usize, usage: &Usage) -> String {
    let mut parts = vec![match steps {
        1 => "1 model call".to_owned(),
        n => format!("{n} model calls"),
    }];
    if let (Some(input), Some(output)) = (usage.input_tokens, usage.output_tokens) {
        parts.push(format!(
            "{} tokens in, {} out",
            thousands(input),
            thousands(output)
        ));
    }
    if let Some(cost) = usage.cost {
        parts.push(cost.to_string());
    }
    format!("({})", parts.join(" · "))
}

/// `1234567` as `1,234,567`.
fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, digit) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(digit);
    }
    out
}

fn format_duration(duration: Duration) -> String {
    if duration < Duration::from_millis(1) {
        format!("{:.2} ms", duration.as_secs_f64() * 1000.0)
    } else if duration < Duration::from_secs(1) {
        format!("{} ms", duration.as_millis())
    } else {
        format!("{:.1} s", duration.as_secs_f64())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use tinyagent::{Message, ToolCall, ToolErrorKind, ToolResult};

    #[test]
    fn events_have_a_stable_json_shape() {
        let started = event_json(&Event::ToolCallStarted {
            call: ToolCall::new("call_1", "get_weather", r#"{"city":"北京"}"#),
        })
        .unwrap();
        assert_eq!(
            started,
            json!({"type":"tool_call_started","id":"call_1","name":"get_weather","arguments":{"city":"北京"}})
        );
        let bad_args = event_json(&Event::ToolCallStarted {
            call: ToolCall::new("c", "x", "{not json"),
        })
        .unwrap();
        assert_eq!(bad_args["arguments"], "{not json");
        let finished = event_json(&Event::ToolCallFinished {
            result: ToolResult::error("call_1", "get_weather", "unknown city"),
            duration: Duration::from_millis(3),
            error_kind: Some(ToolErrorKind::InvalidInput),
        })
        .unwrap();
        assert_eq!(finished["is_error"], true);
        assert_eq!(finished["duration_ms"], 3.0);
        assert!(finished["error_kind"].is_string());
        let done = event_json(&Event::Finished {
            answer: "晴".into(),
            usage: Usage::new(10, 2),
            steps: 2,
        })
        .unwrap();
        assert_eq!(
            done,
            json!({"type":"finished","answer":"晴","steps":2,"input_tokens":10,"output_tokens":2})
        );
        assert_eq!(event_json(&Event::Message(Message::assistant("晴"))), None);
    }

    #[test]
    fn arguments_are_shown_without_unicode_escapes() {
        assert_eq!(
            readable_arguments(r#"{"city": "\u5317\u4eac"}"#),
            r#"{"city":"北京"}"#
        );
        assert_eq!(readable_arguments("{not json"), "{not json");
        assert_eq!(
            event_json(&Event::ReplyRestarted {
                reason: "cut".into()
            }),
            Some(json!({"type": "reply_restarted", "reason": "cut"}))
        );
    }

    #[test]
    fn the_summary_says_calls_tokens_and_cost_when_known() {
        assert_eq!(summary(1, &Usage::default()), "(1 model call)");
        assert_eq!(
            summary(2, &Usage::new(1_234, 56)),
            "(2 model calls · 1,234 tokens in, 56 out)"
        );
        let priced = Usage::new(1_234_567, 0).cost(tinyagent::model::Cost::from_usd(0.000412));
        assert_eq!(
            summary(3, &priced),
            "(3 model calls · 1,234,567 tokens in, 0 out · $0.000412)"
        );
    }

    #[test]
    fn long_text_is_shortened_on_one_line() {
        let long = "x\n".repeat(500);
        let short = shorten(&long);
        assert_eq!(short.chars().count(), SHOWN_CHARS);
        assert!(short.ends_with('…'));
        assert!(!short.contains('\n'));
        assert_eq!(shorten("a\nb"), "a b");
    }
}
