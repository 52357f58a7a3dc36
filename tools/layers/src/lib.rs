//! The workspace's layering check (docs/layout.md says what it checks and why).
//!
//! For every crate it maps each `src/` file to its module the way rustc does, and follows every
//! place the code names an item of another file of the crate: `use` trees and
//! `crate::`/`super::`/`self::` paths in code and in macro arguments, names captured by format
//! strings, a method written in another file than its type — through re-exports to the file
//! that defines the item. It reports the circles of that file graph and of the graph of the crate's top-level
//! modules (with an example line per edge), functions of more than 100 lines of code (counted as clippy's `too_many_lines`
//! counts), files of more than 600 lines and `use super::*`, test code left out. A baseline
//! lists the findings known when the rules came in; it only shrinks.
//!
//! ```text
//! cargo run -p layers                    # every crate under crates/ and tools/
//! cargo run -p layers -- --graph         # and every edge, with its example
//! ```
//!
//! The stages, bottom up: [`tree`] (files and modules), [`scope`] (the names each module
//! binds), [`resolve`] (paths to defining files), [`methods`] and [`uses`] (what each file's
//! code names), [`graph`] (edges and circles), [`modules`] (the graph of top-level modules), [`lengths`]; then [`analyse`] puts them together
//! per crate, [`findings`] and [`baseline`] judge, [`report`] prints.

pub mod analyse;
pub mod baseline;
pub mod cfg;
pub mod findings;
pub mod graph;
pub mod lengths;
pub mod methods;
pub mod modules;
pub mod report;
pub mod resolve;
pub mod scope;
pub mod tree;
pub mod uses;
