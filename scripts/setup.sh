#!/usr/bin/env bash
# Installs what the project needs on a fresh Debian/Ubuntu machine; safe to run again.
#
#   bash scripts/setup.sh
#
# 1. System packages: cmake, clang and libclang-dev build llama.cpp (crate tinyagent-llama).
# 2. The default local model (scripts/fetch-model.sh).
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

# --- models ------------------------------------------------------------------------------------
bash scripts/fetch-model.sh
