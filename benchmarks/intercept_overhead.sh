#!/usr/bin/env bash
# The interposer's added cost per launch (docs/intercept.md, "Overhead"): bench_enqueue alone and under `dop exec
# --config CONFIG`, interleaved ROUNDS times; prints, per launch pattern of bench_enqueue, the medians of the timed
# calls and their difference.
#   benchmarks/intercept_overhead.sh [BUILD_DIR] [CONFIG] [ROUNDS]
# CONFIG: 1,0 when the application's device is a CPU (the native route); `auto` takes the model from DOP_MODEL.
# BENCH_ENQUEUE_DEVICE=N puts the application on the N-th device of the first platform. INTERCEPT_LIBS="NAME=LIB
# ..." compares interposer libraries in the same rounds (e.g. before and after a change), one column each.
# INTERCEPT_STUB=1 preloads BUILD_DIR's libenqueue_stub.so (benchmarks/enqueue_stub.c) in every run, alone too: the
# implementation's enqueue does nothing, so the timed calls are the interposer's own work (to a few ns) rather than
# that and the implementation's enqueue, whose variance (about 0.3 us between runs with PoCL here) hides it.
set -euo pipefail
build=${1:-build}
config=${2:-1,0}
rounds=${3:-3}
bench="$build/bin/bench_enqueue"
if [[ ${INTERCEPT_STUB:-0} == 1 ]]; then
  stub=$(find "$build" -name libenqueue_stub.so -print -quit)
  [[ -n $stub ]] || { echo "intercept_overhead.sh: INTERCEPT_STUB=1: no libenqueue_stub.so in $build" >&2; exit 2; }
  export LD_PRELOAD="$(realpath "$stub")${LD_PRELOAD:+:$LD_PRELOAD}"  # dop exec puts the interposer before it
fi
dop_args=(--config "$config")
if [[ $config == auto ]]; then
  [[ -n ${DOP_MODEL:-} ]] || { echo "intercept_overhead.sh: CONFIG auto needs DOP_MODEL=MODEL.json" >&2; exit 2; }
  dop_args+=(--model "$DOP_MODEL")
fi
read -r -a libs <<<"${INTERCEPT_LIBS:-under=}"
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
  for l in "${libs[@]}"; do
    lib_args=()
    [[ -n ${l#*=} ]] && lib_args=(--lib "${l#*=}")
    run "$tmp/${l%%=*}" "$build/bin/dop" exec "${dop_args[@]}" "${lib_args[@]}" -- "$bench"
  done
done
names=()
for l in "${libs[@]}"; do names+=("${l%%=*}"); done
python3 - "$tmp" "$rounds" "$config" "${names[@]}" <<'PY'
import os, statistics, sys
tmp, rounds, config, names = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
def medians(path):
    runs = {}
    for line in open(path):
        name, ns = line.split()
        runs.setdefault(name, []).append(float(ns))
    return {name: statistics.median(v) for name, v in runs.items()}
alone = medians(f"{tmp}/alone")
under = {n: medians(f"{tmp}/{n}") for n in names}
stub = " (enqueues stubbed: INTERCEPT_STUB=1)" if os.environ.get("INTERCEPT_STUB") == "1" else ""
print(f"median ns per timed call (median of {rounds} interleaved runs of 9 repetitions of each pattern); dop exec --config {config}{stub}")
print(f"{'launches':<26} {'alone':>8}" + "".join(f" {n:>10} {'added':>8}" for n in names))
for b in alone:
    print(f"{b:<26} {alone[b]:>8.0f}" + "".join(f" {under[n][b]:>10.0f} {under[n][b] - alone[b]:>8.0f}" for n in names))
PY
