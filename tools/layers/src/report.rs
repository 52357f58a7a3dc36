//! The check's output: a line per crate target, then what it found (known or new), the stale
//! baseline entries, and a summary.

use std::io::{self, Write};

use crate::analyse::CrateReport;
use crate::baseline::Verdict;
use crate::findings::Finding;

/// Writes the report of `crates` judged by `verdict`; with `graph`, every edge of every
/// target too.
pub fn write_report(
    out: &mut impl Write,
    crates: &[CrateReport],
    verdict: &Verdict,
    graph: bool,
) -> io::Result<()> {
    let is = |list: &[&Finding], f: &Finding| list.iter().any(|g| std::ptr::eq(*g, f));
    let mut files = 0;
    let mut targets = 0;
    for krate in crates {
        for target in &krate.targets {
            files += target.files.len();
            targets += 1;
            let known = target
                .findings
                .iter()
                .filter(|f| is(&verdict.known, f))
                .count();
            let new = target.findings.len() - known;
            let status = match (known, new) {
                (0, 0) => "ok".to_owned(),
                (k, 0) => format!("{k} known"),
                (0, n) => format!("{n} NEW"),
                (k, n) => format!("{n} NEW, {k} known"),
            };
            writeln!(
                out,
                "{}: {} files, {} uses between files, {status}",
                target.name,
                target.files.len(),
                target.edges.len()
            )?;
            for finding in &target.findings {
                let label = if is(&verdict.known, finding) {
                    "known"
                } else {
                    "NEW"
                };
                writeln!(out, "  {label}: {finding}")?;
            }
            if graph {
                for edge in &target.edges {
                    writeln!(out, "    {} -> {}    {}", edge.from, edge.to, edge.example)?;
                }
                for example in &target.partly_resolved {
                    writeln!(out, "    (followed to its module only) {example}")?;
                }
            }
        }
        for file in &krate.unreached {
            writeln!(out, "  note: {file} is not a module of any target")?;
        }
    }
    for entry in &verdict.stale {
        writeln!(
            out,
            "STALE baseline entry (no longer found; remove it): {entry}"
        )?;
    }
    let outcome = if verdict.passes() { "ok" } else { "FAILED" };
    writeln!(
        out,
        "layers: {} crates, {targets} targets, {files} files; {} known, {} new, {} stale: {outcome}",
        crates.len(),
        verdict.known.len(),
        verdict.new.len(),
        verdict.stale.len(),
    )
}
