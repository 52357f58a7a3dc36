//! The check and the workspace's clippy settings agree.

use layers::findings::MAX_FUNCTION_LINES;

#[test]
fn clippy_toml_sets_the_threshold_the_check_uses() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../clippy.toml");
    let text = std::fs::read_to_string(path).unwrap();
    let thresholds: Vec<&str> = text
        .lines()
        .filter_map(|line| line.split_once('='))
        .filter(|(key, _)| key.trim() == "too-many-lines-threshold")
        .map(|(_, value)| value.trim())
        .collect();
    assert_eq!(thresholds, [MAX_FUNCTION_LINES.to_string()]);
}
