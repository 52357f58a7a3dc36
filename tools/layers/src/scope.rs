//! The names each module binds: the items it defines, and its imports (`use` trees flattened
//! into one entry per name, glob or rename). Test-only items are left out.

use std::collections::{BTreeMap, BTreeSet};

use syn::{Item, UseTree, Visibility};

use crate::cfg::is_test_only;
use crate::tree::{FileId, ModuleId, ModuleTree};

/// What kind of item a name is, as far as resolution cares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DefKind {
    /// A trait: importing it is a use even when its name never appears (method calls).
    Trait,
    /// A `macro_rules!` macro.
    Macro,
    /// Any other item.
    Other,
}

/// An item defined in a module.
#[derive(Debug, Clone, Copy)]
pub struct Def {
    /// What kind of item.
    pub kind: DefKind,
    /// The file that defines it (for `#[macro_export]` macros, not the root's).
    pub file: FileId,
}

/// One name brought in by a `use` tree.
#[derive(Debug, Clone)]
pub struct Import {
    /// The name it binds; `None` for `as _` and globs.
    pub name: Option<String>,
    /// The path as written, `crate`/`self`/`super` included; a leading `::` is an empty
    /// first segment. For a glob, the path of what is globbed.
    pub path: Vec<String>,
    /// `use path::*`.
    pub glob: bool,
    /// Written with any `pub` visibility: it publishes the name.
    pub public: bool,
    /// The 1-based line of its last segment.
    pub line: usize,
}

impl Import {
    /// The import as a reader would write it (`use crate::a::B as C`).
    pub fn text(&self) -> String {
        let mut text = format!("use {}", self.path.join("::"));
        if self.glob {
            text.push_str("::*");
        } else {
            match &self.name {
                None => text.push_str(" as _"),
                Some(name) if self.path.last() != Some(name) => {
                    text.push_str(&format!(" as {name}"));
                }
                Some(_) => {}
            }
        }
        text
    }
}

/// The names a module binds.
#[derive(Debug, Default)]
pub struct Scope {
    /// Items it defines, by name.
    pub defs: BTreeMap<String, Def>,
    /// Its `use` imports, in order.
    pub imports: Vec<Import>,
    /// The variants of the enums it defines (for `use Enum::*` and `Enum::Variant`).
    pub variants: BTreeMap<String, BTreeSet<String>>,
}

/// The scopes of every module of a tree (indexed by [`ModuleId`]), and the crate-wide names.
#[derive(Debug, Default)]
pub struct Scopes {
    /// Per module.
    pub modules: Vec<Scope>,
    /// `macro_rules!` macros by name, with the files defining them (textual scope: a bare
    /// `name!` can name one of these from another file).
    pub macros: BTreeMap<String, Vec<FileId>>,
    /// Names `extern crate self as name;` gives the crate itself.
    pub self_names: BTreeSet<String>,
}

impl Scopes {
    /// Collects the names bound by every module of `tree`.
    pub fn collect(tree: &ModuleTree) -> Scopes {
        let mut scopes = Scopes {
            modules: (0..tree.modules.len()).map(|_| Scope::default()).collect(),
            ..Scopes::default()
        };
        for (id, module) in tree.modules.iter().enumerate() {
            for item in &module.items {
                if !is_test_only(item_attrs(item)) {
                    scopes.add_item(id, module.file, item);
                }
            }
        }
        scopes
    }

    fn add_item(&mut self, module: ModuleId, file: FileId, item: &Item) {
        let def = |kind| Def { kind, file };
        let scope = &mut self.modules[module];
        match item {
            Item::Use(item) => {
                let public = !matches!(item.vis, Visibility::Inherited);
                flatten(&item.tree, &mut Vec::new(), public, &mut scope.imports);
            }
            Item::Enum(item) => {
                let variants = item.variants.iter().map(|v| v.ident.to_string()).collect();
                scope.variants.insert(item.ident.to_string(), variants);
                scope
                    .defs
                    .insert(item.ident.to_string(), def(DefKind::Other));
            }
            Item::Trait(item) => {
                scope
                    .defs
                    .insert(item.ident.to_string(), def(DefKind::Trait));
            }
            Item::TraitAlias(item) => {
                scope
                    .defs
                    .insert(item.ident.to_string(), def(DefKind::Trait));
            }
            Item::Macro(item) => {
                let Some(ident) = &item.ident else { return };
                let name = ident.to_string();
                scope
                    .defs
                    .entry(name.clone())
                    .or_insert(def(DefKind::Macro));
                self.macros.entry(name.clone()).or_default().push(file);
                let exported = item.attrs.iter().any(|a| a.path().is_ident("macro_export"));
                if exported {
                    self.modules[0]
                        .defs
                        .entry(name)
                        .or_insert(def(DefKind::Macro));
                }
            }
            Item::ExternCrate(item) => {
                if item.ident == "self" {
                    if let Some((_, alias)) = &item.rename {
                        self.self_names.insert(alias.to_string());
                    }
                }
            }
            Item::ForeignMod(foreign) => {
                for item in &foreign.items {
                    let ident = match item {
                        syn::ForeignItem::Fn(f) => &f.sig.ident,
                        syn::ForeignItem::Static(s) => &s.ident,
                        syn::ForeignItem::Type(t) => &t.ident,
                        _ => continue,
                    };
                    scope.defs.insert(ident.to_string(), def(DefKind::Other));
                }
            }
            other => {
                if let Some(ident) = item_ident(other) {
                    scope
                        .defs
                        .entry(ident.to_string())
                        .or_insert(def(DefKind::Other));
                }
            }
        }
    }
}

/// The name an item defines, for the kinds with one name and no special meaning here.
pub fn item_ident(item: &Item) -> Option<&syn::Ident> {
    match item {
        Item::Const(i) => Some(&i.ident),
        Item::Fn(i) => Some(&i.sig.ident),
        Item::Static(i) => Some(&i.ident),
        Item::Struct(i) => Some(&i.ident),
        Item::Type(i) => Some(&i.ident),
        Item::Union(i) => Some(&i.ident),
        Item::Enum(i) => Some(&i.ident),
        Item::Trait(i) => Some(&i.ident),
        Item::TraitAlias(i) => Some(&i.ident),
        Item::Mod(i) => Some(&i.ident),
        Item::Macro(i) => i.ident.as_ref(),
        _ => None,
    }
}

/// The attributes of an item.
pub fn item_attrs(item: &Item) -> &[syn::Attribute] {
    match item {
        Item::Const(i) => &i.attrs,
        Item::Enum(i) => &i.attrs,
        Item::ExternCrate(i) => &i.attrs,
        Item::Fn(i) => &i.attrs,
        Item::ForeignMod(i) => &i.attrs,
        Item::Impl(i) => &i.attrs,
        Item::Macro(i) => &i.attrs,
        Item::Mod(i) => &i.attrs,
        Item::Static(i) => &i.attrs,
        Item::Struct(i) => &i.attrs,
        Item::Trait(i) => &i.attrs,
        Item::TraitAlias(i) => &i.attrs,
        Item::Type(i) => &i.attrs,
        Item::Union(i) => &i.attrs,
        Item::Use(i) => &i.attrs,
        _ => &[],
    }
}

/// Flattens a `use` tree: `a::{self, b::{c as d, *}}` gives `a` (as `a`), `a::b::c` (as `d`)
/// and the glob `a::b::*`.
pub fn flatten(tree: &UseTree, prefix: &mut Vec<String>, public: bool, out: &mut Vec<Import>) {
    match tree {
        UseTree::Path(path) => {
            prefix.push(path.ident.to_string());
            flatten(&path.tree, prefix, public, out);
            prefix.pop();
        }
        UseTree::Name(name) => {
            let line = name.ident.span().start().line;
            let (path, bound) = leaf(prefix, &name.ident);
            out.push(Import {
                name: bound,
                path,
                glob: false,
                public,
                line,
            });
        }
        UseTree::Rename(rename) => {
            let line = rename.ident.span().start().line;
            let (path, _) = leaf(prefix, &rename.ident);
            let name = (rename.rename != "_").then(|| rename.rename.to_string());
            out.push(Import {
                name,
                path,
                glob: false,
                public,
                line,
            });
        }
        UseTree::Glob(glob) => {
            let line = glob.star_token.span.start().line;
            let path = prefix.clone();
            out.push(Import {
                name: None,
                path,
                glob: true,
                public,
                line,
            });
        }
        UseTree::Group(group) => {
            for tree in &group.items {
                flatten(tree, prefix, public, out);
            }
        }
    }
}

/// The path and bound name of a leaf `ident` after `prefix` (`self` names the prefix).
fn leaf(prefix: &[String], ident: &syn::Ident) -> (Vec<String>, Option<String>) {
    if ident == "self" {
        (prefix.to_vec(), prefix.last().cloned())
    } else {
        let mut path = prefix.to_vec();
        path.push(ident.to_string());
        (path, Some(ident.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every import the `use` declarations of `source` make.
    fn imports_of(source: &str) -> syn::Result<Vec<Import>> {
        let file = syn::parse_file(source)?;
        let mut out = Vec::new();
        for item in &file.items {
            if let Item::Use(item) = item {
                let public = !matches!(item.vis, Visibility::Inherited);
                flatten(&item.tree, &mut Vec::new(), public, &mut out);
            }
        }
        Ok(out)
    }

    #[test]
    fn use_trees_flatten_to_one_import_per_name() {
        let imports = imports_of(
            "pub use crate::a::{self, b::{c as d, *}, e as _};\nuse super::super::f::G;",
        )
        .unwrap();
        let texts: Vec<String> = imports.iter().map(Import::text).collect();
        assert_eq!(
            texts,
            [
                "use crate::a",
                "use crate::a::b::c as d",
                "use crate::a::b::*",
                "use crate::a::e as _",
                "use super::super::f::G",
            ]
        );
        assert!(imports[..4].iter().all(|i| i.public));
        assert!(!imports[4].public);
        assert_eq!(imports[0].name.as_deref(), Some("a"));
        assert_eq!(imports[4].line, 2);
    }
}
