//! `layers`: the layering check of the workspace (see the library's docs and docs/layout.md).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use layers::analyse::{CrateReport, analyse_crate, workspace_crates};
use layers::baseline::Baseline;
use layers::findings::Finding;
use layers::report::write_report;

const USAGE: &str = "\
usage: layers [OPTIONS] [CRATE_DIR...]

Checks every crate under crates/ and tools/ (or the CRATE_DIRs given): no circles between the
files of a crate, no function of more than 100 lines of code, no src file of more than 600
lines, no `use super::*` outside tests. Findings listed in the baseline are reported as known
and do not fail; entries of the baseline that no longer occur do.

options:
  --root DIR          the workspace root (default: the current directory)
  --baseline FILE     the baseline (default: ROOT/tools/layers/baseline.txt)
  --no-baseline       no baseline: every finding fails
  --graph             print every edge of every crate, with the line that makes it
  --shrink-baseline   rewrite the baseline without what was fixed (never adds a finding,
                      except the parts of a listed circle that shrank or split)
  --write-baseline    rewrite the baseline with every finding (only when a rule changes)
  --longest N         also list the N longest functions, outside tests, longest first
  -h, --help          this help

example:
  cargo run -p layers -- --graph crates/tinyagent-openai
";

#[derive(Default)]
struct Options {
    root: Option<PathBuf>,
    baseline: Option<PathBuf>,
    no_baseline: bool,
    graph: bool,
    shrink: bool,
    write: bool,
    longest: usize,
    crates: Vec<PathBuf>,
}

fn parse_args() -> Result<Options, String> {
    let mut options = Options::default();
    let mut args = std::env::args_os().skip(1);
    while let Some(arg) = args.next() {
        let mut value = |name: &str| {
            args.next()
                .map(PathBuf::from)
                .ok_or_else(|| format!("{name} needs a value"))
        };
        match arg.to_str() {
            Some("--root") => options.root = Some(value("--root")?),
            Some("--baseline") => options.baseline = Some(value("--baseline")?),
            Some("--no-baseline") => options.no_baseline = true,
            Some("--graph") => options.graph = true,
            Some("--shrink-baseline") => options.shrink = true,
            Some("--write-baseline") => options.write = true,
            Some("--longest") => {
                let n = value("--longest")?;
                options.longest = n
                    .to_str()
                    .and_then(|n| n.parse().ok())
                    .ok_or_else(|| format!("--longest {}: not a number", n.display()))?;
            }
            Some("-h" | "--help") => return Err(String::new()),
            Some(flag) if flag.starts_with('-') => return Err(format!("unknown option {flag}")),
            _ => options.crates.push(PathBuf::from(arg)),
        }
    }
    if options.shrink && options.write {
        return Err("--shrink-baseline and --write-baseline exclude each other".to_owned());
    }
    if options.no_baseline && (options.shrink || options.write) {
        return Err("--no-baseline leaves no baseline to rewrite".to_owned());
    }
    Ok(options)
}

fn main() -> ExitCode {
    let options = match parse_args() {
        Ok(options) => options,
        Err(message) if message.is_empty() => {
            print!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Err(message) => {
            eprintln!("layers: {message}\n\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    match run(&options) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(message) => {
            eprintln!("layers: {message}");
            ExitCode::from(2)
        }
    }
}

/// Runs the check; `Ok(false)` when it fails.
fn run(options: &Options) -> Result<bool, String> {
    let root = options.root.clone().unwrap_or_else(|| PathBuf::from("."));
    let root = canonical(&root)?;
    let dirs = if options.crates.is_empty() {
        workspace_crates(&root)
    } else {
        options
            .crates
            .iter()
            .map(|d| canonical(d))
            .collect::<Result<_, _>>()?
    };
    if dirs.is_empty() {
        return Err(format!(
            "no crate with a src/ directory under {}",
            root.display()
        ));
    }
    // A crate per thread: each parses and analyses its own files (syn's spans stay on the
    // thread that parsed them).
    let crates: Vec<CrateReport> = std::thread::scope(|scope| {
        let handles: Vec<_> = dirs
            .iter()
            .map(|dir| scope.spawn(|| analyse_crate(dir, &root)))
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("a crate's analysis panicked"))
            .collect()
    });
    let findings: Vec<&Finding> = crates
        .iter()
        .flat_map(|c| &c.targets)
        .flat_map(|t| &t.findings)
        .collect();

    let path = options
        .baseline
        .clone()
        .unwrap_or_else(|| root.join("tools/layers/baseline.txt"));
    let mut baseline = if options.no_baseline {
        Baseline::default()
    } else {
        Baseline::load(&path).map_err(|e| format!("{}: {e}", path.display()))?
    };
    if options.shrink || options.write {
        baseline = if options.write {
            Baseline::of(&findings)
        } else {
            baseline.shrunk(&findings)
        };
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        }
        std::fs::write(&path, baseline.render()).map_err(|e| format!("{}: {e}", path.display()))?;
        println!(
            "layers: wrote {} entries to {}",
            baseline.entries.len(),
            path.display()
        );
    }
    let verdict = baseline.judge(&findings);
    write_report(
        &mut std::io::stdout().lock(),
        &crates,
        &verdict,
        options.graph,
    )
    .map_err(|e| e.to_string())?;
    if options.longest > 0 {
        print_longest(&crates, options.longest);
    }
    Ok(verdict.passes())
}

/// Prints the `n` longest functions of every target, longest first.
fn print_longest(crates: &[CrateReport], n: usize) {
    let mut all: Vec<&(String, String, usize)> = crates
        .iter()
        .flat_map(|c| &c.targets)
        .flat_map(|t| &t.functions)
        .collect();
    all.sort_by(|a, b| b.2.cmp(&a.2).then_with(|| (&a.0, &a.1).cmp(&(&b.0, &b.1))));
    all.dedup();
    println!("the {n} longest functions (lines of code):");
    for (file, name, lines) in all.into_iter().take(n) {
        println!("  {lines:4}  {file}  {name}");
    }
}

fn canonical(path: &Path) -> Result<PathBuf, String> {
    path.canonicalize()
        .map_err(|e| format!("{}: {e}", path.display()))
}
