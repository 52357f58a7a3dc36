#!/usr/bin/env python3
"""Checks that every cargo command of the README and of CI builds llama.cpp the same way.

llama.cpp is compiled by the build script of `llama-cpp-sys-2` (about ten minutes on two
cores). Cargo builds that script again whenever its inputs differ: the features or profile of
any crate it depends on at build time (bindgen, cc, cmake, regex, ...). Those features are
unified over the packages a command selects, so a build-time dependency pulled in by one
selection only (a proc-macro's dev-dependency, say) makes that command compile llama.cpp a
second time. This script asks cargo for the unit graph of each command (nightly's
`--unit-graph`; nothing is compiled) and fails if the build-script closure of `llama-cpp-sys-2`
differs between them.

    python3 scripts/one_llama_build.py     # skipped (exit 0) without a nightly toolchain
"""

import json
import os
import subprocess
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")

# The commands that share a target dir on a user's machine or in CI, in no particular order.
COMMANDS = {
    "scripts/demo.sh": ["build", "-p", "tinyagent-demo", "--example", "agent_demo"],
    "scripts/test.sh": ["test", "--no-run", "--workspace", "--all-features"],
    "clippy (CI)": ["build", "--workspace", "--all-targets", "--all-features"],
    "cargo install --path crates/tinyagent-cli": ["build", "-p", "tinyagent-cli"],
    "tinyagent (README)": ["build", "-p", "tinyagent-cli", "--bin", "tinyagent"],
}

# Profile fields that change what is compiled (the profile's name does not).
PROFILE_FIELDS = ("opt_level", "debuginfo", "debug_assertions", "overflow_checks", "lto",
                  "panic", "codegen_units", "strip", "incremental")


def closure(units):
    start = [i for i, u in enumerate(units)
             if "llama-cpp-sys-2" in u["pkg_id"] and u["mode"] == "run-custom-build"]
    if not start:
        return None
    seen, stack = set(), list(start)
    while stack:
        i = stack.pop()
        if i in seen:
            continue
        seen.add(i)
        stack.extend(d["index"] for d in units[i]["dependencies"])
    rows = set()
    for i in seen:
        u = units[i]
        pkg = u["pkg_id"].rsplit("#", 1)[-1]
        profile = tuple((k, json.dumps(u["profile"].get(k))) for k in PROFILE_FIELDS)
        rows.add((pkg, u["target"]["name"], u["mode"], ",".join(u["features"]), profile))
    return rows


def main():
    try:
        subprocess.run(["cargo", "+nightly", "--version"], check=True, capture_output=True)
    except (OSError, subprocess.CalledProcessError):
        print("one_llama_build: no nightly toolchain, skipped")
        return 0
    graphs = {}
    for name, args in COMMANDS.items():
        out = subprocess.run(
            ["cargo", "+nightly", *args, "--unit-graph", "-Z", "unstable-options"],
            cwd=ROOT, capture_output=True, text=True)
        if out.returncode != 0:
            print(f"one_llama_build: `cargo {' '.join(args)}` failed:\n{out.stderr}")
            return 1
        graphs[name] = closure(json.loads(out.stdout)["units"])
    reference_name, reference = next(iter(graphs.items()))
    if reference is None:
        print(f"one_llama_build: {reference_name} does not build llama-cpp-sys-2")
        return 1
    failed = False
    for name, rows in graphs.items():
        if rows is None:
            print(f"  {name}: does not build llama.cpp")
            continue
        if rows == reference:
            print(f"  {name}: same llama.cpp build ({len(rows)} units)")
            continue
        failed = True
        print(f"  {name}: a different llama.cpp build from {reference_name}:")
        for row in sorted(rows - reference):
            print(f"    + {row[0]} {row[2]} [{row[3]}]")
        for row in sorted(reference - rows):
            print(f"    - {row[0]} {row[2]} [{row[3]}]")
    if failed:
        print("one_llama_build: llama.cpp would be compiled more than once; make the build-time "
              "dependencies' features the same in every selection")
        return 1
    print("one_llama_build: every command shares one llama.cpp build")
    return 0


if __name__ == "__main__":
    sys.exit(main())
