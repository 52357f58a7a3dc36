#!/usr/bin/env bash
# Fuzzing with cargo-fuzz (libFuzzer) on the nightly toolchain; the targets are in fuzz/.
#
#   bash scripts/fuzz.sh smoke [SECONDS]     # every target for SECONDS (default 20) each
#   bash scripts/fuzz.sh run TARGET [ARGS]   # one target until stopped; ARGS go to libFuzzer
#   bash scripts/fuzz.sh list                # the targets
#
# The build has its own workspace and target dir (fuzz/target, or FUZZ_TARGET_DIR), so it never
# touches the stable build. Inputs found while fuzzing go to fuzz/corpus/TARGET (not kept in git); a crash is
# written to fuzz/artifacts/TARGET. Copy a case worth keeping into fuzz/regressions/TARGET:
# the stable tests (`fuzz_regressions` in tinyagent, tinyagent-openai, tinyagent-mcp) replay
# every file there.
set -euo pipefail
cd "$(dirname "$0")/.."

CARGO_FUZZ_VERSION=0.13.2
export CARGO_TARGET_DIR="${FUZZ_TARGET_DIR:-$PWD/fuzz/target}"
unset CARGO_BUILD_BUILD_DIR

if ! rustup toolchain list 2>/dev/null | grep -q '^nightly'; then
    echo "fuzz: no nightly toolchain (rustup toolchain install nightly); skipped"
    exit 0
fi
if ! cargo fuzz --version >/dev/null 2>&1; then
    echo "fuzz: installing cargo-fuzz $CARGO_FUZZ_VERSION"
    cargo install cargo-fuzz --version "$CARGO_FUZZ_VERSION" --locked --quiet
fi

# Safe Rust only (unsafe_code is forbidden): panics, overflows and hangs are what the targets
# look for, so no sanitizer; debug assertions stay on.
FUZZ=(cargo +nightly fuzz)
BUILD_FLAGS=(--sanitizer none -O --fuzz-dir fuzz)

run_target() {
    local target=$1
    shift
    mkdir -p "fuzz/corpus/$target"
    "${FUZZ[@]}" run "${BUILD_FLAGS[@]}" "$target" "fuzz/corpus/$target" "fuzz/regressions/$target" \
        -- -rss_limit_mb=2048 -timeout=20 -max_len=65536 "$@"
}

case "${1:-smoke}" in
    list)
        "${FUZZ[@]}" list --fuzz-dir fuzz
        ;;
    run)
        target=${2:?"usage: scripts/fuzz.sh run TARGET [libFuzzer args]"}
        shift 2
        run_target "$target" "$@"
        ;;
    smoke)
        seconds=${2:-20}
        "${FUZZ[@]}" build "${BUILD_FLAGS[@]}"
        summary=()
        for target in $("${FUZZ[@]}" list --fuzz-dir fuzz); do
            echo "== fuzz $target (${seconds}s)"
            log=$(mktemp)
            if ! run_target "$target" -max_total_time="$seconds" -print_final_stats=1 >"$log" 2>&1; then
                tail -n 60 "$log"
                echo "fuzz: $target failed; the input is in fuzz/artifacts/$target"
                exit 1
            fi
            runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo '?')
            summary+=("$target: $runs inputs in ${seconds}s, no failure")
            rm -f "$log"
        done
        printf '%s\n' "${summary[@]}"
        ;;
    *)
        echo "usage: scripts/fuzz.sh [smoke [SECONDS] | run TARGET [ARGS] | list]" >&2
        exit 2
        ;;
esac
