//! Where each type's inherent methods are written. A type's `impl` blocks may be spread over
//! several files (`impl McpServer { .. }` in `server/subscribe.rs` for the `McpServer` of `server.rs`);
//! a call of such a method uses the file that writes it, though no path names that file.
//! Calls are followed where the type is known without type inference: `self.method()` in an
//! `impl` of the type, `Self::method` and `Type::method`.

use std::collections::BTreeMap;

use syn::{ImplItem, Item, Type};

use crate::cfg::is_test_only;
use crate::resolve::{Resolver, Target};
use crate::tree::FileId;

/// A type of the crate: the file that defines it and its name there.
pub type TypeKey = (FileId, String);

/// The inherent methods (and associated functions and constants) of the crate's types, with
/// the file of the `impl` block that defines each.
#[derive(Debug, Default)]
pub struct Methods {
    by_type: BTreeMap<TypeKey, BTreeMap<String, FileId>>,
}

impl Methods {
    /// Collects the inherent `impl` blocks of every module (test code left out).
    pub fn collect(resolver: &Resolver) -> Methods {
        let mut methods = Methods::default();
        for (id, module) in resolver.tree.modules.iter().enumerate() {
            for item in &module.items {
                let Item::Impl(block) = item else { continue };
                if block.trait_.is_some() || is_test_only(&block.attrs) {
                    continue;
                }
                let Some(key) = type_key(resolver, id, &block.self_ty) else {
                    continue;
                };
                let entry = methods.by_type.entry(key).or_default();
                for item in &block.items {
                    let (ident, attrs) = match item {
                        ImplItem::Fn(f) => (&f.sig.ident, &f.attrs),
                        ImplItem::Const(c) => (&c.ident, &c.attrs),
                        _ => continue,
                    };
                    if !is_test_only(attrs) {
                        entry.entry(ident.to_string()).or_insert(module.file);
                    }
                }
            }
        }
        methods
    }

    /// The file whose `impl` block defines `name` for the type `key`.
    pub fn file_of(&self, key: &TypeKey, name: &str) -> Option<FileId> {
        self.by_type.get(key)?.get(name).copied()
    }
}

/// The type an `impl` block is for, when it is a path to a type of this crate.
pub fn type_key(resolver: &Resolver, module: usize, ty: &Type) -> Option<TypeKey> {
    let Type::Path(path) = ty else { return None };
    if path.qself.is_some() || path.path.leading_colon.is_some() {
        return None;
    }
    let segments: Vec<String> = path
        .path
        .segments
        .iter()
        .map(|s| s.ident.to_string())
        .collect();
    let resolved = resolver.resolve(module, &segments)?;
    match resolved.target {
        Target::Item { file, .. } if resolved.complete => Some((file, segments.last()?.clone())),
        _ => None,
    }
}
