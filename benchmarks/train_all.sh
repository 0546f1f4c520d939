#!/usr/bin/env bash
# Trains and evaluates every model type on one dataset (grouped 64-fold cross-validation and leave-one-kernel-out),
# writing each model, its generated header and the printed metrics:
#   bash benchmarks/train_all.sh DATA.csv[.gz] FEATURES.csv PLATFORM.json OUT_DIR [dop]
# Environment: MODELS (default "dt rf gbt rank linear"), CV (default 64), THREADS (XGBoost threads; 1 on a busy
# machine, where OpenMP's spin-waiting makes more threads slower).
set -euo pipefail
data=$1 features=$2 platform=$3 out=$4
dop=${5:-build/bin/dop}
mkdir -p "$out"
for m in ${MODELS:-dt rf gbt rank linear}; do
  "$dop" train "$data" --features "$features" --platform "$platform" --model "$m" --cv "${CV:-64}" \
    ${THREADS:+--threads "$THREADS"} \
    --out "$out/$m.json" >"$out/train-$m.txt" 2>&1
  echo "$m: $(grep -m1 '^model' "$out/train-$m.txt")"
done
