//! A tool's [`ToolDefinition`]: what a model is told of it. The definition is the model's
//! type; making one from a [`Tool`] is the tools' business, so the model layer does not depend
//! on them.

use super::handler::Tool;
use crate::model::ToolDefinition;

impl ToolDefinition {
    /// The definition of a tool.
    pub fn from_tool(tool: &dyn Tool) -> Self {
        Self {
            name: tool.name().to_owned(),
            description: tool.description().to_owned(),
            input_schema: tool.input_schema().clone(),
            title: tool.title().map(str::to_owned),
            output_schema: tool.output_schema().cloned(),
        }
    }
}
