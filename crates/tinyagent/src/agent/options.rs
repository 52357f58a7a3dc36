//! How a run applies its invocation's [`RunOptions`] to its first request.

use crate::model::{Model, ModelRequest, RunOptions, ToolChoice};

/// Applies `options` to the run's first request (and whether its calls may run at once); the
/// option that cannot apply and why, if one cannot.
pub(crate) fn apply(
    options: &RunOptions,
    model: &dyn Model,
    req: &mut ModelRequest,
    parallel: &mut bool,
) -> Result<(), (&'static str, String)> {
    options
        .check(model)
        .map_err(|(option, problem)| (option.name(), problem))?;
    if let Some(ToolChoice::Tool(name)) = &options.tool_choice {
        if !req.tools.iter().any(|t| &t.name == name) {
            let offered: Vec<&str> = req.tools.iter().map(|t| t.name.as_str()).collect();
            return Err((
                "tool_choice",
                format!(
                    "tool_choice names the tool {name:?}, which this agent does not have; its \
                     tools are: {}",
                    if offered.is_empty() {
                        "none".to_owned()
                    } else {
                        offered.join(", ")
                    }
                ),
            ));
        }
    }
    if let Some(max) = options.max_tokens {
        // Never raised: the lower of the two.
        req.max_tokens = Some(req.max_tokens.map_or(max, |own| own.min(max)));
    }
    req.sampling.overlay(&options.sampling);
    if let Some(choice) = &options.tool_choice {
        req.tool_choice = Some(choice.clone());
    }
    if let Some(format) = &options.response_format {
        req.response_format = Some(format.clone());
    }
    if let Some(allowed) = options.parallel_tool_calls {
        *parallel = *parallel && allowed;
    }
    Ok(())
}
