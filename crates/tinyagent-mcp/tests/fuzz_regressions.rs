//! The inputs the fuzz targets in `fuzz/` found, and the reported cases they started from
//! (`fuzz/regressions/<target>/`), replayed through the same checks on stable.

use std::path::PathBuf;

/// Runs `check` on every file of `fuzz/regressions/<target>/`, naming the file that fails.
fn replay(target: &str, check: fn(&[u8])) {
    let regressions = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/regressions");
    tinyagent::__fuzz::replay(&regressions, target, check);
}

#[test]
fn mcp_content_cases() {
    replay("mcp_content", tinyagent_mcp::__fuzz::content);
}
