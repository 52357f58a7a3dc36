#!/usr/bin/env bash
# Runs all the tests (unit, integration and doc tests of every crate, every feature), after
# installing what they need: system packages, the default local model, Python packages.
#
#   bash scripts/test.sh [extra cargo test arguments]
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh --test
cargo test --workspace --all-features "$@"
