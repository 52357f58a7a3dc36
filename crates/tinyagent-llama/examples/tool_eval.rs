//! How well a local model calls tools: a fixed set of questions (Chinese and English) asked
//! with the tutorial's four tools offered (weather, calculator, current time, translator), one
//! model step each, 1 thread, greedy decoding. For each candidate model and prompt style it
//! prints the share of questions answered with the right tool, with fully right arguments,
//! and without a tool when none is needed, the median time per question, and the prompt and
//! generation speed.
//!
//! ```sh
//! cargo run --release -p tinyagent-llama --example tool_eval              # the default model, every style
//! cargo run --release -p tinyagent-llama --example tool_eval -- --model other.gguf --style tagged-scored -v
//! ```
//!
//! Options: `--model PATH` (repeatable; default: the default model), `--style NAME`
//! (repeatable; default: all of them), `--set tuning|reporting|all` (which questions: the
//! tuning part the defaults were chosen on, the reporting part they never saw, or both;
//! default all), `--threads N` (default 1), `-v` (each question's result), `--trace` (the
//! scores of each tool choice, on standard error).
//!
//! "No-tool precision" is the share of the questions answered without a tool that needed
//! none; "no-tool recall" the share of the questions that need none answered without one.

#[path = "tool_eval/questions.rs"]
mod questions;

use std::time::Instant;

use serde_json::{Value, json};
use tinyagent::{Message, Model, ModelRequest, model::ToolDefinition};
use tinyagent_llama::{LlamaConfig, LlamaModel, ToolFormat, ToolSelection, find_default_model};

use questions::{Case, Want, cases, reporting_cases};

/// A prompt style: the call syntax, how a tool is picked, and whether examples are shown.
#[derive(Clone, Copy)]
struct Style {
    /// `default`: exactly `LlamaConfig::default()` (but the thread count).
    name: &'static str,
    format: ToolFormat,
    selection: ToolSelection,
    examples: bool,
    calibrate: bool,
}

const STYLES: [Style; 14] = [
    Style {
        name: "default",
        format: ToolFormat::Auto,
        selection: ToolSelection::Channel,
        examples: false,
        calibrate: true,
    },
    Style {
        name: "json-grammar",
        format: ToolFormat::Json,
        selection: ToolSelection::Grammar,
        examples: false,
        calibrate: false,
    },
    Style {
        name: "json-scored",
        format: ToolFormat::Json,
        selection: ToolSelection::Scored,
        examples: false,
        calibrate: false,
    },
    Style {
        name: "json-scored-examples",
        format: ToolFormat::Json,
        selection: ToolSelection::Scored,
        examples: true,
        calibrate: false,
    },
    Style {
        name: "tagged-scored",
        format: ToolFormat::Tagged,
        selection: ToolSelection::Scored,
        examples: false,
        calibrate: false,
    },
    Style {
        name: "tagged-scored-examples",
        format: ToolFormat::Tagged,
        selection: ToolSelection::Scored,
        examples: true,
        calibrate: false,
    },
    Style {
        name: "json-calibrated",
        format: ToolFormat::Json,
        selection: ToolSelection::Scored,
        examples: false,
        calibrate: true,
    },
    Style {
        name: "tagged-calibrated",
        format: ToolFormat::Tagged,
        selection: ToolSelection::Scored,
        examples: false,
        calibrate: true,
    },
    Style {
        name: "json-channel",
        format: ToolFormat::Json,
        selection: ToolSelection::Channel,
        examples: false,
        calibrate: false,
    },
    Style {
        name: "json-channel-calibrated",
        format: ToolFormat::Json,
        selection: ToolSelection::Channel,
        examples: false,
        calibrate: true,
    },
    Style {
        name: "hermes-scored",
        format: ToolFormat::Hermes,
        selection: ToolSelection::Scored,
        examples: false,
        calibrate: false,
    },
    Style {
        name: "hermes-scored-calibrated",
        format: ToolFormat::Hermes,
        selection: ToolSelection::Scored,
        examples: false,
        calibrate: true,
    },
    Style {
        name: "hermes-channel",
        format: ToolFormat::Hermes,
        selection: ToolSelection::Channel,
        examples: false,
        calibrate: false,
    },
    Style {
        name: "tagged-channel-calibrated",
        format: ToolFormat::Tagged,
        selection: ToolSelection::Channel,
        examples: false,
        calibrate: true,
    },
];

fn matches(want: &Want, got: Option<&Value>) -> bool {
    let text = |v: &Value| v.as_str().map(|s| s.trim().to_lowercase());
    match want {
        Want::Text(options) => got
            .and_then(text)
            .is_some_and(|g| options.iter().any(|o| o.to_lowercase() == g)),
        Want::Number(n) => got
            .and_then(Value::as_f64)
            .is_some_and(|g| (g - n).abs() < 1e-9),
        Want::Contains(part) => got
            .and_then(text)
            .is_some_and(|g| g.contains(&part.to_lowercase())),
        Want::AbsentOr(value) => got.is_none_or(|g| text(g).is_some_and(|g| g == *value)),
    }
}

/// The scores of one candidate.
#[derive(Default)]
struct Tally {
    tool_questions: usize,
    right_tool: usize,
    right_args: usize,
    none_questions: usize,
    right_none: usize,
    /// Questions answered without a tool, needed or not.
    answered_without: usize,
    errors: usize,
    seconds: Vec<f64>,
}

fn percent(part: usize, whole: usize) -> f64 {
    if whole == 0 {
        0.0
    } else {
        100.0 * part as f64 / whole as f64
    }
}

fn median(values: &mut [f64]) -> f64 {
    if values.is_empty() {
        return 0.0;
    }
    values.sort_by(f64::total_cmp);
    let mid = values.len() / 2;
    if values.len().is_multiple_of(2) {
        (values[mid - 1] + values[mid]) / 2.0
    } else {
        values[mid]
    }
}

struct Options {
    models: Vec<std::path::PathBuf>,
    styles: Vec<Style>,
    threads: u32,
    verbose: bool,
    trace: bool,
    /// `tuning`, `reporting` or `all`.
    set: String,
}

fn options() -> Result<Options, Box<dyn std::error::Error>> {
    let mut out = Options {
        models: Vec::new(),
        styles: Vec::new(),
        threads: 1,
        verbose: false,
        trace: false,
        set: "all".to_owned(),
    };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--model" => out
                .models
                .push(args.next().ok_or("--model needs a path")?.into()),
            "--style" => {
                let name = args.next().ok_or("--style needs a name")?;
                let style = STYLES.iter().find(|s| s.name == name).ok_or_else(|| {
                    let names: Vec<_> = STYLES.iter().map(|s| s.name).collect();
                    format!(
                        "unknown style {name:?}; the styles are {}",
                        names.join(", ")
                    )
                })?;
                out.styles.push(*style);
            }
            "--threads" => out.threads = args.next().ok_or("--threads needs a number")?.parse()?,
            "-v" | "--verbose" => out.verbose = true,
            "--trace" => out.trace = true,
            "--set" => {
                out.set = args.next().ok_or("--set needs tuning, reporting or all")?;
                if !["tuning", "reporting", "all"].contains(&out.set.as_str()) {
                    return Err(
                        format!("unknown set {:?}: tuning, reporting or all", out.set).into(),
                    );
                }
            }
            other => {
                return Err(format!("unknown option {other:?} (see the example's docs)").into());
            }
        }
    }
    if out.models.is_empty() {
        out.models.push(find_default_model()?);
    }
    if out.styles.is_empty() {
        out.styles = STYLES.to_vec();
    }
    Ok(out)
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let options = options()?;
    if options.trace {
        // Each step's tool-choice scores, among llama.cpp's own debug logs.
        tracing_subscriber::fmt()
            .with_max_level(tracing::Level::DEBUG)
            .with_writer(std::io::stderr)
            .init();
    }
    let tools: Vec<ToolDefinition> = tinyagent_demo::all_tools()
        .iter()
        .map(|t| t.definition())
        .collect();
    let cases: Vec<Case> = match options.set.as_str() {
        "tuning" => cases(),
        "reporting" => reporting_cases(),
        _ => cases().into_iter().chain(reporting_cases()).collect(),
    };
    let tool_cases = cases.iter().filter(|c| c.tool.is_some()).count();
    println!(
        "{} questions ({tool_cases} need a tool, {} need none), tools: {}; {} thread(s), greedy\n",
        cases.len(),
        cases.len() - tool_cases,
        tools
            .iter()
            .map(|t| t.name.as_str())
            .collect::<Vec<_>>()
            .join(", "),
        options.threads
    );
    let mut rows = Vec::new();
    for path in &options.models {
        let loaded = LlamaModel::load(path, LlamaConfig::default().threads(options.threads))?;
        let file = path
            .file_name()
            .map_or_else(String::new, |f| f.to_string_lossy().into_owned());
        for style in &options.styles {
            let row = evaluate(&loaded, &file, style, &cases, &tools, &options).await;
            println!("{row}");
            rows.push(row);
        }
    }
    println!(
        "\n| model | prompt style | questions | right tool | fully right arguments | no-tool precision | no-tool recall | median s/question | prompt tokens/s | generation tokens/s |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|");
    for row in rows {
        println!("{row}");
    }
    Ok(())
}

/// One candidate: the loaded model with `style`'s settings asked every case; its row of the
/// table (printing each question's result with `-v`).
async fn evaluate(
    loaded: &LlamaModel,
    file: &str,
    style: &Style,
    cases: &[Case],
    tools: &[ToolDefinition],
    options: &Options,
) -> String {
    let config = LlamaConfig::default().threads(options.threads);
    let config = if style.name == "default" {
        config
    } else {
        config
            .tool_format(style.format)
            .tool_selection(style.selection)
            .tool_examples(style.examples)
            .calibrate_tool_choice(style.calibrate)
    };
    let model = loaded.with_config(config);
    let before = model.speed_totals();
    let mut tally = Tally::default();
    for case in cases {
        ask(&model, style, case, tools, options.verbose, &mut tally).await;
    }
    let mut speed = model.speed_totals();
    speed.prompt_tokens -= before.prompt_tokens;
    speed.prompt_time -= before.prompt_time;
    speed.output_tokens -= before.output_tokens;
    speed.generation_time = speed.generation_time.saturating_sub(before.generation_time);
    format!(
        "| {file} | {} | {} | {:.0}% | {:.0}% | {:.0}% | {:.0}% | {:.2} | {:.0} | {:.0} |{}",
        style.name,
        options.set,
        percent(tally.right_tool, tally.tool_questions),
        percent(tally.right_args, tally.tool_questions),
        percent(tally.right_none, tally.answered_without),
        percent(tally.right_none, tally.none_questions),
        median(&mut tally.seconds),
        speed.prompt_tokens_per_second(),
        speed.generation_tokens_per_second(),
        if tally.errors > 0 {
            format!(" {} errors", tally.errors)
        } else {
            String::new()
        }
    )
}

/// Asks `case`'s question in one model step and scores the call it got into `tally`: the
/// right tool, fully right arguments, or rightly none; with `verbose`, prints the result.
async fn ask(
    model: &LlamaModel,
    style: &Style,
    case: &Case,
    tools: &[ToolDefinition],
    verbose: bool,
    tally: &mut Tally,
) {
    let req = ModelRequest::new(vec![Message::user(case.question)])
        .instruction("你是一个全能助手。")
        .tools(tools.to_vec())
        // What is scored is the choice and the arguments; answers are cut short.
        .max_tokens(48);
    let started = Instant::now();
    let result = model.generate(&req).await;
    tally.seconds.push(started.elapsed().as_secs_f64());
    let (name, arguments) = match &result {
        Ok(response) => match response.message.tool_calls().next() {
            Some(call) => (
                Some(call.name.clone()),
                serde_json::from_str::<Value>(&call.arguments).unwrap_or(json!({})),
            ),
            None => (None, json!({})),
        },
        Err(_) => {
            tally.errors += 1;
            (Some("<error>".to_owned()), json!({}))
        }
    };
    let tool_ok = name.as_deref() == case.tool;
    tally.answered_without += usize::from(name.is_none());
    let args_ok = tool_ok
        && case
            .args
            .iter()
            .all(|(key, want)| matches(want, arguments.get(key)));
    match case.tool {
        Some(_) => {
            tally.tool_questions += 1;
            tally.right_tool += usize::from(tool_ok);
            tally.right_args += usize::from(args_ok);
        }
        None => {
            tally.none_questions += 1;
            tally.right_none += usize::from(tool_ok);
        }
    }
    if verbose {
        let mark = if args_ok {
            "ok "
        } else if tool_ok {
            "arg"
        } else {
            "BAD"
        };
        let got = match (&result, &name) {
            (Err(e), _) => format!("error: {e}"),
            (Ok(_), Some(n)) => format!("{n} {arguments}"),
            (Ok(r), None) => format!("answer {:?}", r.message.text()),
        };
        println!("  [{}] {mark} {} → {got}", style.name, case.question);
    }
}
