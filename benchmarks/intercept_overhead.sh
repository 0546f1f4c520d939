#!/usr/bin/env bash
# The interposer's added cost per launch on the native route (docs/intercept.md, "Overhead"): bench_enqueue alone
# and under `dop exec` at the configuration that is the application's device in whole, interleaved ROUNDS times;
# prints the medians of the enqueue call and their difference.
#   benchmarks/intercept_overhead.sh [BUILD_DIR] [CONFIG] [ROUNDS]      (CONFIG: 1,0 when the app's device is a CPU)
set -euo pipefail
build=${1:-build}
config=${2:-1,0}
rounds=${3:-3}
bench="$build/bin/bench_enqueue"
median() { sort -g | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
run() {  # the median enqueue time (ns) of one bench_enqueue run
  "$@" --benchmark_format=json 2>/dev/null |
    python3 -c 'import json,sys; print([b["real_time"] for b in json.load(sys.stdin)["benchmarks"] if b["aggregate_name"] == "median"][0])'
}
alone=() under=()
for _ in $(seq "$rounds"); do
  alone+=("$(run "$bench")")
  under+=("$(run "$build/bin/dop" exec --config "$config" -- "$bench")")
done
a=$(printf '%s\n' "${alone[@]}" | median)
u=$(printf '%s\n' "${under[@]}" | median)
printf 'enqueue (median of %s runs of 9 x 4096 launches)\n' "$rounds"
printf '  alone:                 %8.0f ns\n' "$a"
printf '  under dop exec %-6s  %8.0f ns\n' "$config:" "$u"
printf '  added:                 %8.0f ns\n' "$(echo "$u - $a" | bc -l)"
