//! Many agents at once: 100,000 concurrent invocations of one agent on a 2-worker runtime.
//!
//! Each invocation is a whole run of the loop against a scripted model that takes 50 ms per
//! call (a timer, so the model costs no CPU): the model asks for one typed tool call, the tool
//! adds two numbers, the model answers with the tool's result. Every answer is checked. The
//! figure is the wall time of the whole batch; `many_runs_system` also counts allocations and
//! the peak of live heap bytes per invocation (counted by a global allocator and sampled every
//! millisecond while the batch runs, so they do not depend on the allocator's caching).
//!
//! ```text
//! cargo bench -p tinyagent --bench many_runs [-- INVOCATIONS]         # mimalloc
//! cargo bench -p tinyagent --bench many_runs_system [-- INVOCATIONS]  # the system allocator
//! ```
//!
//! With the model's 50 ms twice per run, an unbounded machine would finish in 0.1 s; what is
//! above that is the loop's own work (requests, validation, the typed call, events, history)
//! and the scheduling of 100,000 tasks on 2 threads.
//!
//! The allocator matters more than anything the loop does: glibc's malloc serialises frees of
//! memory another thread allocated behind its arena locks, and with 100,000 tasks moving between
//! two workers most frees are such frees. On a 2-core machine the batch takes about 0.7 s on
//! mimalloc and 1.5–2.3 s on glibc (the spread between identical runs is glibc's). This bench
//! uses mimalloc, which is what a server running this many agents should use; `many_runs_system`
//! is the same batch on the system allocator.

#[path = "many_runs_shared/mod.rs"]
mod shared;

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    shared::run("mimalloc", None);
}
