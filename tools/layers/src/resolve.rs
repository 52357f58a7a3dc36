//! Paths to the items they name: through child modules, `crate`/`self`/`super`, imports
//! (re-exports or not, renamed or not) and globs, to the file that defines the item.

use crate::scope::{DefKind, Scopes};
use crate::tree::{FileId, ModuleId, ModuleTree};

/// What a path names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    /// A module.
    Module(ModuleId),
    /// An item (anything but a module), defined in `file`. The rest of a path after an item
    /// (an enum's variant, an associated item) stays in that file.
    Item {
        /// The file that defines it.
        file: FileId,
        /// Its kind.
        kind: DefKind,
    },
    /// An item of another crate, named through an import of this one
    /// (`pub use other_crate::Item;` in a module, then `crate::module::Item`).
    External,
}

/// A path resolved as far as it goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Resolved {
    /// What it names; when `complete` is false, the last module the path reached.
    pub target: Target,
    /// False when a segment was not found in the module before it (an item made by a macro,
    /// say): the path is then taken to name something in that module's file.
    pub complete: bool,
}

/// Resolves paths within one crate target.
pub struct Resolver<'a> {
    /// The modules and files.
    pub tree: &'a ModuleTree,
    /// The names they bind.
    pub scopes: &'a Scopes,
}

/// Lookups in progress, so that import cycles (`use a::*` in `b`, `use b::*` in `a`) end.
type Stack = Vec<(ModuleId, String)>;

impl<'a> Resolver<'a> {
    /// Makes a resolver over `tree` and its `scopes`.
    pub fn new(tree: &'a ModuleTree, scopes: &'a Scopes) -> Resolver<'a> {
        Resolver { tree, scopes }
    }

    /// The file a target is in: an item's defining file, a module's own file; `None` for
    /// another crate's item.
    pub fn file_of(&self, target: Target) -> Option<FileId> {
        match target {
            Target::Module(module) => Some(self.tree.modules[module].file),
            Target::Item { file, .. } => Some(file),
            Target::External => None,
        }
    }

    /// Resolves `path` as written in module `from` (a `use` path or a path in code). `None`
    /// when it names nothing of this crate (another crate, the prelude, a local variable).
    pub fn resolve(&self, from: ModuleId, path: &[String]) -> Option<Resolved> {
        self.resolve_in(from, path, &mut Vec::new())
    }

    /// Continues a path from what its first segments named.
    pub fn walk(&self, start: Target, rest: &[String]) -> Resolved {
        self.walk_in(start, rest, &mut Vec::new())
    }

    /// What `name` means in module `module`: a child module, an item it defines, a name it
    /// imports, a name one of its globs brings in.
    pub fn lookup(&self, module: ModuleId, name: &str) -> Option<Target> {
        self.lookup_in(module, name, &mut Vec::new())
    }

    fn resolve_in(&self, from: ModuleId, path: &[String], stack: &mut Stack) -> Option<Resolved> {
        let (first, rest) = path.split_first()?;
        let start = match first.as_str() {
            "crate" | "$crate" => Target::Module(0),
            "self" => Target::Module(from),
            "super" => Target::Module(self.tree.parent(from)?),
            "" => return None,
            name if self.scopes.self_names.contains(name) => Target::Module(0),
            name => self.lookup_in(from, name, stack)?,
        };
        Some(self.walk_in(start, rest, stack))
    }

    fn walk_in(&self, start: Target, rest: &[String], stack: &mut Stack) -> Resolved {
        let mut current = start;
        for segment in rest {
            let Target::Module(module) = current else {
                break;
            };
            let next = match segment.as_str() {
                "super" => self.tree.parent(module).map(Target::Module),
                "self" => Some(current),
                name => self.lookup_in(module, name, stack),
            };
            match next {
                Some(next) => current = next,
                None => {
                    return Resolved {
                        target: current,
                        complete: false,
                    };
                }
            }
        }
        Resolved {
            target: current,
            complete: true,
        }
    }

    fn lookup_in(&self, module: ModuleId, name: &str, stack: &mut Stack) -> Option<Target> {
        if let Some(&child) = self.tree.modules[module].children.get(name) {
            return Some(Target::Module(child));
        }
        let scope = &self.scopes.modules[module];
        if let Some(def) = scope.defs.get(name) {
            return Some(Target::Item {
                file: def.file,
                kind: def.kind,
            });
        }
        if stack.iter().any(|(m, n)| *m == module && n == name) {
            return None;
        }
        stack.push((module, name.to_owned()));
        let found = self.imported(module, name, stack);
        stack.pop();
        found
    }

    /// `name` as one of the module's imports or globs bring it in.
    fn imported(&self, module: ModuleId, name: &str, stack: &mut Stack) -> Option<Target> {
        let scope = &self.scopes.modules[module];
        for import in scope.imports.iter().filter(|i| !i.glob) {
            if import.name.as_deref() == Some(name) {
                // An import of nothing in this crate imports another crate's item.
                return Some(match self.resolve_in(module, &import.path, stack) {
                    Some(resolved) => resolved.target,
                    None => Target::External,
                });
            }
        }
        for import in scope.imports.iter().filter(|i| i.glob) {
            let Some(resolved) = self.resolve_in(module, &import.path, stack) else {
                continue;
            };
            if !resolved.complete {
                continue;
            }
            match resolved.target {
                Target::Module(source) => {
                    if let Some(found) = self.lookup_in(source, name, stack) {
                        return Some(found);
                    }
                }
                Target::Item { file, kind } => {
                    if self.enum_has_variant(file, import.path.last(), name) {
                        return Some(Target::Item { file, kind });
                    }
                }
                Target::External => {}
            }
        }
        None
    }

    /// True when an enum called `enum_name`, defined in `file`, has a variant `variant`.
    fn enum_has_variant(&self, file: FileId, enum_name: Option<&String>, variant: &str) -> bool {
        let Some(enum_name) = enum_name else {
            return false;
        };
        self.tree.modules.iter().enumerate().any(|(id, module)| {
            module.file == file
                && self.scopes.modules[id]
                    .variants
                    .get(enum_name)
                    .is_some_and(|variants| variants.contains(variant))
        })
    }
}
