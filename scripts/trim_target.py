#!/usr/bin/env python3
"""Keeps a shared cargo target dir from filling the disk.

Every checkout built into one target dir gets artifacts of its own (the path is part of each
workspace crate's hash), and every test binary is hundreds of MB with llama.cpp linked in.
This removes incremental state and, among test and example binaries of the same name, all
but the newest; libraries of registry crates (what makes a build fast) stay.

    python3 scripts/trim_target.py [TARGET_DIR]     # default: $CARGO_TARGET_DIR
"""

import os
import re
import shutil
import sys

target = sys.argv[1] if len(sys.argv) > 1 else os.environ.get("CARGO_TARGET_DIR", "target")
freed = 0
for profile in ("debug", "release"):
    base = os.path.join(target, profile)
    incremental = os.path.join(base, "incremental")
    if os.path.isdir(incremental):
        for root, _, files in os.walk(incremental):
            freed += sum(os.path.getsize(os.path.join(root, f)) for f in files)
        shutil.rmtree(incremental, ignore_errors=True)
    for folder in ("deps", "examples"):
        path = os.path.join(base, folder)
        if not os.path.isdir(path):
            continue
        newest = {}
        for name in os.listdir(path):
            full = os.path.join(path, name)
            match = re.fullmatch(r"(.+)-[0-9a-f]{16}", name)
            if not match or not os.path.isfile(full) or not os.access(full, os.X_OK):
                continue
            newest.setdefault(match.group(1), []).append((os.path.getmtime(full), full))
        for binaries in newest.values():
            binaries.sort()
            for _, full in binaries[:-1]:
                freed += os.path.getsize(full)
                os.remove(full)

# A full disk makes the linker die with a bus error half-way through a test build: when less
# than LOW_GB is free after the trim above, every test and example binary goes too (they are
# relinked in seconds from the libraries that stay).
LOW_GB = 30
if os.path.isdir(target) and shutil.disk_usage(target).free < LOW_GB * 1e9:
    for profile in ("debug", "release"):
        for folder in ("deps", "examples"):
            path = os.path.join(target, profile, folder)
            if not os.path.isdir(path):
                continue
            for name in os.listdir(path):
                full = os.path.join(path, name)
                if re.fullmatch(r"(.+)-[0-9a-f]{16}", name) and os.path.isfile(full) and os.access(full, os.X_OK):
                    freed += os.path.getsize(full)
                    os.remove(full)
free = shutil.disk_usage(target).free / 1e9 if os.path.isdir(target) else float("nan")
print(f"trim_target: freed {freed / 1e9:.1f} GB in {target}; {free:.0f} GB free on its disk")
if free < 15:
    print(f"trim_target: warning: only {free:.0f} GB free; a full build with tests needs about 25 GB", file=sys.stderr)
