//! `tinyagent eval`: each question of a file once, one model step, then the figures.

use std::io::{self, Write};
use std::path::PathBuf;
use std::sync::Arc;

use tinyagent::model::ToolDefinition;
use tinyagent::{Model, Tool};

use crate::cli::ToolArgs;
use crate::error::CliError;
use crate::eval::{Case, Outcome};
use crate::setup;

/// The options of `tinyagent eval`.
pub struct EvalArgs {
    /// The JSONL file of questions.
    pub file: PathBuf,
    /// Only this part of it.
    pub part: Option<String>,
    /// Where to write the JSON report too.
    pub report: Option<PathBuf>,
    /// The JSON report on standard output instead of the tables.
    pub json: bool,
    /// The instruction, replacing the default.
    pub instruction: Option<String>,
    /// Which model answers.
    pub model: crate::cli::ModelArgs,
    /// Which tools are offered.
    pub tools: ToolArgs,
    /// When they are searched.
    pub search: crate::cli::SearchArgs,
}

/// How many tokens an answer may take in `eval` unless `--max-tokens` says otherwise: what
/// is measured is the choice and the arguments.
const EVAL_MAX_TOKENS: u32 = 64;

/// `tinyagent eval`: each question of the file once, one model step, then the figures.
pub async fn eval(args: EvalArgs) -> Result<(), CliError> {
    let cases = read_part(&args)?;
    let choice = setup::choose_model(&args.model, |name| std::env::var(name).ok())?;
    let fallbacks = setup::choose_fallbacks(&args.model, |name| std::env::var(name).ok())?;
    let server = match &choice {
        setup::ModelChoice::Server { base_url, .. } => Some(base_url.clone()),
        setup::ModelChoice::Local { .. } => None,
    };
    let listed = setup::all_tools(&args.tools).await?;
    let tools: Vec<Arc<dyn Tool>> = listed.tools.iter().map(|t| t.tool.clone()).collect();
    let definitions: Vec<ToolDefinition> = tools.iter().map(|t| t.definition()).collect();
    check_offered(&cases, &definitions)?;
    let model = setup::load_with_fallbacks(&choice, &fallbacks).await?;
    let search = setup::eval_search(&args.search, &tools);
    let asking = Asking {
        model: &model,
        instruction: args
            .instruction
            .as_deref()
            .unwrap_or(setup::DEFAULT_INSTRUCTION),
        max_tokens: args.model.max_tokens.unwrap_or(EVAL_MAX_TOKENS),
        definitions: &definitions,
        search: search.as_ref(),
    };
    announce(&cases, &asking);
    let mut outcomes = Vec::with_capacity(cases.len());
    for case in &cases {
        let outcome = tokio::select! {
            outcome = asking.ask(case) => outcome,
            _ = tokio::signal::ctrl_c() => return Err(CliError::interrupted()),
        };
        // A model that cannot be reached fails every question the same way: stop at once.
        if let Some(error) = &outcome.error {
            if outcomes.is_empty() && server.is_some() {
                return Err(CliError::failure(
                    "model",
                    format!("the model failed on the first question: {error}"),
                ));
            }
        }
        eprintln!("{}", crate::eval::outcome_line(&outcome));
        outcomes.push(outcome);
    }
    drop(listed);
    write_report(&args, model.name(), &definitions, &outcomes)
}

/// The questions of the file, or of the part asked for.
fn read_part(args: &EvalArgs) -> Result<Vec<Case>, CliError> {
    let mut cases = crate::eval::read_cases(&args.file)?;
    if let Some(part) = &args.part {
        cases.retain(|c| c.part.as_deref() == Some(part.as_str()));
        if cases.is_empty() {
            return Err(CliError::usage(format!(
                "no question of {} is in part {part:?}",
                args.file.display()
            )));
        }
    }
    Ok(cases)
}

/// A question whose tool is not offered would count against the model: say so first.
fn check_offered(cases: &[Case], definitions: &[ToolDefinition]) -> Result<(), CliError> {
    let Some(case) = cases.iter().find(|c| {
        c.tool
            .as_ref()
            .is_some_and(|tool| definitions.iter().all(|d| &d.name != tool))
    }) else {
        return Ok(());
    };
    Err(CliError::usage(format!(
        "{} ({}) expects the tool `{}`, which the options do not offer (offered: {})",
        case.id.as_deref().unwrap_or_default(),
        case.question,
        case.tool.as_deref().unwrap_or_default(),
        names(definitions)
    ))
    .with_hint("offer it with --tools (such as --tools all) or --mcp"))
}

fn names(definitions: &[ToolDefinition]) -> String {
    definitions
        .iter()
        .map(|t| t.name.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

/// How each question is asked.
struct Asking<'a> {
    model: &'a Arc<dyn Model>,
    instruction: &'a str,
    max_tokens: u32,
    /// Every tool offered.
    definitions: &'a [ToolDefinition],
    /// The search that picks a question's tools, when they are too many.
    search: Option<&'a tinyagent::tools::ToolSearch>,
}

impl Asking<'_> {
    async fn ask(&self, case: &Case) -> Outcome {
        let offered = match self.search {
            Some(search) => crate::eval::searched(search, case).await,
            None => self.definitions.to_vec(),
        };
        crate::eval::ask(
            self.model,
            &offered,
            self.instruction,
            self.max_tokens,
            case,
        )
        .await
    }
}

/// What is measured, on standard error.
fn announce(cases: &[Case], asking: &Asking<'_>) {
    let need = cases.iter().filter(|c| c.tool.is_some()).count();
    eprintln!(
        "{} questions ({need} need a tool, {} none) for {}, tools: {}{}",
        cases.len(),
        cases.len() - need,
        asking.model.name(),
        names(asking.definitions),
        if asking.search.is_some() {
            " (searched: each question is offered the most relevant, and search_tools and call_tool)"
        } else {
            ""
        }
    );
}

/// The report: to `--report`'s file, and as tables (or JSON with `--json`) on standard output.
fn write_report(
    args: &EvalArgs,
    model: &str,
    definitions: &[ToolDefinition],
    outcomes: &[Outcome],
) -> Result<(), CliError> {
    let report = crate::eval::report(model, definitions, outcomes);
    if let Some(path) = &args.report {
        let text = serde_json::to_string_pretty(&report).unwrap_or_default();
        std::fs::write(path, text + "\n").map_err(|e| {
            CliError::failure("report", format!("cannot write {}: {e}", path.display()))
        })?;
    }
    let mut out = io::stdout().lock();
    let written = if args.json {
        writeln!(out, "{report}")
    } else {
        let summaries = crate::eval::summaries(outcomes);
        write!(
            out,
            "\n{}\n{}",
            crate::eval::summary_table(&summaries),
            crate::eval::confusion_table(outcomes)
        )
    };
    written.or_else(crate::error::output_error)
}
