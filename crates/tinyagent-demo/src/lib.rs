//! The demo: four tools (weather, calculator, current time, translator) and the smart
//! assistant that uses them.
//!
//! The tools are what the command-line program, the MCP example server and the examples offer
//! ([`all_tools`]); two of them give canned data and say so in their descriptions.
//! [`run_agent_demo`] is the smart assistant: an agent with the four tools, asked about
//! Beijing's weather and a calculation, printing every event of both runs. The `agent_demo`
//! example runs it on the embedded local model, or on the model the environment configures
//! (see the README's "Use a real model"):
//!
//! ```text
//! cargo run -p tinyagent-demo --example agent_demo
//! OPENAI_API_KEY=sk-... cargo run -p tinyagent-demo --example agent_demo
//! OPENAI_BASE_URL=http://localhost:11434/v1 OPENAI_MODEL=qwen2.5:7b \
//!     cargo run -p tinyagent-demo --example agent_demo
//! ```
//!
//! With `default-features = false` the crate is the tools and the runner only, without the
//! embedded model (the `local` feature, which builds llama.cpp).

use std::io::{self, Write};
use std::sync::Arc;

use futures::StreamExt;
use tinyagent::{
    Agent, AgentError, Event, Invocation, LlmAgent, Model, Session, Tool, ToolCall, ToolResult,
};

mod tools;

pub use tools::{
    CalcInput, CalcOutput, Operation, TIME_DESCRIPTION, TIMEZONE_PATTERN, TRANSLATOR_DESCRIPTION,
    TRANSLATOR_MESSAGE_DESCRIPTION, TemperatureUnit, WEATHER_DESCRIPTION, WeatherInput,
    WeatherOutput, all_tools, calculate, calculate_sync, calculator_tool, format_time, get_weather,
    time_tool, translator_tool, weather_tool,
};

/// The questions the demo asks, in order.
pub const DEMO_QUESTIONS: [&str; 2] = ["北京天气怎么样？", "帮我算一下 7 乘以 8 等于多少。"];

/// The tutorial's agent instruction (`WithInstruction("你是一个全能助手。")`).
pub const DEMO_INSTRUCTION: &str = "你是一个全能助手。";

/// Why the demo failed.
#[derive(Debug)]
#[non_exhaustive]
pub enum DemoError {
    /// The agent failed (the model could not be reached, for example).
    Agent(AgentError),
    /// Writing the output failed.
    Io(io::Error),
}

impl std::fmt::Display for DemoError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Agent(e) => write!(f, "{e}"),
            Self::Io(e) => write!(f, "could not write the output: {e}"),
        }
    }
}

impl std::error::Error for DemoError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Agent(e) => Some(e),
            Self::Io(e) => Some(e),
        }
    }
}

impl From<AgentError> for DemoError {
    fn from(e: AgentError) -> Self {
        Self::Agent(e)
    }
}

impl From<io::Error> for DemoError {
    fn from(e: io::Error) -> Self {
        Self::Io(e)
    }
}

/// Builds TinyAgent's `smart-assistant` on `model` with `tools` (the tutorial gives it the four
/// demo tools, [`all_tools`]).
pub fn smart_assistant(
    model: Arc<dyn Model>,
    tools: Vec<Arc<dyn Tool>>,
) -> Result<LlmAgent, AgentError> {
    LlmAgent::builder("smart-assistant")
        .description("一个全能助手")
        .model(model)
        .instruction(DEMO_INSTRUCTION)
        .tools(tools)
        .build()
}

/// Runs the demo: asks the smart assistant each of [`DEMO_QUESTIONS`], each in a session of
/// its own (the weather conversation does not steer the arithmetic), writing every event to
/// `out`, and returns the answers.
///
/// ```
/// use std::sync::Arc;
/// use tinyagent::testing::{ScriptedModel, reply};
///
/// let model = Arc::new(ScriptedModel::new([reply::text("晴。"), reply::text("56。")]));
/// let mut out = Vec::new();
/// let answers = tokio_test::block_on(tinyagent_demo::run_agent_demo(model, &mut out))?;
/// assert_eq!(answers, ["晴。", "56。"]);
/// assert!(String::from_utf8(out)?.contains("北京天气怎么样？"));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub async fn run_agent_demo(
    model: Arc<dyn Model>,
    out: &mut impl Write,
) -> Result<Vec<String>, DemoError> {
    run_agent_demo_with_tools(model, all_tools(), out).await
}

/// The demo's default model: the embedded local model (see
/// [`tinyagent_llama::LlamaModel::default_model`]), with greedy decoding so that every run on a machine gives
/// the same answers, on as many threads as the machine has cores (at most 4: more do not
/// make a small model faster), saving the prompts it reads where
/// [`default_prompt_cache_dir`](tinyagent_llama::LlamaConfig::default_prompt_cache_dir) says
/// (so a second run reads only its questions), offered the four demo tools.
///
/// # Errors
///
/// When the model file is missing or cannot be loaded; the message says how to get it.
#[cfg(feature = "local")]
pub fn local_demo_model()
-> Result<(tinyagent_llama::LlamaModel, Vec<Arc<dyn Tool>>), tinyagent::ModelError> {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let threads = u32::try_from(cores.clamp(1, 4)).unwrap_or(1);
    let mut config = tinyagent_llama::LlamaConfig::default().threads(threads);
    if let Some(dir) = tinyagent_llama::LlamaConfig::default_prompt_cache_dir() {
        config = config.prompt_cache_dir(dir);
    }
    let model = tinyagent_llama::LlamaModel::default_model_with(config)?;
    Ok((model, all_tools()))
}

/// One question of the demo and what happened: the tool calls, their results, the answer.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct DemoTurn {
    /// The question asked.
    pub question: String,
    /// The tool calls the model made, in order.
    pub calls: Vec<ToolCall>,
    /// The tools' results, in order.
    pub results: Vec<ToolResult>,
    /// The final answer.
    pub answer: String,
}

/// [`run_agent_demo`] with another set of tools, returning the answers.
pub async fn run_agent_demo_with_tools(
    model: Arc<dyn Model>,
    tools: Vec<Arc<dyn Tool>>,
    out: &mut impl Write,
) -> Result<Vec<String>, DemoError> {
    let turns = run_demo_turns(model, tools, out).await?;
    Ok(turns.into_iter().map(|t| t.answer).collect())
}

/// The demo itself: asks [`DEMO_QUESTIONS`] with `tools` offered, each question in a session
/// of its own, writes every event to `out`, and returns what happened on each question.
pub async fn run_demo_turns(
    model: Arc<dyn Model>,
    tools: Vec<Arc<dyn Tool>>,
    out: &mut impl Write,
) -> Result<Vec<DemoTurn>, DemoError> {
    let agent = smart_assistant(model, tools)?;
    let mut answers = Vec::new();
    writeln!(out, "========================================")?;
    writeln!(
        out,
        "TinyAgent 智能助手演示（模型：{}）",
        agent.model().name()
    )?;
    writeln!(out, "========================================")?;
    for question in DEMO_QUESTIONS {
        writeln!(out, "\n用户: {question}")?;
        let mut events = agent.run(Invocation::new(Session::new(), question));
        let mut answer = None;
        let mut calls = Vec::new();
        let mut results = Vec::new();
        let mut streaming = false;
        while let Some(event) = events.next().await {
            let event = event?;
            if streaming && !matches!(event, Event::TextDelta(_)) {
                writeln!(out)?;
                streaming = false;
            }
            match event {
                Event::TextDelta(text) => {
                    if !streaming {
                        write!(out, "助手（流式）: ")?;
                        streaming = true;
                    }
                    write!(out, "{text}")?;
                    out.flush()?;
                }
                Event::Usage {
                    step,
                    usage,
                    finish_reason,
                } => writeln!(
                    out,
                    "  [第 {step} 步] tokens: 输入 {} / 输出 {}，结束原因: {finish_reason:?}",
                    usage.input_tokens.unwrap_or(0),
                    usage.output_tokens.unwrap_or(0)
                )?,
                Event::Message(_) => {}
                Event::ToolCallStarted { call } => {
                    writeln!(out, "  → 调用工具 {}({})", call.name, call.arguments)?;
                    calls.push(call);
                }
                Event::ToolCallFinished {
                    result, duration, ..
                } => {
                    let status = if result.is_error { "失败" } else { "结果" };
                    writeln!(
                        out,
                        "  ← {} {status}（{:.1?}）: {}",
                        result.name, duration, result.content
                    )?;
                    results.push(result);
                }
                Event::Finished {
                    answer: text,
                    usage,
                    steps,
                } => {
                    writeln!(out, "助手: {text}")?;
                    writeln!(
                        out,
                        "  （共 {steps} 步，tokens: 输入 {} / 输出 {}）",
                        usage.input_tokens.unwrap_or(0),
                        usage.output_tokens.unwrap_or(0)
                    )?;
                    answer = Some(text);
                }
                _ => {}
            }
        }
        match answer {
            Some(answer) => answers.push(DemoTurn {
                question: question.to_owned(),
                calls,
                results,
                answer,
            }),
            None => {
                return Err(AgentError::NoAnswer {
                    agent: agent.name().to_owned(),
                }
                .into());
            }
        }
    }
    writeln!(out, "\n========================================")?;
    writeln!(out, "演示完毕！")?;
    writeln!(out, "========================================")?;
    Ok(answers)
}

/// The README's examples, compiled and run as doc tests.
#[cfg(doctest)]
#[doc = include_str!("../../../README.md")]
pub struct ReadmeDoctests;

/// The guides' examples, compiled and run as doc tests.
#[cfg(doctest)]
pub mod guides {
    #[doc = include_str!("../../../docs/sessions.md")]
    pub struct Sessions;
    #[doc = include_str!("../../../docs/providers.md")]
    pub struct Providers;
    #[doc = include_str!("../../../docs/mcp.md")]
    pub struct Mcp;
    #[doc = include_str!("../../../docs/long-runs.md")]
    pub struct LongRuns;
}
