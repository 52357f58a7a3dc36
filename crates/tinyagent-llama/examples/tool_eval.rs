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

use std::time::Instant;

use serde_json::{Value, json};
use tinyagent::{Message, Model, ModelRequest, model::ToolDefinition};
use tinyagent_llama::{LlamaConfig, LlamaModel, ToolFormat, ToolSelection, find_default_model};

/// What an argument must be.
#[derive(Debug, Clone)]
enum Want {
    /// Equal to one of these strings (case and surrounding space ignored).
    Text(&'static [&'static str]),
    /// This number.
    Number(f64),
    /// Contains this text (case ignored).
    Contains(&'static str),
    /// Absent, or equal to this string.
    AbsentOr(&'static str),
}

/// One question and the call it needs (`None`: no tool).
struct Case {
    question: &'static str,
    tool: Option<&'static str>,
    args: Vec<(&'static str, Want)>,
}

fn call(question: &'static str, tool: &'static str, args: Vec<(&'static str, Want)>) -> Case {
    Case {
        question,
        tool: Some(tool),
        args,
    }
}

fn none(question: &'static str) -> Case {
    Case {
        question,
        tool: None,
        args: Vec::new(),
    }
}

fn weather(
    question: &'static str,
    city: &'static [&'static str],
    unit: Option<&'static str>,
) -> Case {
    let unit = match unit {
        Some(u) => Want::Text(match u {
            "fahrenheit" => &["fahrenheit"],
            _ => &["celsius"],
        }),
        None => Want::AbsentOr("celsius"),
    };
    call(
        question,
        "get_weather",
        vec![("city", Want::Text(city)), ("unit", unit)],
    )
}

fn calc(question: &'static str, operation: &'static str, a: f64, b: Option<f64>) -> Case {
    let operation = Want::Text(match operation {
        "add" => &["add"],
        "subtract" => &["subtract"],
        "multiply" => &["multiply"],
        "divide" => &["divide"],
        "sqrt" => &["sqrt"],
        _ => &["power"],
    });
    let mut args = vec![("operation", operation), ("a", Want::Number(a))];
    if let Some(b) = b {
        args.push(("b", Want::Number(b)));
    }
    call(question, "calculator", args)
}

fn time(question: &'static str, zone: &'static [&'static str]) -> Case {
    call(
        question,
        "get_current_time",
        vec![("timezone", Want::Text(zone))],
    )
}

fn translate(question: &'static str, text: &'static str) -> Case {
    call(
        question,
        "translator",
        vec![("message", Want::Contains(text))],
    )
}

/// The tuning part (the defaults were chosen on it): weather for many cities and both units,
/// every calculator operation, time zones by city name, the translator, and questions that
/// need no tool.
fn cases() -> Vec<Case> {
    vec![
        weather("北京天气怎么样？", &["北京"], None),
        weather("上海今天的天气如何？", &["上海"], None),
        weather("广州现在下雨吗？", &["广州"], None),
        weather(
            "深圳天气怎么样？用华氏度告诉我。",
            &["深圳"],
            Some("fahrenheit"),
        ),
        weather("杭州的气温是多少摄氏度？", &["杭州"], Some("celsius")),
        weather("成都明天冷不冷？", &["成都"], None),
        weather("查一下南京的天气", &["南京"], None),
        weather(
            "What is the weather in Beijing?",
            &["Beijing", "北京"],
            None,
        ),
        weather(
            "How is the weather in Shanghai today?",
            &["Shanghai", "上海"],
            None,
        ),
        weather(
            "What's the weather like in London, in Fahrenheit?",
            &["London", "伦敦"],
            Some("fahrenheit"),
        ),
        weather("Is it raining in Paris?", &["Paris", "巴黎"], None),
        weather(
            "Tell me the temperature in Tokyo in celsius.",
            &["Tokyo", "东京"],
            Some("celsius"),
        ),
        weather("Weather in New York please", &["New York", "纽约"], None),
        weather(
            "Do I need an umbrella in Seattle today?",
            &["Seattle", "西雅图"],
            None,
        ),
        calc("帮我算一下 7 乘以 8 等于多少。", "multiply", 7.0, Some(8.0)),
        calc("3 加 5 等于几？", "add", 3.0, Some(5.0)),
        calc("100 减去 37 是多少？", "subtract", 100.0, Some(37.0)),
        calc("144 除以 12 等于多少？", "divide", 144.0, Some(12.0)),
        calc("81 的平方根是多少？", "sqrt", 81.0, None),
        calc("2 的 10 次方是多少？", "power", 2.0, Some(10.0)),
        calc("What is 12 plus 30?", "add", 12.0, Some(30.0)),
        calc("What is 9 minus 4?", "subtract", 9.0, Some(4.0)),
        calc("Calculate 6 times 7.", "multiply", 6.0, Some(7.0)),
        calc("What is 56 divided by 8?", "divide", 56.0, Some(8.0)),
        calc("What is the square root of 49?", "sqrt", 49.0, None),
        calc("What is 3 to the power of 4?", "power", 3.0, Some(4.0)),
        time("东京现在几点？", &["Asia/Tokyo"]),
        time("纽约现在是什么时间？", &["America/New_York"]),
        time("What time is it in London?", &["Europe/London"]),
        time("What is the current time in Shanghai?", &["Asia/Shanghai"]),
        time("现在巴黎几点了？", &["Europe/Paris"]),
        time(
            "What time is it now in Los Angeles?",
            &["America/Los_Angeles"],
        ),
        translate("把“你好，世界”翻译成英文。", "你好，世界"),
        translate("请翻译：今天天气很好", "今天天气很好"),
        translate("Translate \"good morning\" into Chinese.", "good morning"),
        translate(
            "How do you say \"thank you very much\" in Chinese?",
            "thank you very much",
        ),
        none("你好！"),
        none("你是谁？"),
        none("谢谢你的帮助。"),
        none("Hello! How are you?"),
        none("Tell me a short joke."),
        none("Write one sentence about spring."),
    ]
}

/// The reporting part: questions no default was tuned on (the tuning part is [`cases`]), new
/// wordings, cities and operations, and more that need no tool (greetings, thanks, small talk,
/// questions about the assistant, requests no offered tool serves).
fn reporting_cases() -> Vec<Case> {
    vec![
        weather("深圳现在多少度？", &["深圳"], None),
        weather("广州天气如何？", &["广州"], None),
        weather("伦敦今天天气怎么样？", &["伦敦", "London"], None),
        weather("Is it cold in Beijing today?", &["Beijing", "北京"], None),
        weather(
            "How warm is it in Shanghai, in Fahrenheit?",
            &["Shanghai", "上海"],
            Some("fahrenheit"),
        ),
        weather("Sydney weather right now?", &["Sydney", "悉尼"], None),
        calc("What is 15 divided by 3?", "divide", 15.0, Some(3.0)),
        calc("帮我算 25 加 17", "add", 25.0, Some(17.0)),
        calc("9 乘以 12 是多少？", "multiply", 9.0, Some(12.0)),
        calc("What is 2 to the power of 8?", "power", 2.0, Some(8.0)),
        calc("64 的平方根？", "sqrt", 64.0, None),
        time("首尔现在几点？", &["Asia/Seoul"]),
        time("What's the time in Berlin right now?", &["Europe/Berlin"]),
        translate("把“早上好”翻译成英文", "早上好"),
        none("早上好！"),
        none("谢谢！"),
        none("Thanks, that's all."),
        none("你能做什么？"),
        none("What's your name?"),
        none("晚安"),
        none("好的，明白了。"),
        none("Good morning!"),
        none("给我讲个笑话吧。"),
        none("用一句话介绍一下你自己。"),
        none("Can you write a haiku about the sea?"),
        none("不用了，谢谢。"),
        none("Bye!"),
        none("What is the capital of France?"),
        none("推荐一本好书。"),
        none("How are you today?"),
    ]
}

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
        .map(|t| ToolDefinition::from_tool(t.as_ref()))
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
            for case in &cases {
                let req = ModelRequest::new(vec![Message::user(case.question)])
                    .instruction("你是一个全能助手。")
                    .tools(tools.clone())
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
                if options.verbose {
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
            let mut speed = model.speed_totals();
            speed.prompt_tokens -= before.prompt_tokens;
            speed.prompt_time -= before.prompt_time;
            speed.output_tokens -= before.output_tokens;
            speed.generation_time = speed.generation_time.saturating_sub(before.generation_time);
            let row = format!(
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
            );
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
