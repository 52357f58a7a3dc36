//! The file graph of a crate target (an edge per pair of files, with its first use as the
//! example) and its circles: the strongly connected components of more than one file.

use std::collections::BTreeMap;

use crate::tree::FileId;
use crate::uses::Use;

/// The edges of a file graph: for each pair `(from, to)`, the first use (lowest line) of `to`
/// in `from`.
pub type Edges = BTreeMap<(FileId, FileId), Use>;

/// One edge per pair of files, with the use on the lowest line as its example.
pub fn edges(uses: &[Use]) -> Edges {
    let mut edges = Edges::new();
    for u in uses {
        edges
            .entry((u.from, u.to))
            .and_modify(|kept| {
                if (u.line, &u.text) < (kept.line, &kept.text) {
                    *kept = u.clone();
                }
            })
            .or_insert_with(|| u.clone());
    }
    edges
}

/// The strongly connected components of more than one file, each sorted, in order of their
/// smallest file (Tarjan's algorithm).
pub fn circles(files: usize, edges: &Edges) -> Vec<Vec<FileId>> {
    let mut next: Vec<Vec<FileId>> = vec![Vec::new(); files];
    for &(from, to) in edges.keys() {
        next[from].push(to);
    }
    let mut state = Tarjan {
        next: &next,
        index: vec![None; files],
        low: vec![0; files],
        stack: Vec::new(),
        on_stack: vec![false; files],
        counter: 0,
        found: Vec::new(),
    };
    for file in 0..files {
        if state.index[file].is_none() {
            state.strong(file);
        }
    }
    let mut found = state.found;
    for component in &mut found {
        component.sort_unstable();
    }
    found.sort();
    found
}

struct Tarjan<'g> {
    next: &'g [Vec<FileId>],
    index: Vec<Option<usize>>,
    low: Vec<usize>,
    stack: Vec<FileId>,
    on_stack: Vec<bool>,
    counter: usize,
    found: Vec<Vec<FileId>>,
}

impl Tarjan<'_> {
    fn strong(&mut self, v: FileId) {
        self.index[v] = Some(self.counter);
        self.low[v] = self.counter;
        self.counter += 1;
        self.stack.push(v);
        self.on_stack[v] = true;
        for &w in self.next[v].iter() {
            match self.index[w] {
                None => {
                    self.strong(w);
                    self.low[v] = self.low[v].min(self.low[w]);
                }
                Some(index) if self.on_stack[w] => self.low[v] = self.low[v].min(index),
                Some(_) => {}
            }
        }
        if Some(self.low[v]) == self.index[v] {
            let mut component = Vec::new();
            while let Some(w) = self.stack.pop() {
                self.on_stack[w] = false;
                component.push(w);
                if w == v {
                    break;
                }
            }
            if component.len() > 1 {
                self.found.push(component);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn graph(pairs: &[(FileId, FileId)]) -> Edges {
        let uses: Vec<Use> = pairs
            .iter()
            .map(|&(from, to)| Use {
                from,
                to,
                line: 1,
                text: String::new(),
                complete: true,
            })
            .collect();
        edges(&uses)
    }

    #[test]
    fn components_of_more_than_one_file() {
        // 0 -> 1 -> 2 -> 0 is a circle; 3 <-> 4 another; 5 -> 0 and 2 -> 6 are not in one.
        let edges = graph(&[(0, 1), (1, 2), (2, 0), (3, 4), (4, 3), (5, 0), (2, 6)]);
        assert_eq!(circles(7, &edges), vec![vec![0, 1, 2], vec![3, 4]]);
        assert!(circles(3, &graph(&[(0, 1), (1, 2), (0, 2)])).is_empty());
    }

    #[test]
    fn the_example_is_the_first_use() {
        let uses = [
            Use {
                from: 0,
                to: 1,
                line: 30,
                text: "b".into(),
                complete: true,
            },
            Use {
                from: 0,
                to: 1,
                line: 12,
                text: "a".into(),
                complete: true,
            },
        ];
        assert_eq!(edges(&uses)[&(0, 1)].line, 12);
    }
}
