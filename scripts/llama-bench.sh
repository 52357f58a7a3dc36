#!/usr/bin/env bash
# llama.cpp's own speed on a GGUF file, for comparison with the embedded model's
# (`cargo run --release -p tinyagent-llama --example llama_speed`): builds the llama.cpp source
# that the llama-cpp-sys-2 crate vendors, as that crate builds it for --release (CMake Release,
# GGML_NATIVE off, no OpenMP, -march=x86-64 plus ggml's default AVX/AVX2/FMA/F16C/BMI2 kernels),
# then scripts/bench/llama_cpp_bench.cpp (llama-bench's prompt and generation tests) against it.
#
#   bash scripts/llama-bench.sh [MODEL.gguf] [THREADS=1]     # first run: a ~10-minute build
#
# The build goes to $LLAMA_BENCH_DIR (default /tmp/tinyagent-llama-bench).
set -euo pipefail
cd "$(dirname "$0")/.."
MODEL="${1:-models/Qwen2.5-Coder-1.5B-Instruct.Q4_K_M.gguf}"
THREADS="${2:-1}"
DIR="${LLAMA_BENCH_DIR:-/tmp/tinyagent-llama-bench}"
VERSION="$(awk '/^name = "llama-cpp-sys-2"$/ {getline; gsub(/[^0-9.]/, ""); print; exit}' Cargo.lock)"
cargo fetch --locked >/dev/null 2>&1 || true
SRC="$(ls -d "${CARGO_HOME:-$HOME/.cargo}"/registry/src/*/llama-cpp-sys-2-"$VERSION"/llama.cpp | head -1)"
[ -d "$SRC" ] || { echo "llama-bench: no vendored llama.cpp for llama-cpp-sys-2 $VERSION (run cargo fetch)" >&2; exit 1; }
FLAGS="-ffunction-sections -fdata-sections -fPIC -m64 -march=x86-64"
if [ ! -f "$DIR/build/src/libllama.a" ]; then
    cmake -S "$SRC" -B "$DIR/build" -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=OFF -DGGML_OPENMP=OFF \
        -DBUILD_SHARED_LIBS=OFF -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF -DLLAMA_BUILD_TESTS=OFF \
        -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=OFF -DLLAMA_BUILD_TOOLS=OFF \
        -DLLAMA_BUILD_APP=OFF -DLLAMA_BUILD_COMMON=OFF \
        -DCMAKE_C_FLAGS="$FLAGS" -DCMAKE_CXX_FLAGS="$FLAGS" >/dev/null
    cmake --build "$DIR/build" --target llama -j "$(nproc)"
fi
BIN="$DIR/llama_cpp_bench"
if [ ! -x "$BIN" ] || [ scripts/bench/llama_cpp_bench.cpp -nt "$BIN" ]; then
    LIBS="$(find "$DIR/build" -name 'libllama.a' -o -name 'libggml*.a' | sort -r | tr '\n' ' ')"
    c++ -O3 -std=c++17 $FLAGS -I "$SRC/include" -I "$SRC/ggml/include" scripts/bench/llama_cpp_bench.cpp \
        -Wl,--start-group $LIBS -Wl,--end-group -lpthread -ldl -lm -o "$BIN"
fi
"$BIN" "$MODEL" "$THREADS"
