use tinyagent::{ToolError, tool};

#[derive(serde::Deserialize)]
struct Point {
    x: f64,
    y: f64,
}

/// The distance of a point from the origin.
#[tool]
async fn norm(point: Point) -> Result<f64, ToolError> {
    Ok(point.x.hypot(point.y))
}

fn main() {}
