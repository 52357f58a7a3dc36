//! The `layers` command on small workspaces: what it prints, its exit status, the baseline.

use std::path::Path;
use std::process::{Command, Output};

/// Writes `files` (path, text) under `root`.
fn write(root: &Path, files: &[(&str, &str)]) {
    for (path, text) in files {
        let path = root.join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
}

fn layers(root: &Path, args: &[&str]) -> (i32, String) {
    let Output {
        status,
        stdout,
        stderr,
    } = Command::new(env!("CARGO_BIN_EXE_layers"))
        .arg("--root")
        .arg(root)
        .args(args)
        .output()
        .unwrap();
    let stdout = String::from_utf8(stdout).unwrap();
    let stderr = String::from_utf8(stderr).unwrap();
    (status.code().unwrap(), stdout + &stderr)
}

fn baseline(root: &Path) -> String {
    std::fs::read_to_string(root.join("tools/layers/baseline.txt")).unwrap()
}

/// The baseline's entries, comments left out.
fn entries(root: &Path) -> Vec<String> {
    baseline(root)
        .lines()
        .filter(|l| !l.starts_with('#'))
        .map(String::from)
        .collect()
}

const LIB: &str = "mod a;\nmod b;\nmod c;\n";
const A_USES_B: &str = "pub fn a() -> u8 {\n    crate::b::b()\n}\n";
const B_USES_A_AND_C: &str = "pub fn b() -> u8 {\n    crate::a::a() + crate::c::c()\n}\n";
const C_USES_B: &str = "pub fn c() -> u8 {\n    crate::b::b()\n}\n";
const C_ALONE: &str = "pub fn c() -> u8 {\n    1\n}\n";
const B_USES_A: &str = "pub fn b() -> u8 {\n    crate::a::a()\n}\n";
const A_ALONE: &str = "pub fn a() -> u8 {\n    1\n}\n";

#[test]
fn the_baseline_lists_known_findings_and_only_shrinks() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(
        root,
        &[
            ("crates/one/src/lib.rs", LIB),
            ("crates/one/src/a.rs", A_USES_B),
            ("crates/one/src/b.rs", B_USES_A_AND_C),
            ("crates/one/src/c.rs", C_USES_B),
        ],
    );
    let circle = "circle crates/one/src/a.rs crates/one/src/b.rs crates/one/src/c.rs";

    // No baseline: the circle fails the check, with an example line per edge.
    let (status, out) = layers(root, &[]);
    assert_eq!(status, 1, "{out}");
    assert!(
        out.contains("NEW: circle of 3 files: crates/one/src/a.rs, "),
        "{out}"
    );
    assert!(out.contains("crates/one/src/a.rs:2: crate::b::b"), "{out}");
    assert!(out.contains("crates/one/src/b.rs:2: crate::c::c"), "{out}");
    assert!(out.ends_with("0 known, 1 new, 0 stale: FAILED\n"), "{out}");

    // Written to the baseline, it is known and passes.
    let (status, out) = layers(root, &["--write-baseline"]);
    assert_eq!(status, 0, "{out}");
    assert_eq!(entries(root), [circle]);
    let (status, out) = layers(root, &[]);
    assert_eq!(status, 0, "{out}");
    assert!(
        out.contains("one: 4 files, 4 uses between files, 1 known"),
        "{out}"
    );
    assert!(out.contains("known: circle of 3 files"), "{out}");

    // The circle shrinks to a <-> b: a new finding and a stale entry, both fail...
    write(root, &[("crates/one/src/c.rs", C_ALONE)]);
    let (status, out) = layers(root, &[]);
    assert_eq!(status, 1, "{out}");
    assert!(out.contains("NEW: circle of 2 files"), "{out}");
    assert!(out.contains(&format!(
        "STALE baseline entry (no longer found; remove it): {circle}"
    )));
    // ...until --shrink-baseline puts the smaller circle in place of the larger.
    let (status, out) = layers(root, &["--shrink-baseline"]);
    assert_eq!(status, 0, "{out}");
    assert_eq!(
        entries(root),
        ["circle crates/one/src/a.rs crates/one/src/b.rs"]
    );

    // A new circle elsewhere is not added by --shrink-baseline.
    write(
        root,
        &[
            ("crates/two/src/lib.rs", LIB),
            ("crates/two/src/a.rs", A_USES_B),
            ("crates/two/src/b.rs", B_USES_A),
            ("crates/two/src/c.rs", C_ALONE),
        ],
    );
    let (status, out) = layers(root, &["--shrink-baseline"]);
    assert_eq!(status, 1, "{out}");
    assert!(
        out.contains("two: 4 files, 2 uses between files, 1 NEW"),
        "{out}"
    );
    assert_eq!(
        entries(root),
        ["circle crates/one/src/a.rs crates/one/src/b.rs"]
    );
    std::fs::remove_dir_all(root.join("crates/two")).unwrap();

    // Fixed: the entry is stale and fails until removed.
    write(root, &[("crates/one/src/a.rs", A_ALONE)]);
    let (status, out) = layers(root, &[]);
    assert_eq!(status, 1, "{out}");
    assert!(out.contains("0 known, 0 new, 1 stale: FAILED"), "{out}");
    let (status, out) = layers(root, &["--shrink-baseline"]);
    assert_eq!(status, 0, "{out}");
    assert!(entries(root).is_empty(), "{}", baseline(root));
    assert!(baseline(root).starts_with("# Known breaches of the layout rules"));
}

/// A function whose body holds `n` lines of code, with blank and comment lines between.
fn function(header: &str, n: usize) -> String {
    let mut text = format!("{header} {{\n");
    for i in 0..n {
        text.push_str(&format!("    let _v{i} = {i};\n"));
        if i % 10 == 0 {
            text.push_str("\n    // a comment\n    /* and a\n       block comment */\n");
        }
    }
    text.push_str("}\n\n");
    text
}

#[test]
fn long_functions_and_files_are_found_outside_tests() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let mut lib = String::from("mod long_file;\n#[cfg(test)]\nmod long_tests;\n\n");
    lib += &function("pub fn exactly_100()", 100);
    lib += &function("pub fn over_100()", 101);
    // Clippy counts an async fn's braces: 99 lines inside are 101.
    lib += &function("pub async fn async_99()", 99);
    lib += &function("#[test]\nfn a_long_test()", 150);
    lib += "pub struct S;\n\nimpl S {\n";
    lib += &function("pub fn method()", 120);
    lib += "}\n\n#[cfg(test)]\nmod tests {\n";
    lib += &function("fn helper()", 150);
    lib += "}\n";
    let long_file = "// filler\n".repeat(601);
    write(
        root,
        &[
            ("crates/long/src/lib.rs", &lib),
            ("crates/long/src/long_file.rs", &long_file),
            ("crates/long/src/long_tests.rs", &long_file),
        ],
    );
    let (status, out) = layers(root, &["--no-baseline"]);
    assert_eq!(status, 1, "{out}");
    let found: Vec<&str> = out.lines().filter(|l| l.starts_with("  NEW: ")).collect();
    assert_eq!(
        found,
        [
            "  NEW: crates/long/src/lib.rs:148: function `over_100` has 101 lines of code (at most 100)",
            "  NEW: crates/long/src/lib.rs:296: function `async_99` has 101 lines of code (at most 100)",
            "  NEW: crates/long/src/lib.rs:655: function `S::method` has 120 lines of code (at most 100)",
            "  NEW: crates/long/src/lib.rs: 1043 lines (at most 600)",
            // long_tests.rs, as long, is test code.
            "  NEW: crates/long/src/long_file.rs: 601 lines (at most 600)",
        ],
        "{out}"
    );
    // Baselined by file and name, not line: they survive edits above them.
    layers(root, &["--write-baseline"]);
    assert_eq!(
        entries(root),
        [
            "long-file crates/long/src/lib.rs",
            "long-file crates/long/src/long_file.rs",
            "long-fn crates/long/src/lib.rs S::method",
            "long-fn crates/long/src/lib.rs async_99",
            "long-fn crates/long/src/lib.rs over_100",
        ]
    );
    write(root, &[("crates/long/src/lib.rs", &format!("\n\n{lib}"))]);
    let (status, out) = layers(root, &[]);
    assert_eq!(status, 0, "{out}");
    assert!(
        out.contains("crates/long/src/lib.rs:150: function `over_100`"),
        "{out}"
    );
}

#[test]
fn bad_usage_exits_2() {
    let dir = tempfile::tempdir().unwrap();
    let (status, out) = layers(dir.path(), &["--frobnicate"]);
    assert_eq!(status, 2);
    assert!(out.contains("layers: unknown option --frobnicate"), "{out}");
    // No crate at all is an error too, not a pass.
    let (status, out) = layers(dir.path(), &[]);
    assert_eq!(status, 2);
    assert!(out.contains("no crate with a src/ directory"), "{out}");
}

#[test]
fn a_file_that_does_not_parse_fails_and_cannot_be_baselined() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(
        root,
        &[
            ("crates/broken/src/lib.rs", "mod gone;\nmod bad;\n"),
            ("crates/broken/src/bad.rs", "pub fn f( {\n"),
        ],
    );
    let (status, out) = layers(root, &["--write-baseline"]);
    assert_eq!(status, 1, "{out}");
    assert!(
        out.contains("NEW: crates/broken/src/lib.rs:1: no file for `mod gone;`"),
        "{out}"
    );
    assert!(
        out.contains("NEW: crates/broken/src/bad.rs:1: does not parse: "),
        "{out}"
    );
    assert!(entries(root).is_empty(), "{}", baseline(root));
}

#[test]
fn the_longest_functions_are_listed_longest_first_tests_left_out() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let three = "pub fn three() -> u8 {\n    let a = 1;\n    let b = 2;\n    a + b\n}\n";
    let one = "pub fn one() -> u8 {\n    1\n}\n";
    let test = "#[cfg(test)]\nmod tests {\n    #[test]\n    fn long() {\n        let a = 1;\n        let b = 2;\n        let c = 3;\n        let d = 4;\n        assert_eq!(a + b + c + d, 10);\n    }\n}\n";
    write(
        root,
        &[
            ("crates/one/src/lib.rs", "mod a;\nmod b;\n"),
            ("crates/one/src/a.rs", &format!("{one}{test}")),
            ("crates/one/src/b.rs", three),
        ],
    );
    let (status, out) = layers(root, &["--no-baseline", "--longest", "2"]);
    assert_eq!(status, 0, "{out}");
    let listed: Vec<&str> = out
        .lines()
        .skip_while(|l| !l.starts_with("the 2 longest functions"))
        .skip(1)
        .collect();
    assert_eq!(
        listed,
        [
            "     3  crates/one/src/b.rs  three",
            "     1  crates/one/src/a.rs  one"
        ],
        "{out}"
    );
    let (status, out) = layers(root, &["--longest", "many"]);
    assert_eq!(status, 2, "{out}");
    assert!(out.contains("--longest many: not a number"), "{out}");
}
