#!/usr/bin/env bash
# A/B of bench_predictor: two builds' binaries, alternating, ROUNDS times each (medians of 5 repetitions per run),
# then the ratio after/before of the median of the runs' medians per benchmark:
#   bash benchmarks/ab_predictor.sh BEFORE/bench_predictor AFTER/bench_predictor [ROUNDS] [FILTER]
# (the training benchmarks are left out by default: they measure XGBoost). Also for bench_runtime or bench_features.
set -euo pipefail
before=$1 after=$2 rounds=${3:-5} filter=${4:-Decide|Reference|Launch|SubDevice|Footprint}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for i in $(seq 1 "$rounds"); do
  for w in before after; do
    bin=$before
    [ "$w" = after ] && bin=$after
    "$bin" --benchmark_filter="$filter" --benchmark_repetitions=5 --benchmark_report_aggregates_only=true \
      --benchmark_format=json >"$tmp/${w}_$i.json" 2>/dev/null
  done
done
python3 - "$tmp" <<'PY'
import glob, json, os, statistics, sys
runs = {}
for f in glob.glob(os.path.join(sys.argv[1], "*.json")):
    side = os.path.basename(f).split("_")[0]
    for b in json.load(open(f))["benchmarks"]:
        if b.get("aggregate_name") == "median":
            runs.setdefault(b["run_name"], {}).setdefault(side, []).append(b["real_time"])
print(f"{'benchmark':30s} {'before':>10s} {'after':>10s} {'after/before':>12s}")
for name, v in runs.items():
    b, a = statistics.median(v["before"]), statistics.median(v["after"])
    print(f"{name:30s} {b:10.3f} {a:10.3f} {a / b:12.3f}")
PY
