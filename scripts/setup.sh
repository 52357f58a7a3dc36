#!/usr/bin/env bash
# Installs what the project needs on a fresh Debian/Ubuntu machine; safe to run again.
#
#   bash scripts/setup.sh          # what building and running the demo needs
#   bash scripts/setup.sh --test   # and what the tests need too
#
# 1. System packages: cmake, clang and libclang-dev build llama.cpp (crate tinyagent-llama).
# 2. The default local model (scripts/fetch-model.sh).
# 3. With --test: PostgreSQL and Redis for the session-store tests (scripts/services.sh starts
#    them), chromium for the server's browser test (driven by Playwright; Playwright's own
#    browsers are never downloaded), the Python packages of scripts/requirements-test.txt
#    (the provider's request checks against OpenAI's OpenAPI spec, the MCP interop tests, the
#    OpenAI SDK and Playwright against `tinyagent serve`), and the MCP conformance suite with
#    Node 22 (scripts/conformance.sh) and the reference MCP server (server-everything) beside it.
set -euo pipefail
cd "$(dirname "$0")/.."

# --- system packages ---------------------------------------------------------------------------
APT_PACKAGES=(cmake clang libclang-dev)
missing=()
command -v cmake >/dev/null 2>&1 || missing+=(cmake)
command -v clang >/dev/null 2>&1 || missing+=(clang)
# libclang (used by bindgen) has no command; ask dpkg.
if command -v dpkg >/dev/null 2>&1 && ! dpkg -s libclang-dev >/dev/null 2>&1; then
    missing+=(libclang-dev)
fi
if [ "${#missing[@]}" -gt 0 ]; then
    echo "setup: installing ${APT_PACKAGES[*]} (missing: ${missing[*]})"
    SUDO=""
    if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${APT_PACKAGES[@]}" >/dev/null
else
    echo "setup: system packages present (${APT_PACKAGES[*]})"
fi

# --- servers for the tests ----------------------------------------------------------------------
# With --test: PostgreSQL 15 and Redis 7.0 (Debian 12's), which the session-store tests run
# against; scripts/services.sh starts them on 127.0.0.1 with throw-away data. And chromium,
# the browser of the server's page test.
if [ "${1:-}" = "--test" ]; then
    TEST_APT_PACKAGES=(postgresql-15 redis-server chromium)
    missing=()
    ls /usr/lib/postgresql/*/bin/pg_ctl >/dev/null 2>&1 || missing+=(postgresql-15)
    command -v redis-server >/dev/null 2>&1 || missing+=(redis-server)
    command -v chromium >/dev/null 2>&1 || missing+=(chromium)
    if [ "${#missing[@]}" -gt 0 ]; then
        echo "setup: installing the tests' servers (missing: ${missing[*]})"
        SUDO=""
        if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
        $SUDO apt-get update -qq
        # Debian starts installed services where it can; the tests start their own servers.
        DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${TEST_APT_PACKAGES[@]}" >/dev/null
    else
        echo "setup: the tests' servers present (${TEST_APT_PACKAGES[*]})"
    fi
fi

# --- models ------------------------------------------------------------------------------------
bash scripts/fetch-model.sh

# --- python packages for the tests --------------------------------------------------------------
if [ "${1:-}" = "--test" ]; then
    echo "setup: installing the tests' Python packages (scripts/requirements-test.txt)"
    python3 -m pip install --quiet --disable-pip-version-check -r scripts/requirements-test.txt
fi

# --- the MCP conformance suite ------------------------------------------------------------------
# With --test: Node 22 and @modelcontextprotocol/conformance from npm, pinned, into a cache
# directory of their own (scripts/conformance.sh says which); npm comes from Debian if missing.
if [ "${1:-}" = "--test" ]; then
    if ! command -v npm >/dev/null 2>&1; then
        echo "setup: installing npm (for the MCP conformance suite)"
        SUDO=""
        if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
        $SUDO apt-get update -qq
        DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends npm >/dev/null
    fi
    bash scripts/conformance.sh --install
    # The reference MCP server, pinned, beside the suite (same Node): the upstream of the
    # gateway tests (crates/tinyagent-cli/tests/gateway.rs).
    EVERYTHING_VERSION="2026.8.31"
    conformance_dir="${CONFORMANCE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/tinyagent-conformance}"
    everything="$conformance_dir/node_modules/@modelcontextprotocol/server-everything"
    if ! grep -q "\"version\": \"$EVERYTHING_VERSION\"" "$everything/package.json" 2>/dev/null \
        || [ ! -f "$everything/dist/index.js" ]; then
        echo "setup: installing @modelcontextprotocol/server-everything@$EVERYTHING_VERSION into $conformance_dir"
        npm install --silent --no-audit --no-fund --prefix "$conformance_dir" \
            "@modelcontextprotocol/server-everything@$EVERYTHING_VERSION" >/dev/null
    fi
fi
