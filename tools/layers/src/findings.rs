//! What the check reports, each with the key a baseline lists it by.

use std::fmt;

/// The most lines a `src/` file may have.
pub const MAX_FILE_LINES: usize = 600;
/// The most lines of code a function may have (clippy's `too-many-lines-threshold`, which
/// `clippy.toml` sets to the same number).
pub const MAX_FUNCTION_LINES: usize = 100;

/// A place in the code and what is written there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Example {
    /// The file, relative to the workspace root.
    pub file: String,
    /// The 1-based line.
    pub line: usize,
    /// The path or import written there.
    pub text: String,
}

impl fmt::Display for Example {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}: {}", self.file, self.line, self.text)
    }
}

/// File `from` uses file `to`, for instance at `example`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Edge {
    /// The file whose code names an item of `to`.
    pub from: String,
    /// The file that defines the item.
    pub to: String,
    /// The first place `from` does so.
    pub example: Example,
}

/// Something that breaks a rule of the layout.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Finding {
    /// Files that use each other, directly or through others.
    Circle {
        /// The files, sorted.
        files: Vec<String>,
        /// Every edge between two of them, with an example.
        edges: Vec<Edge>,
    },
    /// Top-level modules of one crate target that use each other, directly or through others:
    /// a ring of layers.
    ModuleCircle {
        /// The target's `src/` directory.
        src: String,
        /// The modules, sorted.
        modules: Vec<String>,
        /// For every pair of them that one uses the other, a file edge with an example.
        edges: Vec<Edge>,
    },
    /// A function with more than [`MAX_FUNCTION_LINES`] lines of code.
    LongFunction {
        /// Its file.
        file: String,
        /// The line of its name.
        line: usize,
        /// Its name (see [`crate::lengths::Function::name`]).
        name: String,
        /// Its lines of code.
        lines: usize,
    },
    /// A file of more than [`MAX_FILE_LINES`] lines.
    LongFile {
        /// The file.
        file: String,
        /// Its lines.
        lines: usize,
    },
    /// `use super::*` outside test code.
    SuperGlob {
        /// The file.
        file: String,
        /// The line.
        line: usize,
    },
    /// A file that cannot be analysed: unreadable, not Rust the parser knows, a module
    /// declared without a file. Never baselined.
    Unreadable {
        /// The file.
        file: String,
        /// The line, 0 for the whole file.
        line: usize,
        /// What went wrong.
        message: String,
    },
}

impl Finding {
    /// The line a baseline lists the finding by, `None` for what cannot be baselined. Keys
    /// name files and functions, not line numbers, so that they survive unrelated edits.
    pub fn key(&self) -> Option<String> {
        match self {
            Finding::Circle { files, .. } => Some(format!("circle {}", files.join(" "))),
            Finding::ModuleCircle { src, modules, .. } => {
                Some(format!("module-circle {src} {}", modules.join(" ")))
            }
            Finding::LongFunction { file, name, .. } => Some(format!("long-fn {file} {name}")),
            Finding::LongFile { file, .. } => Some(format!("long-file {file}")),
            Finding::SuperGlob { file, .. } => Some(format!("super-glob {file}")),
            Finding::Unreadable { .. } => None,
        }
    }

    /// The files of a circle; empty for other findings.
    pub fn circle_files(&self) -> &[String] {
        match self {
            Finding::Circle { files, .. } => files,
            _ => &[],
        }
    }
}

impl fmt::Display for Finding {
    /// One line, then (for a circle) one line per edge.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Finding::Circle { files, edges } => {
                write!(f, "circle of {} files: {}", files.len(), files.join(", "))?;
                for edge in edges {
                    write!(f, "\n    {} -> {}", edge.from, edge.to)?;
                    write!(f, "\n        {}", edge.example)?;
                }
                Ok(())
            }
            Finding::ModuleCircle {
                src,
                modules,
                edges,
            } => {
                write!(
                    f,
                    "circle of {} top-level modules of {src}: {}",
                    modules.len(),
                    modules.join(", ")
                )?;
                for edge in edges {
                    write!(f, "\n    {} -> {}", edge.from, edge.to)?;
                    write!(f, "\n        {}", edge.example)?;
                }
                Ok(())
            }
            Finding::LongFunction {
                file,
                line,
                name,
                lines,
            } => write!(
                f,
                "{file}:{line}: function `{name}` has {lines} lines of code (at most {MAX_FUNCTION_LINES})"
            ),
            Finding::LongFile { file, lines } => {
                write!(f, "{file}: {lines} lines (at most {MAX_FILE_LINES})")
            }
            Finding::SuperGlob { file, line } => {
                write!(f, "{file}:{line}: `use super::*` outside tests")
            }
            Finding::Unreadable {
                file,
                line,
                message,
            } => write!(f, "{file}:{line}: {message}"),
        }
    }
}
