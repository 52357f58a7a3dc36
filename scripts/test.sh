#!/usr/bin/env bash
# Runs all the tests (unit, integration and doc tests of every crate, every feature), after
# installing what they need: system packages, the default local model, Python packages, and
# the PostgreSQL and Redis servers of the session-store tests, which it starts on 127.0.0.1
# (scripts/services.sh) and stops afterwards, unless they were already running; then the MCP
# conformance suite (scripts/conformance.sh).
#
#   bash scripts/test.sh [extra cargo test arguments]
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh --test

# Servers that were up before are someone's: leave them up.
services_before=$(bash scripts/services.sh status)
if grep -q "down" <<<"$services_before"; then
    trap 'bash scripts/services.sh stop' EXIT
fi
bash scripts/services.sh start
eval "$(bash scripts/services.sh env)"

cargo test --workspace --all-features "$@"

# The official MCP conformance suite against the example server (a few seconds).
bash scripts/conformance.sh
