//! The graph of a crate target's top-level modules (`agent`, `tools`, `message`, … of
//! `crates/tinyagent/src`): a file belongs to the top-level module it is under, and one module
//! uses another when one of its files uses one of the other's. A circle there is a ring of
//! layers, even when no two files use each other back. Edges inside a circle of files are left
//! out: that circle is reported already, and a ring of modules is one the files do not show.

use std::collections::BTreeMap;

use crate::graph::{Edges, circles};
use crate::tree::{FileId, ModuleTree};

/// The top-level module each file belongs to (`None` for the crate root's own file).
pub fn top_modules(tree: &ModuleTree) -> Vec<Option<String>> {
    tree.files
        .iter()
        .map(|file| {
            let mut id = file.module;
            loop {
                let module = &tree.modules[id];
                match module.parent {
                    None => return None,
                    Some(parent) if tree.modules[parent].parent.is_none() => {
                        return Some(module.name.clone());
                    }
                    Some(parent) => id = parent,
                }
            }
        })
        .collect()
}

/// A circle of top-level modules: its modules (sorted), and a file edge (from, to) for every
/// pair of them that one uses the other.
pub type ModuleCircle = (Vec<String>, Vec<(FileId, FileId)>);

/// The circles of top-level modules: each as its modules (sorted) and, for every pair of them
/// that one uses the other, the file edge with the first example (by file, then line).
/// `file_circles` are the circles of the file graph, whose edges are left out.
pub fn module_circles(
    tree: &ModuleTree,
    files: &Edges,
    file_circles: &[Vec<FileId>],
) -> Vec<ModuleCircle> {
    let top = top_modules(tree);
    let in_one_circle = |a: FileId, b: FileId| {
        file_circles
            .iter()
            .any(|c| c.contains(&a) && c.contains(&b))
    };
    let mut names: Vec<String> = top.iter().flatten().cloned().collect();
    names.sort();
    names.dedup();
    let index = |name: &str| names.iter().position(|n| n == name);
    // One file edge per pair of modules: the first in file order.
    let mut pairs: BTreeMap<(usize, usize), (FileId, FileId)> = BTreeMap::new();
    for &(from, to) in files.keys() {
        if in_one_circle(from, to) {
            continue;
        }
        let (Some(a), Some(b)) = (&top[from], &top[to]) else {
            continue;
        };
        if a == b {
            continue;
        }
        let (Some(a), Some(b)) = (index(a), index(b)) else {
            continue;
        };
        pairs.entry((a, b)).or_insert((from, to));
    }
    let graph: Edges = pairs
        .iter()
        .map(|(&(a, b), &(from, to))| ((a, b), files[&(from, to)].clone()))
        .collect();
    circles(names.len(), &graph)
        .into_iter()
        .map(|component| {
            let edges = pairs
                .iter()
                .filter(|((a, b), _)| component.contains(a) && component.contains(b))
                .map(|(_, &edge)| edge)
                .collect();
            (component.iter().map(|&m| names[m].clone()).collect(), edges)
        })
        .collect()
}
