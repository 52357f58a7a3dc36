use tinyagent::{ToolError, tool};

struct Shop;

impl Shop {
    /// Finds an order.
    #[tool]
    async fn find(&self, id: u64) -> Result<String, ToolError> {
        Ok(id.to_string())
    }
}

fn main() {}
