use tinyagent::{ToolError, tool};

#[tool(read_only)]
async fn add(a: f64, b: f64) -> Result<f64, ToolError> {
    Ok(a + b)
}

fn main() {}
