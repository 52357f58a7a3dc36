//! How long each function is, counted as clippy's `too_many_lines` counts: the lines of its
//! body between the braces that hold code, blank lines and comment-only lines left out. (For
//! an `async fn`, clippy sees the body as an `async` block and counts its braces' lines too;
//! so does this count.)

use proc_macro2::LineColumn;
use quote::ToTokens;
use syn::visit::{self, Visit};
use syn::{Block, ImplItemFn, Item, ItemFn, ItemImpl, ItemTrait, Signature, TraitItemFn, Type};

use crate::cfg::is_test_only;
use crate::scope::item_attrs;
use crate::tree::{FileId, ModuleTree};

/// A function (or method) with a body, outside test code.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Function {
    /// The file it is in.
    pub file: FileId,
    /// Its name as a reader finds it: `run`, `Agent::run`, `<Agent as Tool>::call`,
    /// `inline_module::run`, `outer::inner` for a function inside another.
    pub name: String,
    /// The 1-based line of its name.
    pub line: usize,
    /// Its lines of code.
    pub lines: usize,
}

/// Every function with a body in the tree, test code left out.
pub fn functions(tree: &ModuleTree) -> Vec<Function> {
    let mut out = Vec::new();
    for (id, module) in tree.modules.iter().enumerate() {
        let text = &tree.files[module.file].text;
        let mut visitor = FunctionVisitor {
            file: module.file,
            lines: text.lines().collect(),
            prefix: tree.inline_path(id).iter().map(|s| s.to_string()).collect(),
            out: &mut out,
        };
        for item in &module.items {
            visitor.visit_item(item);
        }
    }
    out
}

struct FunctionVisitor<'t, 'o> {
    file: FileId,
    lines: Vec<&'t str>,
    /// The names before a function's own: inline modules, the type or trait, outer functions.
    prefix: Vec<String>,
    out: &'o mut Vec<Function>,
}

impl FunctionVisitor<'_, '_> {
    fn function(&mut self, sig: &Signature, block: &Block, visit_body: impl FnOnce(&mut Self)) {
        let ident = &sig.ident;
        let mut name = self.prefix.clone();
        name.push(ident.to_string());
        let open = block.brace_token.span.open().start();
        let close = block.brace_token.span.close().start();
        let mut body = between(&self.lines, open, close);
        if sig.asyncness.is_some() {
            body = format!("{{{body}}}");
        }
        self.out.push(Function {
            file: self.file,
            name: name.join("::"),
            line: ident.span().start().line,
            lines: code_lines(&body),
        });
        self.prefix.push(ident.to_string());
        visit_body(self);
        self.prefix.pop();
    }

    fn within(&mut self, owner: String, visit_items: impl FnOnce(&mut Self)) {
        self.prefix.push(owner);
        visit_items(self);
        self.prefix.pop();
    }
}

impl<'ast> Visit<'ast> for FunctionVisitor<'_, '_> {
    fn visit_item(&mut self, item: &'ast Item) {
        // Inline modules are visited as modules of their own.
        if !is_test_only(item_attrs(item)) && !matches!(item, Item::Mod(_)) {
            visit::visit_item(self, item);
        }
    }

    fn visit_item_fn(&mut self, f: &'ast ItemFn) {
        self.function(&f.sig, &f.block, |v| visit::visit_block(v, &f.block));
    }

    fn visit_item_impl(&mut self, i: &'ast ItemImpl) {
        let owner = match &i.trait_ {
            Some((_, path, _)) => {
                let name = path
                    .segments
                    .last()
                    .map(|s| s.ident.to_string())
                    .unwrap_or_default();
                format!("<{} as {name}>", type_name(&i.self_ty))
            }
            None => type_name(&i.self_ty),
        };
        self.within(owner, |v| {
            for item in &i.items {
                v.visit_impl_item(item);
            }
        });
    }

    fn visit_impl_item_fn(&mut self, f: &'ast ImplItemFn) {
        if !is_test_only(&f.attrs) {
            self.function(&f.sig, &f.block, |v| visit::visit_block(v, &f.block));
        }
    }

    fn visit_item_trait(&mut self, t: &'ast ItemTrait) {
        self.within(t.ident.to_string(), |v| {
            for item in &t.items {
                v.visit_trait_item(item);
            }
        });
    }

    fn visit_trait_item_fn(&mut self, f: &'ast TraitItemFn) {
        if let Some(block) = &f.default {
            if !is_test_only(&f.attrs) {
                self.function(&f.sig, block, |v| visit::visit_block(v, block));
            }
        }
    }
}

/// A type as a function's name shows it: the last segment of a path, without generics.
fn type_name(ty: &Type) -> String {
    match ty {
        Type::Path(path) if path.qself.is_none() => path
            .path
            .segments
            .last()
            .map(|s| s.ident.to_string())
            .unwrap_or_default(),
        Type::Reference(reference) => format!("&{}", type_name(&reference.elem)),
        other => other.to_token_stream().to_string().replace(' ', ""),
    }
}

/// The text strictly between two positions (columns count characters, as spans do).
fn between(lines: &[&str], open: LineColumn, close: LineColumn) -> String {
    let line = |n: usize| lines.get(n.wrapping_sub(1)).copied().unwrap_or("");
    let after = |s: &str, col: usize| s.chars().skip(col).collect::<String>();
    let before = |s: &str, col: usize| s.chars().take(col).collect::<String>();
    if open.line == close.line {
        let text = line(open.line);
        return before(
            &after(text, open.column + 1),
            close.column - open.column - 1,
        );
    }
    let mut text = after(line(open.line), open.column + 1);
    for n in open.line + 1..close.line {
        text.push('\n');
        text.push_str(line(n));
    }
    text.push('\n');
    text.push_str(&before(line(close.line), close.column));
    text
}

/// The lines of `body` with code on them: not blank, not only a comment. Block comments may
/// span lines; code before or after one on a line counts the line.
pub fn code_lines(body: &str) -> usize {
    let mut in_comment = false;
    let mut count = 0;
    for line in body.trim().lines() {
        let mut rest = line;
        let mut code = false;
        loop {
            rest = rest.trim_start();
            if rest.is_empty() {
                break;
            }
            if in_comment {
                match rest.find("*/") {
                    Some(end) => {
                        rest = &rest[end + 2..];
                        in_comment = false;
                        continue;
                    }
                    None => break,
                }
            }
            let block = rest.find("/*").unwrap_or(rest.len());
            let line_comment = rest.find("//").unwrap_or(rest.len());
            code |= block > 0 && line_comment > 0;
            if block < line_comment {
                rest = &rest[block + 2..];
                in_comment = true;
                continue;
            }
            break;
        }
        if code {
            count += 1;
        }
    }
    count
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blank_and_comment_lines_do_not_count() {
        let body = "\n    let a = 1;\n\n    // a comment\n    /* a block\n       comment */\n    let b = 2; // trailing\n    /* lead */ let c = 3;\n";
        assert_eq!(code_lines(body), 3);
        assert_eq!(code_lines(""), 0);
        assert_eq!(code_lines("a /* x\n y */ b"), 2);
    }
}
