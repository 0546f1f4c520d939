#!/usr/bin/env bash
# The interposer's added cost per launch (docs/intercept.md, "Overhead"): bench_enqueue alone and under `dop exec
# --config CONFIG`, interleaved ROUNDS times; prints, per launch pattern of bench_enqueue, the medians of the timed
# calls and their difference.
#   benchmarks/intercept_overhead.sh [BUILD_DIR] [CONFIG] [ROUNDS]
# CONFIG: 1,0 when the application's device is a CPU (the native route); `auto` takes the model from DOP_MODEL.
# BENCH_ENQUEUE_DEVICE=N puts the application on the N-th device of the first platform.
set -euo pipefail
build=${1:-build}
config=${2:-1,0}
rounds=${3:-3}
bench="$build/bin/bench_enqueue"
dop_args=(--config "$config")
if [[ $config == auto ]]; then
  [[ -n ${DOP_MODEL:-} ]] || { echo "intercept_overhead.sh: CONFIG auto needs DOP_MODEL=MODEL.json" >&2; exit 2; }
  dop_args+=(--model "$DOP_MODEL")
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
run() {  # appends "name median_ns" per benchmark of one bench_enqueue run to $1
  local out=$1
  shift
  "$@" --benchmark_format=json 2>/dev/null | python3 -c '
import json, sys
for b in json.load(sys.stdin)["benchmarks"]:
    if b["aggregate_name"] == "median":
        print(b["run_name"].split("/")[0], b["real_time"])' >>"$out"
}
for _ in $(seq "$rounds"); do
  run "$tmp/alone" "$bench"
  run "$tmp/under" "$build/bin/dop" exec "${dop_args[@]}" -- "$bench"
done
python3 - "$tmp/alone" "$tmp/under" "$rounds" "$config" <<'PY'
import statistics, sys
def medians(path):
    runs = {}
    for line in open(path):
        name, ns = line.split()
        runs.setdefault(name, []).append(float(ns))
    return {name: statistics.median(v) for name, v in runs.items()}
alone, under = medians(sys.argv[1]), medians(sys.argv[2])
print(f"median ns per timed call, median of {sys.argv[3]} interleaved runs of 9 x 4096 launches")
print(f"{'launches':<26} {'alone':>8} {'under ' + sys.argv[4]:>12} {'added':>8}")
for name in alone:
    print(f"{name:<26} {alone[name]:>8.0f} {under[name]:>12.0f} {under[name] - alone[name]:>8.0f}")
PY
