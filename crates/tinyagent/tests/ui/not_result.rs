use tinyagent::tool;

/// Says hello.
#[tool]
async fn hello(name: String) -> String {
    format!("hello, {name}")
}

fn main() {}
