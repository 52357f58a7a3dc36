//! The agent the options describe: its model (with fallbacks), tools (searched when there are
//! many), limits, prices and context policy.

use std::sync::Arc;

use tinyagent::agent::ContextPolicy;
use tinyagent::tools::middleware::{Approval, ApprovalLayer, ApprovalRequest, approval_fn};
use tinyagent::{Budget, LlmAgent, Model, Tool};
use tinyagent_mcp::McpToolset;
use tinyagent_openai::DEFAULT_MAX_TOKENS;

use crate::cli::AgentArgs;
use crate::error::CliError;

use super::model_choice::{ModelChoice, choose_model, make_model};
use super::model_spec::{choose_fallbacks, choose_summarizer};
use super::prices::{check_priced, price_table};
use super::sources::{a2a_tools, builtin_tools, connect_toolsets};
use super::tool_search::{ToolSource, searched_tools};

/// The agent's name, the tutorial's.
pub const AGENT_NAME: &str = "smart-assistant";

/// The default instruction: the tutorial's. (Kept short: the embedded model is very small, and
/// a longer instruction steers it away from the right tool.)
pub const DEFAULT_INSTRUCTION: &str = "你是一个全能助手。";

/// The agent the options describe, with its model's server URL (when it is one).
pub struct Assembled {
    /// The agent.
    pub agent: LlmAgent,
    /// The model server's base URL, for error messages; `None` for the embedded model.
    pub server: Option<String>,
    /// The names of the static tools (MCP tools are resolved per run).
    pub tool_names: Vec<String>,
}

/// Makes the chosen model; loading a GGUF file blocks, so it runs on the blocking pool.
pub async fn load_model(choice: &ModelChoice) -> Result<Arc<dyn Model>, CliError> {
    match choice {
        ModelChoice::Local { .. } => {
            let choice = choice.clone();
            tokio::task::spawn_blocking(move || make_model(&choice))
                .await
                .map_err(|e| {
                    CliError::failure("model_file", format!("loading the model failed: {e}"))
                })?
        }
        ModelChoice::Server { .. } => make_model(choice),
    }
}

/// `model` behind a circuit breaker with the default thresholds.
fn guarded(model: Arc<dyn Model>) -> Arc<dyn Model> {
    Arc::new(tinyagent::model::CircuitBreakerModel::new(model))
}

/// The main model, followed by its fallbacks when there are any.
pub async fn load_with_fallbacks(
    choice: &ModelChoice,
    fallbacks: &[ModelChoice],
) -> Result<Arc<dyn Model>, CliError> {
    let model = load_model(choice).await?;
    if fallbacks.is_empty() {
        return Ok(model);
    }
    // Each model behind a breaker: one that keeps failing is skipped at once for a while.
    let mut models = vec![guarded(model)];
    for fallback in fallbacks {
        models.push(guarded(load_model(fallback).await?));
    }
    Ok(Arc::new(tinyagent::model::FallbackModel::new(models)))
}

/// Builds the agent: model, built-in tools, MCP toolsets as resolvers.
pub async fn assemble(args: &AgentArgs) -> Result<Assembled, CliError> {
    assemble_named(args, AGENT_NAME).await
}

/// The models the options name, chosen before anything is started.
struct Models {
    main: ModelChoice,
    fallbacks: Vec<ModelChoice>,
    /// `--summarizer`'s model, when it is another than the main one.
    summarizer: Option<ModelChoice>,
}

fn choose_models(args: &AgentArgs) -> Result<Models, CliError> {
    let env = |name: &str| std::env::var(name).ok();
    let main = choose_model(&args.model, env)?;
    let fallbacks = choose_fallbacks(&args.model, env)?;
    let summarizer = match args.context.summarizer.as_deref().map(str::trim) {
        None | Some("off") => None,
        Some(text) => Some(choose_summarizer(text, &args.model, env)?).filter(|s| *s != main),
    };
    Ok(Models {
        main,
        fallbacks,
        summarizer,
    })
}

/// Builds the agent under a name of the caller's choosing.
pub async fn assemble_named(args: &AgentArgs, name: &str) -> Result<Assembled, CliError> {
    let mut tools = builtin_tools(&args.tools)?;
    tools.extend(a2a_tools(&args.tools).await?);
    let models = choose_models(args)?;
    let prices = price_table(&args.model, |name| std::env::var(name).ok())?;
    if args.max_cost.is_some() {
        let all: Vec<&ModelChoice> = std::iter::once(&models.main)
            .chain(&models.fallbacks)
            .chain(&models.summarizer)
            .collect();
        check_priced(&prices, &all)?;
    }
    // Tool servers first: a broken one fails before a model is loaded.
    let toolsets = connect_toolsets(&args.tools).await?;
    let model = load_with_fallbacks(&models.main, &models.fallbacks).await?;
    let server = match &models.main {
        ModelChoice::Server { base_url, .. } => Some(base_url.clone()),
        ModelChoice::Local { .. } => None,
    };
    let mut tool_names: Vec<String> = tools.iter().map(|t| t.name().to_owned()).collect();
    for toolset in &toolsets {
        if let Ok(listed) = toolset.tools().await {
            tool_names.extend(listed.iter().map(|t| t.name().to_owned()));
        }
    }
    if let Some(unknown) = args
        .confirm
        .iter()
        .find(|t| *t != "all" && !tool_names.contains(t))
    {
        return Err(CliError::usage(format!(
            "--confirm {unknown}: there is no tool of that name; the tools are: {}",
            tool_names.join(", ")
        )));
    }
    let mut builder = LlmAgent::builder(name)
        .description("一个全能助手")
        .model(model)
        .instruction(args.instruction.as_deref().unwrap_or(DEFAULT_INSTRUCTION))
        .max_steps(usize::from(args.max_steps))
        .answer_at_step_limit(args.answer_at_step_limit)
        .prices(prices);
    if let Some(max_cost) = args.max_cost {
        builder = builder.budget(Budget::default().max_cost(max_cost));
    }
    // A server gets a token limit always, so a cut reply names it; the embedded model only
    // when one is asked for.
    let max_tokens = match &models.main {
        ModelChoice::Server { .. } => Some(args.model.max_tokens.unwrap_or(DEFAULT_MAX_TOKENS)),
        ModelChoice::Local { .. } => args.model.max_tokens,
    };
    if let Some(max_tokens) = max_tokens {
        builder = builder.max_tokens(max_tokens);
    }
    if let Some(policy) = context_policy(args, models.summarizer.as_ref()).await? {
        builder = builder.context_policy(policy);
    }
    builder = offer_tools(builder, args, tools, toolsets, tool_names.len());
    let agent = builder.build().map_err(|e| CliError::failure("agent", e))?;
    Ok(Assembled {
        agent,
        server,
        tool_names,
    })
}

/// The tools on the agent: all of them in every call, or, when there are more than
/// `--tool-search` allows, through a search; `--confirm`'s approval around each tool either way.
fn offer_tools(
    mut builder: tinyagent::agent::LlmAgentBuilder,
    args: &AgentArgs,
    tools: Vec<Arc<dyn Tool>>,
    toolsets: Vec<McpToolset>,
    count: usize,
) -> tinyagent::agent::LlmAgentBuilder {
    let confirm = confirmation(&args.confirm);
    let sources = ToolSource {
        tools,
        toolsets,
        count,
    };
    match searched_tools(&args.search, sources, confirm.clone()) {
        Ok(search) => builder.tool_resolver(search),
        Err(sources) => {
            builder = builder.tools(sources.tools);
            for toolset in sources.toolsets {
                builder = builder.tool_resolver(toolset);
            }
            if let Some(layer) = confirm {
                builder = builder.middleware([layer.into()]);
            }
            builder
        }
    }
}

/// The context policy of `--context-budget`, with its summarizer loaded.
async fn context_policy(
    args: &AgentArgs,
    summarizer: Option<&ModelChoice>,
) -> Result<Option<ContextPolicy>, CliError> {
    let Some(budget) = args.context.context_budget else {
        return Ok(None);
    };
    let mut policy = ContextPolicy::new(budget);
    if let Some(n) = args.context.keep_tool_outputs {
        policy = policy.keep_tool_outputs(n);
    }
    if args.context.summarizer.as_deref().map(str::trim) == Some("off") {
        policy = policy.summarize(false);
    } else if let Some(choice) = summarizer {
        policy = policy.summarizer(load_model(choice).await?);
    }
    Ok(Some(policy))
}

/// The approval layer that `--confirm` asks for: the named tools' calls (with `all`, every
/// call of a tool not marked read-only) wait for a person's decision.
pub fn confirmation(tools: &[String]) -> Option<ApprovalLayer> {
    if tools.is_empty() {
        return None;
    }
    let all = tools.iter().any(|t| t == "all");
    let named: Arc<[String]> = tools.iter().filter(|t| *t != "all").cloned().collect();
    Some(ApprovalLayer::new(approval_fn(
        move |req: ApprovalRequest| {
            let asks = (all && !req.hints.read_only) || named.iter().any(|t| **t == *req.tool);
            async move {
                if asks {
                    Approval::defer(format!("{} runs only once you approve it", req.tool))
                } else {
                    Approval::Approve
                }
            }
        },
    )))
}
