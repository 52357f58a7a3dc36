use tinyagent::{ToolError, tool};

/// Adds two numbers.
#[tool]
fn add(a: f64, b: f64) -> Result<f64, ToolError> {
    Ok(a + b)
}

fn main() {}
