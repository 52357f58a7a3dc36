//! The check on small crates under tests/fixtures/: the files, edges and circles it finds.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use layers::analyse::{CrateReport, TargetReport, analyse_crate};
use layers::findings::Finding;

type EdgeRow = (String, String, usize, String);

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

fn analyse(name: &str) -> CrateReport {
    let root = fixtures();
    analyse_crate(&root.join(name), &root)
}

/// The library target; it must be readable.
fn library(name: &str) -> TargetReport {
    let report = analyse(name);
    assert!(report.unreached.is_empty(), "{:?}", report.unreached);
    let target = report.targets.into_iter().next().expect("a library target");
    let unreadable: Vec<_> = target
        .findings
        .iter()
        .filter(|f| matches!(f, Finding::Unreadable { .. }))
        .collect();
    assert!(unreadable.is_empty(), "{unreadable:?}");
    target
}

/// A path without its `FIXTURE/src/` prefix.
fn short(path: &str) -> String {
    path.split_once("/src/").map_or(path, |(_, p)| p).to_owned()
}

/// `(from, to, example line, example text)` for each edge.
fn edges(target: &TargetReport) -> BTreeSet<EdgeRow> {
    target
        .edges
        .iter()
        .map(|e| {
            (
                short(&e.from),
                short(&e.to),
                e.example.line,
                e.example.text.clone(),
            )
        })
        .collect()
}

fn expect(rows: &[(&str, &str, usize, &str)]) -> BTreeSet<EdgeRow> {
    rows.iter()
        .map(|&(from, to, line, text)| (from.to_owned(), to.to_owned(), line, text.to_owned()))
        .collect()
}

fn files(target: &TargetReport) -> BTreeSet<String> {
    target.files.iter().map(|f| short(f)).collect()
}

fn circles(target: &TargetReport) -> Vec<Vec<String>> {
    target
        .findings
        .iter()
        .filter_map(|f| match f {
            Finding::Circle { files, .. } => Some(files.iter().map(|f| short(f)).collect()),
            _ => None,
        })
        .collect()
}

#[test]
fn strings_and_comments_do_not_hide_the_code_after_them() {
    let target = library("strings");
    assert_eq!(files(&target).len(), 3);
    // `crate::other::NOT_A_USE` appears only in strings (after "tool_error", after a string
    // continued with `\`, in raw strings with `#`) and in a comment.
    assert_eq!(
        edges(&target),
        expect(&[("lib.rs", "late.rs", 15, "crate::late::LATE")])
    );
    assert!(target.findings.is_empty(), "{:?}", target.findings);
}

#[test]
fn paths_in_every_position_count_and_declarations_do_not() {
    let target = library("paths");
    assert_eq!(
        edges(&target),
        expect(&[
            (
                "deep/deeper/leaf.rs",
                "kinds.rs",
                1,
                "super::super::super::kinds::Kind"
            ),
            // A name a glob import brings in; an import inside a function. (shadow.rs
            // globs the same names but only names a local item that shadows them.)
            ("globber.rs", "kinds.rs", 3, "Kind"),
            ("globber.rs", "defs.rs", 4, "use crate::defs::make"),
            // A trait imported for its methods: the import is the use.
            ("user.rs", "ext.rs", 1, "use crate::ext::Ext"),
            // A constant named only inside a format string.
            (
                "user.rs",
                "fmt_const.rs",
                2,
                "use crate::fmt_const::GREETING"
            ),
            // An impl header; then expressions (line 9) are later uses of the same file.
            ("user.rs", "defs.rs", 6, "crate::defs::Shape"),
            // A parameter's type; then `matches!`'s pattern (line 14).
            ("user.rs", "kinds.rs", 13, "crate::kinds::Kind"),
        ])
    );
    assert!(circles(&target).is_empty());
}

#[test]
fn re_exports_lead_to_the_defining_file() {
    let target = library("reexports");
    assert_eq!(
        edges(&target),
        expect(&[
            // Through lib.rs, facade/mod.rs, facade/inner.rs and renamer.rs (a rename).
            ("user.rs", "defs.rs", 1, "use crate::Thing"),
            // Through lib.rs's glob re-export.
            ("user.rs", "globbed.rs", 4, "crate::GLOBBED"),
            // renamer.rs re-exports `Other` and uses it in its own code: a use (the `pub use`
            // line is not). Its other re-export and every other `pub use` only publish.
            ("renamer.rs", "defs.rs", 6, "Other"),
        ])
    );
}

#[test]
fn test_code_is_left_out() {
    let report = analyse("tests_left_out");
    // test_support.rs is declared under #[cfg(test)]: not analysed, not "unreached".
    assert!(report.unreached.is_empty(), "{:?}", report.unreached);
    let target = &report.targets[0];
    assert_eq!(
        files(target),
        ["a.rs", "b.rs", "lib.rs"].map(String::from).into()
    );
    // a.rs uses b.rs only in test code; b.rs uses a.rs: no circle.
    assert_eq!(edges(target), expect(&[("b.rs", "a.rs", 4, "crate::a::f")]));
    // `use super::*` counts outside tests only.
    let globs: Vec<_> = target
        .findings
        .iter()
        .filter_map(|f| match f {
            Finding::SuperGlob { file, line } => Some((short(file), *line)),
            _ => None,
        })
        .collect();
    assert_eq!(globs, [("b.rs".to_owned(), 1)]);
    assert_eq!(target.findings.len(), 1, "{:?}", target.findings);
}

#[test]
fn modules_are_found_where_rustc_finds_them() {
    let target = library("layout");
    assert_eq!(
        files(&target),
        [
            "lib.rs",
            "flat.rs",
            "flat/child.rs",
            "nested/mod.rs",
            "custom/renamed.rs",
            "custom/sibling.rs",
            "custom/in_dir.rs",
        ]
        .map(String::from)
        .into()
    );
    assert_eq!(
        edges(&target),
        expect(&[
            // An inline module belongs to its file; `super::super` from inside two of them.
            (
                "lib.rs",
                "flat/child.rs",
                10,
                "super::super::flat::child::CHILD"
            ),
            ("flat/child.rs", "nested/mod.rs", 1, "crate::nested::NESTED"),
            // A `#[path]` file's children are its siblings.
            (
                "custom/renamed.rs",
                "custom/sibling.rs",
                3,
                "self::sibling::SIBLING"
            ),
            (
                "custom/sibling.rs",
                "flat/child.rs",
                1,
                "crate::flat::child::CHILD"
            ),
            (
                "custom/in_dir.rs",
                "custom/renamed.rs",
                1,
                "crate::by_path::RENAMED"
            ),
        ])
    );
}

#[test]
fn a_circle_is_reported_with_an_example_for_each_of_its_edges() {
    let target = library("circles");
    assert_eq!(
        circles(&target),
        [["config.rs", "error.rs", "wire.rs"].map(String::from)]
    );
    let Some(Finding::Circle {
        edges: circle_edges,
        ..
    }) = target
        .findings
        .iter()
        .find(|f| matches!(f, Finding::Circle { .. }))
    else {
        panic!("no circle in {:?}", target.findings)
    };
    let rows: BTreeSet<EdgeRow> = circle_edges
        .iter()
        .map(|e| {
            (
                short(&e.from),
                short(&e.to),
                e.example.line,
                e.example.text.clone(),
            )
        })
        .collect();
    assert_eq!(
        rows,
        expect(&[
            ("config.rs", "wire.rs", 7, "crate::wire::request_body"),
            ("wire.rs", "config.rs", 1, "use crate::Config"),
            ("wire.rs", "error.rs", 7, "crate::error::WireError"),
            ("error.rs", "wire.rs", 5, "super::wire::request_body"),
            ("error.rs", "config.rs", 5, "crate::config::Config"),
        ])
    );
    // client.rs uses config.rs but is not used back: outside the circle.
    assert!(edges(&target).contains(&(
        "client.rs".to_owned(),
        "config.rs".to_owned(),
        1,
        "use crate::config::Config".to_owned()
    )));
    let finding = target
        .findings
        .iter()
        .find(|f| matches!(f, Finding::Circle { .. }))
        .unwrap();
    assert_eq!(
        finding.key().unwrap(),
        "circle circles/src/config.rs circles/src/error.rs circles/src/wire.rs"
    );
}

#[test]
fn methods_written_in_another_file_than_their_type_are_uses_of_that_file() {
    let target = library("split_impl");
    assert_eq!(
        edges(&target),
        expect(&[
            ("server.rs", "helpers.rs", 5, "self.helper()"),
            ("helpers.rs", "server.rs", 1, "use crate::server::Server"),
            // `Type::function` leads to the file of the `impl` block that defines it.
            (
                "user.rs",
                "helpers.rs",
                2,
                "crate::server::Server::make_one"
            ),
            ("user.rs", "server.rs", 2, "crate::server::Server::make_one"),
        ])
    );
    assert_eq!(
        circles(&target),
        [["helpers.rs", "server.rs"].map(String::from)]
    );
}

#[test]
fn macros_arguments_and_definitions_count() {
    let target = library("macros");
    assert_eq!(
        edges(&target),
        expect(&[
            // `$crate::` in a macro_rules! body.
            ("defs.rs", "consts.rs", 3, "$crate::consts::BANG"),
            // Arguments that are no expressions (`=>`): scanned token by token.
            ("user.rs", "consts.rs", 6, "crate::consts::JSON_KEY"),
            // A macro named by its bare name, defined in another file.
            ("user.rs", "defs.rs", 7, "shout!"),
        ])
    );
}

#[test]
fn a_ring_of_top_level_modules_is_reported_though_no_files_use_each_other_back() {
    let target = library("rings");
    assert!(circles(&target).is_empty(), "{:?}", target.findings);
    let rings: Vec<&Finding> = target
        .findings
        .iter()
        .filter(|f| matches!(f, Finding::ModuleCircle { .. }))
        .collect();
    assert_eq!(rings.len(), 1, "{:?}", target.findings);
    let Finding::ModuleCircle {
        src,
        modules,
        edges: ring_edges,
    } = rings[0]
    else {
        unreachable!()
    };
    assert_eq!(modules, &["message", "tools"]);
    assert!(src.ends_with("rings/src"), "{src}");
    let rows: BTreeSet<EdgeRow> = ring_edges
        .iter()
        .map(|e| {
            (
                short(&e.from),
                short(&e.to),
                e.example.line,
                e.example.text.clone(),
            )
        })
        .collect();
    assert_eq!(
        rows,
        expect(&[
            (
                "message.rs",
                "tools/output.rs",
                3,
                "crate::tools::output::Output"
            ),
            (
                "tools/search.rs",
                "message.rs",
                1,
                "use crate::message::Message"
            ),
        ])
    );
    assert_eq!(
        rings[0].key().as_deref(),
        Some(format!("module-circle {src} message tools").as_str())
    );
}
