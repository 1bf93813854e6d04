#!/usr/bin/env bash
# Regenerates every checked-in generated directory from the declaration files (the commands
# the staleness tests print), after crates/ratten-aten/native_functions.yaml or
# derivatives.yaml changed. Run from anywhere; uses the workspace's ratten-gen.
set -euo pipefail
cd "$(dirname "$0")/.."
NATIVE=crates/ratten-aten/native_functions.yaml
DERIV=crates/ratten-aten/derivatives.yaml
cargo build --quiet -p ratten-gen
GEN="cargo run --quiet -p ratten-gen --"
$GEN generate --aten --native "$NATIVE" --derivatives "$DERIV" --out crates/ratten-aten/src/generated
$GEN generate --python --native "$NATIVE" --out crates/ratten-py/src/generated
$GEN generate --autograd --native "$NATIVE" --derivatives "$DERIV" --out crates/ratten-autograd/src/generated
$GEN generate --native examples/myops/native_functions.yaml \
    --out examples/myops/src/generated --kernel-module crate::kernels \
    --extension-trait TensorMyopsExt --inherits ScaledAddBase=crate::kernels::ScaledAddBase \
    --ensure-linked crate::ensure_linked
$GEN generate --autograd --native examples/myops/native_functions.yaml \
    --derivatives examples/myops/derivatives.yaml --aten-native "$NATIVE" \
    --functions-manual crates/ratten-autograd/src/functions_manual.rs \
    --inherits ScaledAddBase=crate::kernels::ScaledAddBase --out examples/myops/src/generated_autograd
