use tinyagent::{ToolError, tool};

/// Gets the weather.
#[tool(name = "get weather")]
async fn weather(city: String) -> Result<String, ToolError> {
    Ok(city)
}

fn main() {}
