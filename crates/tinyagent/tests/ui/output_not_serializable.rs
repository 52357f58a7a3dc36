use tinyagent::{ToolError, tool};

struct Handle {
    id: u64,
}

/// Opens a handle.
#[tool]
async fn open(id: u64) -> Result<Handle, ToolError> {
    Ok(Handle { id })
}

fn main() {}
