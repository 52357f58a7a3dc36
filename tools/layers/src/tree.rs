//! The module tree of one crate target (a library or a binary): which file holds which module,
//! found the way rustc finds them (`mod x;` as `x.rs` or `x/mod.rs`, `#[path]`, inline
//! `mod x { }` blocks, which belong to their file). Test-only modules are not loaded.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::cfg::is_test_only;

/// Index of a file in [`ModuleTree::files`].
pub type FileId = usize;
/// Index of a module in [`ModuleTree::modules`].
pub type ModuleId = usize;

/// A source file of the tree.
#[derive(Debug)]
pub struct SourceFile {
    /// Where it is on disk.
    pub path: PathBuf,
    /// Its path as reports show it (relative to the workspace root, `/`-separated).
    pub display: String,
    /// Its text.
    pub text: String,
    /// The module the file holds (inline modules inside it are children of that one).
    pub module: ModuleId,
}

/// A module: the top of a file, or an inline `mod x { }` block in one.
pub struct Module {
    /// Its name (`crate` for the root).
    pub name: String,
    /// The module that declares it; `None` for the crate root.
    pub parent: Option<ModuleId>,
    /// The file its items are written in.
    pub file: FileId,
    /// Its child modules by name (test-only ones left out).
    pub children: BTreeMap<String, ModuleId>,
    /// Its items. An inline child module's items are moved to the child's own [`Module`],
    /// leaving the `mod x { }` item here empty.
    pub items: Vec<syn::Item>,
}

/// Something that stops a file from being read as the compiler would.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadError {
    /// The file, as reports show it.
    pub file: String,
    /// The 1-based line, 0 when the error is about the whole file.
    pub line: usize,
    /// What went wrong.
    pub message: String,
}

/// The modules and files of one crate target.
#[derive(Default)]
pub struct ModuleTree {
    /// Every file reached from the root through non-test module declarations.
    pub files: Vec<SourceFile>,
    /// Every module, the root first.
    pub modules: Vec<Module>,
    /// Files declared only by test-only modules (`#[cfg(test)] mod tests;`): not analysed.
    pub test_files: Vec<PathBuf>,
    /// Files that could not be read or parsed, declarations without a file.
    pub errors: Vec<LoadError>,
}

/// Where the files of a module's children are looked for: rustc's directory and, for a file
/// that is not a `mod.rs`-like file (`foo.rs`), the name added before it (`foo/`).
#[derive(Clone)]
struct ChildDir {
    dir: PathBuf,
    relative: Option<String>,
}

impl ChildDir {
    fn base(&self) -> PathBuf {
        match &self.relative {
            Some(name) => self.dir.join(name),
            None => self.dir.clone(),
        }
    }
}

impl ModuleTree {
    /// Loads the tree whose root file is `root_file`; `workspace` is the directory display
    /// paths are relative to.
    pub fn load(root_file: &Path, workspace: &Path) -> ModuleTree {
        let mut tree = ModuleTree::default();
        let dir = ChildDir {
            dir: root_file.parent().unwrap_or(Path::new(".")).to_path_buf(),
            relative: None,
        };
        tree.load_file(root_file, "crate".to_owned(), None, dir, workspace);
        tree
    }

    /// The parent of a module, `None` at the root.
    pub fn parent(&self, module: ModuleId) -> Option<ModuleId> {
        self.modules[module].parent
    }

    /// The names of the modules from the file's top module down to `module` (empty for the
    /// top module itself): the path of an inline module inside its file.
    pub fn inline_path(&self, module: ModuleId) -> Vec<&str> {
        let file = self.modules[module].file;
        let mut names = Vec::new();
        let mut current = module;
        while self.files[file].module != current {
            names.push(self.modules[current].name.as_str());
            match self.modules[current].parent {
                Some(parent) => current = parent,
                None => break,
            }
        }
        names.reverse();
        names
    }

    fn load_file(
        &mut self,
        path: &Path,
        name: String,
        parent: Option<ModuleId>,
        dir: ChildDir,
        workspace: &Path,
    ) -> Option<ModuleId> {
        let display = display_path(path, workspace);
        let text = match std::fs::read_to_string(path) {
            Ok(text) => text,
            Err(err) => {
                self.errors.push(LoadError {
                    file: display,
                    line: 0,
                    message: err.to_string(),
                });
                return None;
            }
        };
        let items = match syn::parse_file(&text) {
            Ok(file) => file.items,
            Err(err) => {
                let line = err.span().start().line;
                let message = format!("does not parse: {err}");
                self.errors.push(LoadError {
                    file: display.clone(),
                    line,
                    message,
                });
                Vec::new()
            }
        };
        let file = self.files.len();
        let module = self.modules.len();
        self.files.push(SourceFile {
            path: path.to_path_buf(),
            display,
            text,
            module,
        });
        self.modules.push(Module {
            name,
            parent,
            file,
            children: BTreeMap::new(),
            items,
        });
        self.load_children(module, &dir, workspace);
        Some(module)
    }

    fn load_children(&mut self, module: ModuleId, dir: &ChildDir, workspace: &Path) {
        let mut items = std::mem::take(&mut self.modules[module].items);
        for item in &mut items {
            let syn::Item::Mod(decl) = item else { continue };
            let name = decl.ident.to_string();
            let path_attr = path_attribute(&decl.attrs);
            let test_only = is_test_only(&decl.attrs);
            let child = match &mut decl.content {
                Some((_, inner)) if !test_only => {
                    let child_dir = ChildDir {
                        dir: match &path_attr {
                            Some(path) => dir.dir.join(path),
                            None => dir.base().join(&name),
                        },
                        relative: None,
                    };
                    let inner = std::mem::take(inner);
                    let file = self.modules[module].file;
                    let child = self.modules.len();
                    self.modules.push(Module {
                        name: name.clone(),
                        parent: Some(module),
                        file,
                        children: BTreeMap::new(),
                        items: inner,
                    });
                    self.load_children(child, &child_dir, workspace);
                    Some(child)
                }
                Some(_) => None,
                None => {
                    let found = child_file(dir, &name, path_attr.as_deref());
                    let line = decl.ident.span().start().line;
                    match found {
                        Some((file, _)) if test_only => {
                            self.test_files.push(file);
                            None
                        }
                        _ if test_only => None,
                        Some((file, child_dir)) => {
                            self.load_file(&file, name.clone(), Some(module), child_dir, workspace)
                        }
                        None => {
                            let file = self.files[self.modules[module].file].display.clone();
                            let message = format!("no file for `mod {name};`");
                            self.errors.push(LoadError {
                                file,
                                line,
                                message,
                            });
                            None
                        }
                    }
                }
            };
            if let Some(child) = child {
                self.modules[module].children.insert(name, child);
            }
        }
        self.modules[module].items = items;
    }
}

/// The file of `mod name;` and where its own children are, if it exists.
fn child_file(dir: &ChildDir, name: &str, path_attr: Option<&str>) -> Option<(PathBuf, ChildDir)> {
    if let Some(path) = path_attr {
        // `#[path]` is relative to the declaring file's directory, and the file it names is
        // treated as a `mod.rs`: its children are its siblings.
        let file = dir.dir.join(path);
        let child_dir = ChildDir {
            dir: file.parent().unwrap_or(Path::new(".")).to_path_buf(),
            relative: None,
        };
        return file.is_file().then_some((file, child_dir));
    }
    let base = dir.base();
    let flat = base.join(format!("{name}.rs"));
    if flat.is_file() {
        return Some((
            flat,
            ChildDir {
                dir: base,
                relative: Some(name.to_owned()),
            },
        ));
    }
    let nested = base.join(name).join("mod.rs");
    if nested.is_file() {
        return Some((
            nested,
            ChildDir {
                dir: base.join(name),
                relative: None,
            },
        ));
    }
    None
}

/// The value of a `#[path = "..."]` attribute.
fn path_attribute(attrs: &[syn::Attribute]) -> Option<String> {
    attrs.iter().find_map(|attr| match &attr.meta {
        syn::Meta::NameValue(nv) if nv.path.is_ident("path") => match &nv.value {
            syn::Expr::Lit(syn::ExprLit {
                lit: syn::Lit::Str(s),
                ..
            }) => Some(s.value()),
            _ => None,
        },
        _ => None,
    })
}

/// `path` relative to `workspace`, `/`-separated.
pub fn display_path(path: &Path, workspace: &Path) -> String {
    let relative = path.strip_prefix(workspace).unwrap_or(path);
    let parts: Vec<String> = relative
        .components()
        .filter(|c| !matches!(c, std::path::Component::CurDir))
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    parts.join("/")
}
