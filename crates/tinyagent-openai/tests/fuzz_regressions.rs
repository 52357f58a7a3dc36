//! The inputs the fuzz targets in `fuzz/` found, and the reported cases they started from
//! (`fuzz/regressions/<target>/`), replayed through the same checks on stable.

use std::path::PathBuf;

/// Runs `check` on every file of `fuzz/regressions/<target>/`, naming the file that fails.
fn replay(target: &str, check: fn(&[u8])) {
    let regressions = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/regressions");
    tinyagent::__fuzz::replay(&regressions, target, check);
}

#[test]
fn openai_sse_cases() {
    replay("openai_sse", tinyagent_openai::__fuzz::sse);
}

#[test]
fn openai_body_cases() {
    replay("openai_body", tinyagent_openai::__fuzz::body);
}
