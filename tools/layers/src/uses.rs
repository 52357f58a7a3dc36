//! Every place a module's code names an item that another file of the crate defines: paths in
//! expressions, types, patterns, bounds and `impl` headers, paths in macro arguments (parsed
//! as expressions or a `matches!` pattern where they parse, scanned token by token where
//! not), macro names, and private imports the module uses. Attributes are skipped; so are
//! test-only items, module declarations and re-exports (`pub use` publishes, it does not use).

use std::collections::BTreeSet;

use proc_macro2::{Delimiter, Spacing, TokenStream, TokenTree};
use syn::parse::ParseStream;
use syn::punctuated::Punctuated;
use syn::visit::{self, Visit};
use syn::{
    Attribute, Block, Expr, ExprMethodCall, ImplItem, Item, ItemImpl, Macro, Pat, Path, Stmt,
    Token, TraitItem,
};

use crate::cfg::is_test_only;
use crate::methods::{Methods, TypeKey, type_key};
use crate::resolve::{Resolved, Resolver, Target};
use crate::scope::{DefKind, Import, flatten, item_attrs, item_ident};
use crate::tree::{FileId, ModuleId};

/// Code in file `from`, at `line`, naming an item of file `to`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Use {
    /// The file whose code names the item.
    pub from: FileId,
    /// The file that defines it.
    pub to: FileId,
    /// The 1-based line in `from`.
    pub line: usize,
    /// The path as written (`crate::wire::Request`, `use super::config::Settings`, `log!`).
    pub text: String,
    /// False when the path was followed only as far as a module (see [`Resolved::complete`]).
    pub complete: bool,
}

/// The uses in the code of every module of the resolver's tree, same-file ones left out.
pub fn collect(resolver: &Resolver) -> Vec<Use> {
    let methods = Methods::collect(resolver);
    let mut out = Vec::new();
    for module in 0..resolver.tree.modules.len() {
        module_uses(resolver, &methods, module, &mut out);
    }
    out
}

fn module_uses(resolver: &Resolver, methods: &Methods, module: ModuleId, out: &mut Vec<Use>) {
    let file = resolver.tree.modules[module].file;
    let mut visitor = CodeVisitor {
        resolver,
        methods,
        module,
        file,
        impl_types: Vec::new(),
        frames: Vec::new(),
        referenced: BTreeSet::new(),
        out: Vec::new(),
    };
    for item in &resolver.tree.modules[module].items {
        visitor.visit_item(item);
    }
    // A private import is a use when the module's code names what it imports, or when it
    // imports a trait (its methods) or `as _`; otherwise it only passes the name on to child
    // modules, which then use it themselves.
    for import in &resolver.scopes.modules[module].imports {
        if import.public || import.glob {
            continue;
        }
        let named = match &import.name {
            Some(name) => visitor.referenced.contains(name),
            None => true,
        };
        let Some(resolved) = resolver.resolve(module, &import.path) else {
            continue;
        };
        let is_trait = matches!(
            resolved.target,
            Target::Item {
                kind: DefKind::Trait,
                ..
            }
        );
        if named || is_trait {
            visitor.push(resolved, import.line, import.text());
        }
    }
    out.append(&mut visitor.out);
}

/// The names a block binds itself: its own items shadow the module's names; its `use`
/// declarations import.
#[derive(Default)]
struct Frame {
    locals: BTreeSet<String>,
    imports: Vec<Import>,
}

struct CodeVisitor<'r, 'a> {
    resolver: &'r Resolver<'a>,
    methods: &'r Methods,
    module: ModuleId,
    file: FileId,
    /// The types of the enclosing `impl` blocks (`None` for one of another crate's type).
    impl_types: Vec<Option<TypeKey>>,
    frames: Vec<Frame>,
    /// First segments of the paths in the module's code: the names it uses.
    referenced: BTreeSet<String>,
    out: Vec<Use>,
}

impl CodeVisitor<'_, '_> {
    fn push(&mut self, resolved: Resolved, line: usize, text: String) {
        // A path that names a module itself is no use of it (in code, a single name naming a
        // module is a local variable that shares the module's name).
        if resolved.complete && matches!(resolved.target, Target::Module(_)) {
            return;
        }
        let Some(to) = self.resolver.file_of(resolved.target) else {
            return;
        };
        if to != self.file {
            let complete = resolved.complete;
            self.out.push(Use {
                from: self.file,
                to,
                line,
                text,
                complete,
            });
        }
    }

    /// A path written in code (`macro_name` for a macro's path).
    fn record(&mut self, segments: &[String], line: usize, is_macro: bool) {
        let Some(first) = segments.first() else {
            return;
        };
        let text = segments.join("::") + if is_macro { "!" } else { "" };
        if !is_macro {
            self.associated(segments, line, &text);
        }
        let resolved = match first.as_str() {
            "crate" | "$crate" | "self" | "super" => self.resolver.resolve(self.module, segments),
            "Self" => return,
            name => match self.in_frames(name) {
                Some(Some(start)) => Some(self.resolver.walk(start, &segments[1..])),
                Some(None) => return,
                None => {
                    self.referenced.insert(name.to_owned());
                    self.resolver.resolve(self.module, segments)
                }
            },
        };
        match resolved {
            Some(resolved) if resolved.complete || !is_macro => self.push(resolved, line, text),
            _ if is_macro => self.textual_macro(segments, line, text),
            _ => {}
        }
    }

    /// `Type::method` and `Self::method`, for a method written in another file than its type.
    fn associated(&mut self, segments: &[String], line: usize, text: &str) {
        let [.., owner, name] = segments else { return };
        let key = if segments.len() == 2 && owner == "Self" {
            self.impl_types.last().cloned().flatten()
        } else {
            let owner_path = &segments[..segments.len() - 1];
            match self.resolve_code_path(owner_path) {
                Some(Resolved {
                    target: Target::Item { file, .. },
                    complete: true,
                }) => Some((file, owner.clone())),
                _ => None,
            }
        };
        if let Some(file) = key.and_then(|key| self.methods.file_of(&key, name)) {
            self.push_method(file, line, text.to_owned());
        }
    }

    fn push_method(&mut self, file: FileId, line: usize, text: String) {
        let target = Target::Item {
            file,
            kind: DefKind::Other,
        };
        self.push(
            Resolved {
                target,
                complete: true,
            },
            line,
            text,
        );
    }

    /// A path in code resolved as `record` does, without recording anything.
    fn resolve_code_path(&self, segments: &[String]) -> Option<Resolved> {
        let first = segments.first()?;
        match first.as_str() {
            "crate" | "$crate" | "self" | "super" => self.resolver.resolve(self.module, segments),
            "Self" => None,
            name => match self.in_frames(name) {
                Some(start) => Some(self.resolver.walk(start?, &segments[1..])),
                None => self.resolver.resolve(self.module, segments),
            },
        }
    }

    /// What a name means in the enclosing blocks: `Some(None)` for a local item (same file),
    /// `Some(Some(target))` for a block-level import, `None` when no block binds it.
    fn in_frames(&self, name: &str) -> Option<Option<Target>> {
        for frame in self.frames.iter().rev() {
            if frame.locals.contains(name) {
                return Some(None);
            }
            for import in &frame.imports {
                if import.glob {
                    let Some(source) = self.resolver.resolve(self.module, &import.path) else {
                        continue;
                    };
                    if let Target::Module(source) = source.target {
                        if let Some(found) = self.resolver.lookup(source, name) {
                            return Some(Some(found));
                        }
                    }
                } else if import.name.as_deref() == Some(name) {
                    let resolved = self.resolver.resolve(self.module, &import.path);
                    return Some(resolved.map(|r| r.target));
                }
            }
        }
        None
    }

    /// A `macro_rules!` macro named by its bare name from wherever it is in textual scope.
    fn textual_macro(&mut self, segments: &[String], line: usize, text: String) {
        let Some(name) = segments.last() else { return };
        let Some(files) = self.resolver.scopes.macros.get(name) else {
            return;
        };
        if files.contains(&self.file) {
            return;
        }
        if let Some(&to) = files.first() {
            let kind = DefKind::Macro;
            let resolved = Resolved {
                target: Target::Item { file: to, kind },
                complete: true,
            };
            self.push(resolved, line, text);
        }
    }

    /// A block's own items and imports; its imports of items of other files are uses.
    fn frame(&mut self, stmts: &[Stmt]) -> Frame {
        let mut frame = Frame::default();
        for stmt in stmts {
            let Stmt::Item(item) = stmt else { continue };
            if is_test_only(item_attrs(item)) {
                continue;
            }
            if let Item::Use(item) = item {
                let start = frame.imports.len();
                flatten(&item.tree, &mut Vec::new(), false, &mut frame.imports);
                for import in &frame.imports[start..] {
                    if import.glob {
                        continue;
                    }
                    if let Some(resolved) = self.resolver.resolve(self.module, &import.path) {
                        self.push(resolved, import.line, import.text());
                    }
                }
            } else if let Some(ident) = item_ident(item) {
                frame.locals.insert(ident.to_string());
            }
        }
        frame
    }

    /// A macro's arguments: as expressions, or as `matches!`'s expression and pattern, or as
    /// statements, where they parse; else every path in their tokens.
    fn macro_body(&mut self, mac: &Macro) {
        if let Ok(exprs) = mac.parse_body_with(Punctuated::<Expr, Token![,]>::parse_terminated) {
            for expr in &exprs {
                if let Expr::Lit(syn::ExprLit {
                    lit: syn::Lit::Str(s),
                    ..
                }) = expr
                {
                    self.format_args(s);
                }
                self.visit_expr(expr);
            }
        } else if let Ok((expr, pat, guard)) = mac.parse_body_with(matches_body) {
            self.visit_expr(&expr);
            self.visit_pat(&pat);
            if let Some(guard) = guard {
                self.visit_expr(&guard);
            }
        } else if let Ok(stmts) = mac.parse_body_with(Block::parse_within) {
            let frame = self.frame(&stmts);
            self.frames.push(frame);
            for stmt in &stmts {
                self.visit_stmt(stmt);
            }
            self.frames.pop();
        } else {
            self.scan(mac.tokens.clone());
        }
    }

    /// Every path (`a::b`, `$crate::a`) and macro name (`name!`) in a token stream; every
    /// other identifier counts as a name the code uses (for imports).
    fn scan(&mut self, tokens: TokenStream) {
        let tokens: Vec<TokenTree> = tokens.into_iter().collect();
        let mut i = 0;
        while i < tokens.len() {
            match &tokens[i] {
                TokenTree::Group(group) => {
                    if group.delimiter() != Delimiter::None || !group.stream().is_empty() {
                        self.scan(group.stream());
                    }
                    i += 1;
                }
                TokenTree::Punct(p) if p.as_char() == '$' => {
                    // `$crate::path`; `$name` (a macro variable) is skipped.
                    match tokens.get(i + 1) {
                        Some(TokenTree::Ident(id)) if id == "crate" => {
                            i = self.scan_path(&tokens, i + 1, "$crate".to_owned());
                        }
                        _ => i += 2,
                    }
                }
                TokenTree::Ident(id) => {
                    i = self.scan_path(&tokens, i, id.to_string());
                }
                TokenTree::Literal(literal) => {
                    if let syn::Lit::Str(s) = syn::Lit::new(literal.clone()) {
                        self.format_args(&s);
                    }
                    i += 1;
                }
                _ => i += 1,
            }
        }
    }

    /// The names a format string captures (`"{CONST}"`, `"{value:?}"`).
    fn format_args(&mut self, literal: &syn::LitStr) {
        let line = literal.span().start().line;
        for name in captured_names(&literal.value()) {
            self.record(&[name], line, false);
        }
    }

    /// The path starting at `tokens[start]` (whose name is `first`); returns the index after.
    fn scan_path(&mut self, tokens: &[TokenTree], start: usize, first: String) -> usize {
        let line = tokens[start].span().start().line;
        let mut segments = vec![first];
        let mut i = start + 1;
        while let (
            Some(TokenTree::Punct(a)),
            Some(TokenTree::Punct(b)),
            Some(TokenTree::Ident(id)),
        ) = (tokens.get(i), tokens.get(i + 1), tokens.get(i + 2))
        {
            if a.as_char() != ':' || a.spacing() != Spacing::Joint || b.as_char() != ':' {
                break;
            }
            segments.push(id.to_string());
            i += 3;
        }
        let is_macro = matches!(tokens.get(i), Some(TokenTree::Punct(p)) if p.as_char() == '!');
        if segments.len() > 1 || is_macro {
            self.record(&segments, line, is_macro);
        } else {
            self.referenced.insert(segments.remove(0));
        }
        i
    }
}

/// The identifiers a format string captures: `{name}`, `{name:>8}`; not `{{`, `{0}`, `{}`.
fn captured_names(format: &str) -> Vec<String> {
    let mut names = Vec::new();
    let mut rest = format;
    while let Some(open) = rest.find('{') {
        rest = &rest[open + 1..];
        if let Some(after) = rest.strip_prefix('{') {
            rest = after;
            continue;
        }
        let end = rest.find(['}', ':']).unwrap_or(rest.len());
        let name = rest[..end].trim();
        let mut chars = name.chars();
        let starts = chars.next().is_some_and(|c| c.is_alphabetic() || c == '_');
        if starts && chars.all(|c| c.is_alphanumeric() || c == '_') && name != "_" {
            names.push(name.to_owned());
        }
        rest = &rest[end..];
    }
    names
}

/// `matches!`'s arguments: an expression, a pattern, an optional guard.
fn matches_body(input: ParseStream) -> syn::Result<(Expr, Pat, Option<Expr>)> {
    let expr: Expr = input.parse()?;
    input.parse::<Token![,]>()?;
    let pat = Pat::parse_multi_with_leading_vert(input)?;
    let guard = if input.peek(Token![if]) {
        input.parse::<Token![if]>()?;
        Some(input.parse()?)
    } else {
        None
    };
    input.parse::<Option<Token![,]>>()?;
    Ok((expr, pat, guard))
}

impl<'ast> Visit<'ast> for CodeVisitor<'_, '_> {
    /// An attribute's arguments may name items (`#[arg(value_parser = parse_secs)]`); its own
    /// name, `derive` lists, `cfg` predicates and doc comments do not count.
    fn visit_attribute(&mut self, attr: &'ast Attribute) {
        let path = attr.path();
        if ["doc", "derive", "cfg", "cfg_attr"]
            .iter()
            .any(|name| path.is_ident(name))
        {
            return;
        }
        if let syn::Meta::List(list) = &attr.meta {
            self.scan(list.tokens.clone());
        }
    }

    fn visit_path(&mut self, path: &'ast Path) {
        if path.leading_colon.is_none() {
            if let Some(first) = path.segments.first() {
                let segments: Vec<String> =
                    path.segments.iter().map(|s| s.ident.to_string()).collect();
                self.record(&segments, first.ident.span().start().line, false);
            }
        }
        visit::visit_path(self, path);
    }

    fn visit_macro(&mut self, mac: &'ast Macro) {
        if mac.path.leading_colon.is_none() {
            let segments: Vec<String> = mac
                .path
                .segments
                .iter()
                .map(|s| s.ident.to_string())
                .collect();
            if let Some(first) = mac.path.segments.first() {
                self.record(&segments, first.ident.span().start().line, true);
            }
        }
        self.macro_body(mac);
    }

    fn visit_item_impl(&mut self, block: &'ast ItemImpl) {
        let key = type_key(self.resolver, self.module, &block.self_ty);
        self.impl_types.push(key);
        visit::visit_item_impl(self, block);
        self.impl_types.pop();
    }

    /// `self.method()` in an `impl` of a type whose method is written in another file.
    fn visit_expr_method_call(&mut self, call: &'ast ExprMethodCall) {
        let on_self = matches!(&*call.receiver, Expr::Path(p) if p.path.is_ident("self"));
        if let (true, Some(Some(key))) = (on_self, self.impl_types.last()) {
            let name = call.method.to_string();
            if let Some(file) = self.methods.file_of(key, &name) {
                let line = call.method.span().start().line;
                self.push_method(file, line, format!("self.{name}()"));
            }
        }
        visit::visit_expr_method_call(self, call);
    }

    fn visit_block(&mut self, block: &'ast Block) {
        let frame = self.frame(&block.stmts);
        self.frames.push(frame);
        visit::visit_block(self, block);
        self.frames.pop();
    }

    fn visit_item(&mut self, item: &'ast Item) {
        if is_test_only(item_attrs(item)) {
            return;
        }
        match item {
            // Child modules are analysed as modules; imports are uses only as above.
            Item::Mod(_) | Item::Use(_) | Item::ExternCrate(_) => {}
            // A `macro_rules!` definition: the paths its expansions will name.
            Item::Macro(def) if def.ident.is_some() => self.scan(def.mac.tokens.clone()),
            _ => visit::visit_item(self, item),
        }
    }

    fn visit_impl_item(&mut self, item: &'ast ImplItem) {
        let attrs = match item {
            ImplItem::Const(i) => &i.attrs,
            ImplItem::Fn(i) => &i.attrs,
            ImplItem::Type(i) => &i.attrs,
            ImplItem::Macro(i) => &i.attrs,
            _ => return visit::visit_impl_item(self, item),
        };
        if !is_test_only(attrs) {
            visit::visit_impl_item(self, item);
        }
    }

    fn visit_trait_item(&mut self, item: &'ast TraitItem) {
        let attrs = match item {
            TraitItem::Const(i) => &i.attrs,
            TraitItem::Fn(i) => &i.attrs,
            TraitItem::Type(i) => &i.attrs,
            TraitItem::Macro(i) => &i.attrs,
            _ => return visit::visit_trait_item(self, item),
        };
        if !is_test_only(attrs) {
            visit::visit_trait_item(self, item);
        }
    }
}
