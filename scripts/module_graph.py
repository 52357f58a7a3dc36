#!/usr/bin/env python3
"""Prints the dependency graph between the top-level modules of a crate and fails on a cycle.

An edge A -> B means code in module A names `crate::B::...` (or a root re-export of an item of
B). Re-exports (`pub use`) that only keep an old public path working are listed apart: they
are aliases, not dependencies of the code.

    scripts/module_graph.py [crates/tinyagent/src]
"""

import os
import re
import sys

root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
    os.path.dirname(__file__), "..", "crates", "tinyagent", "src")


def strip_comments(text):
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    return "\n".join(line.split("//")[0] if not line.lstrip().startswith("//") else ""
                     for line in text.splitlines())


lib = strip_comments(open(os.path.join(root, "lib.rs"), encoding="utf-8").read())
modules = sorted(set(re.findall(r"^\s*(?:pub(?:\(crate\))?\s+)?mod\s+(\w+)\s*;", lib, re.M)))

# Names the crate root re-exports, mapped to the module they come from.
root_names = {}
for src, names in re.findall(r"pub use (\w+)::\{([^}]*)\}", lib):
    for n in names.split(","):
        if n.strip():
            root_names[n.strip()] = src
for src, name in re.findall(r"pub use (\w+)::(\w+);", lib):
    root_names[name] = src


def files_of(module):
    path = os.path.join(root, module)
    if os.path.isdir(path):
        for dirpath, _, files in os.walk(path):
            for f in files:
                if f.endswith(".rs"):
                    yield os.path.join(dirpath, f)
    elif os.path.exists(path + ".rs"):
        yield path + ".rs"


def targets(path_text):
    """Top-level modules named by one `crate::...` path, expanding `crate::{a, b::c}`."""
    first = re.match(r"\{?\s*(\w+)", path_text)
    out = set()
    if path_text.startswith("{"):
        depth, item = 0, ""
        for ch in path_text[1:]:
            if ch == "{":
                depth += 1
            elif ch == "}":
                if depth == 0:
                    break
                depth -= 1
            if depth == 0 and ch == ",":
                out |= targets(item.strip())
                item = ""
            else:
                item += ch
        if item.strip():
            out |= targets(item.strip())
        return out
    if first:
        name = first.group(1)
        if name in modules:
            out.add(name)
        elif name in root_names:
            out.add(root_names[name])
    return out


edges, reexports = {}, {}
for m in modules:
    for f in files_of(m):
        text = strip_comments(open(f, encoding="utf-8").read())
        # `pub use crate::x::...` statements are aliases; everything else is a dependency.
        for stmt in re.findall(r"pub use crate::((?:\{[^;]*\})|[^;]*);", text):
            for t in targets(stmt):
                if t != m:
                    reexports.setdefault(m, set()).add(t)
        text = re.sub(r"pub use crate::[^;]*;", "", text)
        for ref in re.finditer(r"crate::(\{[^;]*\}|\w+)", text):
            for t in targets(ref.group(1)):
                if t != m:
                    edges.setdefault(m, set()).add(t)

print("module dependencies (A -> B: A uses B):")
for m in modules:
    print(f"  {m:8} -> {', '.join(sorted(edges.get(m, ()))) or '-'}")
if reexports:
    print("re-exports kept for public paths (aliases, not dependencies):")
    for m in sorted(reexports):
        print(f"  {m:8} re-exports from {', '.join(sorted(reexports[m]))}")

# Cycle check (depth-first search), then a layering from the bottom up.
state, stack, cycle = {}, [], None


def visit(m):
    global cycle
    state[m] = 1
    stack.append(m)
    for t in sorted(edges.get(m, ())):
        if state.get(t) == 1 and cycle is None:
            cycle = stack[stack.index(t):] + [t]
        elif t not in state:
            visit(t)
    stack.pop()
    state[m] = 2


for m in modules:
    if m not in state:
        visit(m)
if cycle:
    print("CYCLE: " + " -> ".join(cycle))
    sys.exit(1)

level = {}
for _ in modules:
    for m in modules:
        level[m] = 1 + max((level.get(t, 0) for t in edges.get(m, ())), default=-1)
print("layers, bottom first:")
for lv in sorted(set(level.values())):
    print(f"  {lv}: {', '.join(sorted(m for m in modules if level[m] == lv))}")
print("no cycles")
