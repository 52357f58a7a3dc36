#!/usr/bin/env python3
"""Checks the module layering of every crate of the workspace: no circles between files, no
`src` file over 600 lines, no `use super::*` outside tests.

An edge A -> B means code in file A names an item that file B defines (through any path:
`crate::x::Item`, `super::Item`, a `use` of either, or a re-export of it). Module declarations
(`mod b;`) and re-exports (`pub use b::Item;`) are not edges: they publish, they do not use.
Test code (`#[cfg(test)]` modules and files) is left out.

    python3 scripts/module_graph.py            # every crate under crates/
    python3 scripts/module_graph.py -v         # and print each crate's graph
"""

import os
import re
import sys

MAX_LINES = 600
ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "crates")
VERBOSE = "-v" in sys.argv

ITEM = re.compile(
    r"^\s*(?:pub(?:\([^)]*\))?\s+)?(?:async\s+|const\s+|unsafe\s+|extern\s+\"C\"\s+)*"
    r"(?:fn|struct|enum|trait|type|const|static|union|macro_rules!)\s+(\w+)", re.M)
MOD_DECL = re.compile(
    r"((?:#\[[^\]]*\]\s*)*)(?:pub(?:\([^)]*\))?\s+)?mod\s+(\w+)\s*;")
USE = re.compile(r"\buse\s+([^;]*);", re.S)
PATH = re.compile(r"\b((?:crate|super|self)(?:::(?:\w+|\{[^;{}]*(?:\{[^;{}]*\}[^;{}]*)*\}))+)")


def strip(text):
    """Source without comments, string contents and `#[cfg(test)]` blocks."""
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    text = re.sub(r'r#*"(?:.|\n)*?"#*', '""', text)
    text = re.sub(r'"(?:\\.|[^"\\])*"', '""', text)
    text = "\n".join("" if line.lstrip().startswith("//") else line.split("//")[0]
                     for line in text.splitlines())
    out, i = [], 0
    while True:
        m = re.search(r"#\[cfg\(test\)\]\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+\w+\s*\{", text[i:])
        if not m:
            out.append(text[i:])
            break
        start = i + m.start()
        out.append(text[i:start])
        depth, j = 0, i + m.end() - 1
        while j < len(text):
            if text[j] == "{":
                depth += 1
            elif text[j] == "}":
                depth -= 1
                if depth == 0:
                    break
            j += 1
        i = j + 1
    return "".join(out)


def flatten(tree):
    """`a::{b, c::{d, self}}` -> [[a, b], [a, c, d], [a, c]]."""
    tree = re.sub(r"\s+", "", tree)
    tree = re.sub(r"\bas\w+", "", tree.replace("as", " as")) if " as" in tree else tree
    tree = re.sub(r"as\w+(?=[,}]|$)", "", tree)

    def parse(s, i, prefix):
        out, seg = [], ""
        while i < len(s):
            c = s[i]
            if s.startswith("::{", i):
                path = prefix + [p for p in seg.split("::") if p]
                items, i = parse(s, i + 3, path)
                out += items
                seg = ""
                continue
            if c == "{" and not seg:
                items, i = parse(s, i + 1, prefix)
                out += items
                continue
            if c == ",":
                if seg:
                    out.append(prefix + seg.split("::"))
                seg = ""
            elif c == "}":
                if seg:
                    out.append(prefix + seg.split("::"))
                return out, i + 1
            else:
                seg += c
            i += 1
        if seg:
            out.append(prefix + seg.split("::"))
        return out, i

    items, _ = parse(tree, 0, [])
    return [[p for p in path if p and p != "self"] for path in items]


class Crate:
    def __init__(self, src):
        self.src = src
        self.files = {}  # module path (tuple) -> file
        self.text = {}
        self.items = {}  # module path -> set of item names it defines
        self.reexports = {}  # module path -> {name: full path it points at}
        self.tests = set()
        for top in ("lib.rs", "main.rs"):
            if os.path.exists(os.path.join(src, top)):
                self.load((), os.path.join(src, top))
        bins = os.path.join(src, "bin")
        if os.path.isdir(bins):
            for f in sorted(os.listdir(bins)):
                if f.endswith(".rs"):
                    self.load(("bin", f[:-3]), os.path.join(bins, f))

    def load(self, mod, path):
        raw = open(path, encoding="utf-8").read()
        self.files[mod] = path
        text = strip(raw)
        self.text[mod] = text
        self.items[mod] = set(ITEM.findall(text))
        base = os.path.dirname(path)
        stem = os.path.splitext(os.path.basename(path))[0]
        if stem not in ("lib", "main", "mod") and mod and mod[0] != "bin":
            base = os.path.join(base, stem)
        for attrs, name in MOD_DECL.findall(text):
            self.items[mod].add(name)
            custom = re.search(r'#\[path\s*=\s*"([^"]+)"\]', attrs)
            if custom:
                child = os.path.join(os.path.dirname(path), custom.group(1))
            else:
                child = os.path.join(base, name + ".rs")
                if not os.path.exists(child):
                    child = os.path.join(base, name, "mod.rs")
            if os.path.exists(child):
                self.load(mod + (name,), child)
        # Test-only modules declared `#[cfg(test)] mod tests;`.
        for name in re.findall(r"#\[cfg\(test\)\]\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+(\w+)\s*;", raw):
            self.tests.add(mod + (name,))
        exports = {}
        for body in re.findall(r"\bpub(?:\([^)]*\))?\s+use\s+([^;]*);", text):
            for p in flatten(body):
                if p:
                    exports[p[-1]] = p
        self.reexports[mod] = exports

    def absolute(self, mod, path):
        """A path as written in module `mod`, from the crate root."""
        if not path:
            return None
        head, rest = path[0], path[1:]
        if head == "crate":
            return list(rest)
        if head == "self":
            return list(mod) + list(rest)
        if head == "super":
            up = list(mod)
            while path and path[0] == "super":
                up = up[:-1]
                path = path[1:]
            return up + list(path)
        # A path naming a child module or an item of this module is relative to it (uniform
        # paths); anything else is another crate's.
        if (tuple(mod) + (head,)) in self.files or head in self.items.get(tuple(mod), ()):
            return list(mod) + list(path)
        return None

    def resolve(self, path, seen=None):
        """The module that defines what `path` (from the root) names, following re-exports."""
        seen = seen or set()
        key = tuple(path)
        if key in seen or not path:
            return None
        seen.add(key)
        # The longest prefix that is a module.
        for k in range(len(path), -1, -1):
            mod = tuple(path[:k])
            if mod in self.files:
                rest = path[k:]
                if not rest:
                    return mod
                name = rest[0]
                if name in self.items.get(mod, ()) and (mod + (name,)) not in self.files:
                    return mod
                target = self.reexports.get(mod, {}).get(name)
                if target:
                    full = self.absolute(mod, target)
                    if full is None:
                        return None  # another crate's item
                    return self.resolve(full + rest[1:], seen)
                return mod
        return None

    def edges(self):
        out = {}
        for mod, text in self.text.items():
            if mod in self.tests or any(mod[:k] in self.tests for k in range(len(mod))):
                continue
            body = re.sub(r"\bpub(?:\([^)]*\))?\s+use\s+[^;]*;", "", text)
            paths = []
            for tree in USE.findall(body):
                paths += flatten(tree)
            for m in PATH.finditer(USE.sub("", body)):
                paths += flatten(m.group(1))
            for p in paths:
                full = self.absolute(mod, p)
                if full is None:
                    continue
                target = self.resolve(full)
                if target is not None and target != mod and target in self.files:
                    # A module's own children are its parts, not its dependencies, when it
                    # only names them to publish them; naming an item of a child is a use.
                    out.setdefault(mod, set()).add(target)
        return out


def cycles(edges):
    index, low, stack, on, found, counter = {}, {}, [], set(), [], [0]

    def strong(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges.get(v, ()):
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(comp)

    sys.setrecursionlimit(10000)
    for v in list(edges):
        if v not in index:
            strong(v)
    return found


def name(mod):
    return "::".join(mod) or "(root)"


def main():
    failed = False
    for crate in sorted(os.listdir(ROOT)):
        src = os.path.join(ROOT, crate, "src")
        if not os.path.isdir(src):
            continue
        c = Crate(src)
        edges = c.edges()
        found = cycles(edges)
        long_files = []
        globs = []
        for mod, path in sorted(c.files.items()):
            if mod in c.tests:
                continue
            lines = sum(1 for _ in open(path, encoding="utf-8"))
            if lines > MAX_LINES:
                long_files.append((os.path.relpath(path, ROOT), lines))
            if re.search(r"^\s*use super::\*;", c.text[mod], re.M):
                globs.append(os.path.relpath(path, ROOT))
        status = "ok" if not (found or long_files or globs) else "FAILED"
        print(f"{crate}: {len(c.files)} files, {sum(len(v) for v in edges.values())} uses, {status}")
        if VERBOSE:
            for mod in sorted(edges):
                print(f"    {name(mod)} -> {', '.join(sorted(name(t) for t in edges[mod]))}")
        for comp in found:
            failed = True
            print("  circle: " + " <-> ".join(sorted(name(m) for m in comp)))
        for path, lines in long_files:
            failed = True
            print(f"  {path}: {lines} lines (at most {MAX_LINES})")
        for path in globs:
            failed = True
            print(f"  {path}: `use super::*` outside tests")
    if failed:
        sys.exit(1)


if __name__ == "__main__":
    main()
