//! [`many_runs`](../many_runs.rs) on the system allocator (glibc's malloc on Linux), for
//! comparison, with the allocations and the peak of live heap bytes per invocation counted
//! (stats_alloc counts over the system allocator only).
//!
//! ```text
//! cargo bench -p tinyagent --bench many_runs_system [-- INVOCATIONS]
//! ```

#[path = "many_runs_shared/mod.rs"]
mod shared;

use stats_alloc::{INSTRUMENTED_SYSTEM, StatsAlloc};

#[global_allocator]
static GLOBAL: &StatsAlloc<std::alloc::System> = &INSTRUMENTED_SYSTEM;

/// Allocations so far and the bytes live now.
fn counts() -> (usize, i64) {
    let stats = GLOBAL.stats();
    let live = stats.bytes_allocated as i64 - stats.bytes_deallocated as i64
        + stats.bytes_reallocated as i64;
    (stats.allocations, live)
}

fn main() {
    shared::run("system allocator", Some(counts));
}
