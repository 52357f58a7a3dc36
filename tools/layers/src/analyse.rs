//! One crate's check: the module tree of each of its targets (the library, each binary), the
//! file graph and its circles, long functions and files, `use super::*` outside tests, and
//! the `src/` files no target reaches.

use std::path::{Path, PathBuf};

use crate::findings::{Edge, Example, Finding, MAX_FILE_LINES, MAX_FUNCTION_LINES};
use crate::graph::{circles, edges};
use crate::lengths::functions;
use crate::modules::module_circles;
use crate::resolve::Resolver;
use crate::scope::Scopes;
use crate::tree::{ModuleTree, display_path};
use crate::uses::collect;

/// The check of one crate target.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TargetReport {
    /// `tinyagent-mcp`, `tinyagent-cli (bin)`, `tinyagent-mcp (bin serve_demo_tools)`.
    pub name: String,
    /// Its files (relative to the workspace root), the root first.
    pub files: Vec<String>,
    /// Its file graph: one edge per pair of files, with the first use as example.
    pub edges: Vec<Edge>,
    /// What breaks the rules, circles first.
    pub findings: Vec<Finding>,
    /// Paths followed only as far as a module (an item the parser cannot see, such as one a
    /// macro makes): their edge goes to that module's file.
    pub partly_resolved: Vec<Example>,
    /// Every function outside test code: its file, name and lines of code.
    pub functions: Vec<(String, String, usize)>,
}

/// The check of one crate: each target, and the files none reaches.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CrateReport {
    /// The crate's directory name.
    pub name: String,
    /// Its targets, the library first.
    pub targets: Vec<TargetReport>,
    /// `.rs` files under `src/` that no target's modules (nor any test module) reach.
    pub unreached: Vec<String>,
}

/// Checks the crate in `dir`; paths in the report are relative to `workspace`.
pub fn analyse_crate(dir: &Path, workspace: &Path) -> CrateReport {
    let name = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let src = dir.join("src");
    let mut roots = Vec::new();
    if src.join("lib.rs").is_file() {
        roots.push((name.clone(), src.join("lib.rs")));
    }
    if src.join("main.rs").is_file() {
        roots.push((format!("{name} (bin)"), src.join("main.rs")));
    }
    let mut bins: Vec<(String, PathBuf)> = std::fs::read_dir(src.join("bin"))
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|entry| {
            let path = entry.path();
            let stem = path.file_stem()?.to_string_lossy().into_owned();
            if path.extension().is_some_and(|e| e == "rs") && path.is_file() {
                Some((format!("{name} (bin {stem})"), path))
            } else if path.join("main.rs").is_file() {
                Some((format!("{name} (bin {stem})"), path.join("main.rs")))
            } else {
                None
            }
        })
        .collect();
    bins.sort();
    roots.extend(bins);

    let mut targets = Vec::new();
    let mut reached: Vec<PathBuf> = Vec::new();
    let mut test_dirs: Vec<PathBuf> = Vec::new();
    for (target, root) in roots {
        let tree = ModuleTree::load(&root, workspace);
        reached.extend(tree.files.iter().map(|f| f.path.clone()));
        for file in &tree.test_files {
            reached.push(file.clone());
            test_dirs.push(test_dir(file));
        }
        targets.push(analyse_tree(target, &tree));
    }
    let mut unreached: Vec<String> = rust_files(&src)
        .into_iter()
        .filter(|f| !reached.contains(f) && !test_dirs.iter().any(|d| f.starts_with(d)))
        .map(|f| display_path(&f, workspace))
        .collect();
    unreached.sort();
    CrateReport {
        name,
        targets,
        unreached,
    }
}

/// The directory of a target's root file (`crates/tinyagent/src`), as findings name it.
fn source_dir(tree: &ModuleTree) -> String {
    let root = tree
        .files
        .first()
        .map(|f| f.display.as_str())
        .unwrap_or_default();
    root.rsplit_once('/')
        .map_or(root, |(dir, _)| dir)
        .to_owned()
}

/// The directory a test-only file's own child modules would be in.
fn test_dir(file: &Path) -> PathBuf {
    let parent = file.parent().unwrap_or(Path::new("."));
    match file.file_stem() {
        Some(stem) if stem != "mod" => parent.join(stem),
        _ => parent.to_path_buf(),
    }
}

/// Every `.rs` file under `dir`.
fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return out;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(rust_files(&path));
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
    out
}

/// Checks one target's module tree.
pub fn analyse_tree(name: String, tree: &ModuleTree) -> TargetReport {
    let scopes = Scopes::collect(tree);
    let resolver = Resolver::new(tree, &scopes);
    let uses = collect(&resolver);
    let graph = edges(&uses);
    let display = |file: usize| tree.files[file].display.clone();
    let example = |u: &crate::uses::Use| Example {
        file: display(u.from),
        line: u.line,
        text: u.text.clone(),
    };
    let mut all_edges: Vec<Edge> = graph
        .values()
        .map(|u| Edge {
            from: display(u.from),
            to: display(u.to),
            example: example(u),
        })
        .collect();
    all_edges.sort_by(|a, b| (&a.from, &a.to).cmp(&(&b.from, &b.to)));

    let mut findings = Vec::new();
    let mut lengths = Vec::new();
    for error in &tree.errors {
        findings.push(Finding::Unreadable {
            file: error.file.clone(),
            line: error.line,
            message: error.message.clone(),
        });
    }
    let file_circles = circles(tree.files.len(), &graph);
    for component in &file_circles {
        let mut files: Vec<String> = component.iter().map(|&f| display(f)).collect();
        files.sort();
        let edges = all_edges
            .iter()
            .filter(|e| files.contains(&e.from) && files.contains(&e.to))
            .cloned()
            .collect();
        findings.push(Finding::Circle { files, edges });
    }
    for (modules, pairs) in module_circles(tree, &graph, &file_circles) {
        let edges = pairs
            .iter()
            .map(|&(from, to)| Edge {
                from: display(from),
                to: display(to),
                example: example(&graph[&(from, to)]),
            })
            .collect();
        findings.push(Finding::ModuleCircle {
            src: source_dir(tree),
            modules,
            edges,
        });
    }
    for function in functions(tree) {
        lengths.push((
            display(function.file),
            function.name.clone(),
            function.lines,
        ));
        if function.lines > MAX_FUNCTION_LINES {
            findings.push(Finding::LongFunction {
                file: display(function.file),
                line: function.line,
                name: function.name,
                lines: function.lines,
            });
        }
    }
    for file in &tree.files {
        let lines = file.text.lines().count();
        if lines > MAX_FILE_LINES {
            findings.push(Finding::LongFile {
                file: file.display.clone(),
                lines,
            });
        }
    }
    for (id, scope) in scopes.modules.iter().enumerate() {
        for import in &scope.imports {
            if import.glob && !import.path.is_empty() && import.path.iter().all(|s| s == "super") {
                let file = display(tree.modules[id].file);
                findings.push(Finding::SuperGlob {
                    file,
                    line: import.line,
                });
            }
        }
    }
    let partly_resolved = uses.iter().filter(|u| !u.complete).map(example).collect();
    TargetReport {
        name,
        files: tree.files.iter().map(|f| f.display.clone()).collect(),
        edges: all_edges,
        findings,
        partly_resolved,
        functions: lengths,
    }
}

/// The crates a workspace check covers: every directory under `crates/` and `tools/` of
/// `root` with a `src/` directory, sorted.
pub fn workspace_crates(root: &Path) -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    for group in ["crates", "tools"] {
        let Ok(entries) = std::fs::read_dir(root.join(group)) else {
            continue;
        };
        for entry in entries.flatten() {
            if entry.path().join("src").is_dir() {
                dirs.push(entry.path());
            }
        }
    }
    dirs.sort();
    dirs
}
