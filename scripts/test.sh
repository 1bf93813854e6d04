#!/usr/bin/env bash
# Builds the `ratten` Python package and runs its pytest suite, on a fresh machine with only
# Python 3 (+ venv/pip) and a Rust toolchain: the Python tools (maturin, numpy, pytest) are
# installed from PyPI into a virtualenv under target/, so nothing is installed by hand.
# Exits non-zero on any failure (pytest's "no tests collected", exit 5, counts as a failure).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT="$(pwd)"
TARGET="${CARGO_TARGET_DIR:-$ROOT/target}"
VENV="$TARGET/ratten-venv"
PY="${PYTHON:-python3}"

if [ ! -x "$VENV/bin/python" ]; then
    echo "== creating virtualenv $VENV"
    "$PY" -m venv "$VENV"
fi
# shellcheck disable=SC1091
source "$VENV/bin/activate"
python -m pip install --quiet --upgrade pip
python -m pip install --quiet "maturin>=1.7,<2" numpy pytest

echo "== building ratten (maturin develop --release)"
maturin develop --release --quiet

echo "== pytest python/tests"
set +e
python -m pytest -q python/tests "$@"
rc=$?
set -e
if [ "$rc" -eq 5 ]; then
    echo "pytest collected no tests: failing" >&2
    exit 1
fi
exit "$rc"
