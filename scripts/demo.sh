#!/usr/bin/env bash
# Runs the demo agent: the tutorial's smart assistant, with tools, on the default model (the
# embedded local model; an OpenAI-compatible server when OPENAI_API_KEY or OPENAI_BASE_URL is
# set), after installing what it needs.
#
#   bash scripts/demo.sh
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
cargo run -p tinyagent-demo --example agent_demo
