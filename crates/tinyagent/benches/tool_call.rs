//! The cost of the tool path: raw `serde_json::from_str` + the function + `serde_json::to_string`
//! versus the same function called through a tool made by `tools::new_func`: by `Tool::call`
//! with the model's text, as the agent loop calls it (`call`), and by the text-in, text-out
//! shortcut `Tool::handle` (`new_func`), which boxes one more future.
//!
//! This binary runs on the system allocator (glibc's malloc on Linux); `tool_call_mimalloc` is
//! the same bench on mimalloc, the allocator `many_runs` uses. The tool path makes two
//! allocations the floor does not (the input's shared text and the boxed future a `dyn Tool`
//! returns), so the allocator's speed is most of the difference between the two.
//!
//! ```text
//! cargo bench -p tinyagent --bench tool_call
//! cargo bench -p tinyagent --bench tool_call_mimalloc
//! ```

#[path = "tool_call_shared/mod.rs"]
mod shared;

fn main() {
    shared::main();
}
