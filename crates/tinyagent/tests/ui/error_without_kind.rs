use tinyagent::tool;

#[derive(Debug)]
struct BackendDown;

impl std::fmt::Display for BackendDown {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the backend is down")
    }
}

impl std::error::Error for BackendDown {}

/// Reads a value.
#[tool]
async fn read(key: String) -> Result<String, BackendDown> {
    Err(BackendDown).map(|()| key)
}

fn main() {}
