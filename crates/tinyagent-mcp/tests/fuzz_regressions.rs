//! The inputs the fuzz targets in `fuzz/` found, and the reported cases they started from
//! (`fuzz/regressions/<target>/`), replayed through the same checks on stable.

use std::path::PathBuf;

/// Runs `check` on every file of `fuzz/regressions/<target>/`, naming the file that fails.
fn replay(target: &str, check: fn(&[u8])) {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../fuzz/regressions")
        .join(target);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|entry| entry.unwrap().path())
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no cases in {}", dir.display());
    for file in files {
        let data = std::fs::read(&file).unwrap();
        if let Err(panic) = std::panic::catch_unwind(|| check(&data)) {
            let why = panic
                .downcast_ref::<String>()
                .map(String::as_str)
                .or_else(|| panic.downcast_ref::<&str>().copied())
                .unwrap_or("a panic");
            panic!("{}: {why}", file.display());
        }
    }
}

#[test]
fn mcp_content_cases() {
    replay("mcp_content", tinyagent_mcp::__fuzz::content);
}
