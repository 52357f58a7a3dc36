//! [`tool_call`](../tool_call.rs) on mimalloc: the same groups, with the allocator a server
//! running many agents should use (see `many_runs`).
//!
//! ```text
//! cargo bench -p tinyagent --bench tool_call_mimalloc
//! ```

#[path = "tool_call_shared/mod.rs"]
mod shared;

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    shared::main();
}
