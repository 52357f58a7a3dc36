//! The baseline: the findings known when a rule came in, one key a line (see
//! [`Finding::key`]). Known findings are reported and do not fail the check; a finding not
//! listed fails it, and so does an entry that no longer occurs, so the list only shrinks.

use std::collections::BTreeSet;
use std::io;
use std::path::Path;

use crate::findings::{Finding, MAX_FILE_LINES, MAX_FUNCTION_LINES};

/// The keys of known findings.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Baseline {
    /// One per finding.
    pub entries: BTreeSet<String>,
}

/// Findings sorted against a baseline.
#[derive(Debug, Default)]
pub struct Verdict<'f> {
    /// Listed in the baseline: reported, not failing.
    pub known: Vec<&'f Finding>,
    /// Not listed (or never listable): failing.
    pub new: Vec<&'f Finding>,
    /// Entries of the baseline that no longer occur: failing until removed.
    pub stale: Vec<String>,
}

impl Verdict<'_> {
    /// True when the check passes.
    pub fn passes(&self) -> bool {
        self.new.is_empty() && self.stale.is_empty()
    }
}

impl Baseline {
    /// Reads the entries of a baseline file's text: one per line; blank lines and lines
    /// starting with `#` are skipped; runs of spaces count as one.
    pub fn parse(text: &str) -> Baseline {
        let entries = text
            .lines()
            .map(|line| line.split_whitespace().collect::<Vec<_>>().join(" "))
            .filter(|line| !line.is_empty() && !line.starts_with('#'))
            .collect();
        Baseline { entries }
    }

    /// Reads a baseline file; a missing file is an empty baseline.
    pub fn load(path: &Path) -> io::Result<Baseline> {
        match std::fs::read_to_string(path) {
            Ok(text) => Ok(Baseline::parse(&text)),
            Err(err) if err.kind() == io::ErrorKind::NotFound => Ok(Baseline::default()),
            Err(err) => Err(err),
        }
    }

    /// The file's text: a header saying what the entries are, then the entries, sorted.
    pub fn render(&self) -> String {
        let mut text = format!(
            "# Known breaches of the layout rules, found by tools/layers (see docs/layout.md).\n\
             # One per line:\n\
             #   circle FILE FILE...   files of one crate that use each other (sorted)\n\
             #   module-circle SRC MODULE MODULE...   top-level modules of a crate's SRC dir in a ring (sorted)\n\
             #   long-fn FILE NAME     a function of more than {MAX_FUNCTION_LINES} lines of code\n\
             #   long-file FILE        a src file of more than {MAX_FILE_LINES} lines\n\
             #   super-glob FILE       `use super::*` outside tests\n\
             # The check fails on a finding not listed here and on an entry that no longer occurs:\n\
             # this list only shrinks. `cargo run -p layers -- --shrink-baseline` drops what was fixed.\n"
        );
        for entry in &self.entries {
            text.push_str(entry);
            text.push('\n');
        }
        text
    }

    /// Sorts `findings` into known and new, and finds the stale entries.
    pub fn judge<'f>(&self, findings: &[&'f Finding]) -> Verdict<'f> {
        let mut verdict = Verdict::default();
        let mut seen = BTreeSet::new();
        for &finding in findings {
            match finding.key() {
                Some(key) if self.entries.contains(&key) => {
                    seen.insert(key);
                    verdict.known.push(finding);
                }
                _ => verdict.new.push(finding),
            }
        }
        verdict.stale = self.entries.difference(&seen).cloned().collect();
        verdict
    }

    /// The baseline with what was fixed taken out: the entries that still occur, and the
    /// circles found now that are parts of a circle listed before (a circle that shrank or
    /// split). Nothing else is added.
    pub fn shrunk(&self, findings: &[&Finding]) -> Baseline {
        let keys: BTreeSet<String> = findings.iter().filter_map(|f| f.key()).collect();
        let mut entries: BTreeSet<String> = self.entries.intersection(&keys).cloned().collect();
        let listed_circles: Vec<BTreeSet<&str>> = self
            .entries
            .iter()
            .filter_map(|e| e.strip_prefix("circle "))
            .map(|files| files.split(' ').collect())
            .collect();
        for finding in findings {
            let files: BTreeSet<&str> = finding.circle_files().iter().map(|s| s.as_str()).collect();
            if !files.is_empty() && listed_circles.iter().any(|c| files.is_subset(c)) {
                entries.extend(finding.key());
            }
        }
        Baseline { entries }
    }

    /// A baseline listing every finding that can be listed.
    pub fn of(findings: &[&Finding]) -> Baseline {
        Baseline {
            entries: findings.iter().filter_map(|f| f.key()).collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn long_file(file: &str) -> Finding {
        Finding::LongFile {
            file: file.to_owned(),
            lines: 700,
        }
    }

    fn circle(files: &[&str]) -> Finding {
        Finding::Circle {
            files: files.iter().map(|s| s.to_string()).collect(),
            edges: vec![],
        }
    }

    #[test]
    fn known_new_and_stale() {
        let baseline = Baseline::parse("# header\n\ncircle a.rs  b.rs\nlong-file c.rs\n");
        let known = circle(&["a.rs", "b.rs"]);
        let new = circle(&["d.rs", "e.rs"]);
        let verdict = baseline.judge(&[&known, &new]);
        assert_eq!(verdict.known, vec![&known]);
        assert_eq!(verdict.new, vec![&new]);
        assert_eq!(verdict.stale, vec!["long-file c.rs".to_owned()]);
        assert!(!verdict.passes());
        assert!(baseline.judge(&[&known, &long_file("c.rs")]).passes());
    }

    #[test]
    fn shrinking_keeps_what_occurs_and_the_parts_of_known_circles() {
        let baseline = Baseline::parse("circle a.rs b.rs c.rs\nlong-file c.rs\nlong-file d.rs\n");
        let part = circle(&["a.rs", "b.rs"]);
        let other = circle(&["a.rs", "e.rs"]);
        let shrunk = baseline.shrunk(&[&part, &other, &long_file("d.rs")]);
        let entries: Vec<&str> = shrunk.entries.iter().map(|s| s.as_str()).collect();
        assert_eq!(entries, ["circle a.rs b.rs", "long-file d.rs"]);
        assert_eq!(Baseline::parse(&shrunk.render()), shrunk);
    }
}
