//! The workspace's layering check. For every crate it maps each `src/` file to its module,
//! follows every path that names another module of the same crate — `use` trees and
//! `crate::`/`super::`/`self::` paths in code, through re-exports to the file that defines
//! the item — and reports the circles of the file graph, with an example line per edge; also
//! functions of more than 100 lines of code (counted as clippy's `too_many_lines` counts), files
//! of more than 600 lines and `use super::*` outside tests. Test code is left out. A baseline
//! lists the findings known when the rules came in; it only shrinks.
//!
//! ```text
//! cargo run -p layers                    # every crate under crates/ and tools/
//! cargo run -p layers -- --graph         # and every edge, with its example
//! ```

pub mod analyse;
pub mod baseline;
pub mod cfg;
pub mod findings;
pub mod graph;
pub mod lengths;
pub mod methods;
pub mod report;
pub mod resolve;
pub mod scope;
pub mod tree;
pub mod uses;
