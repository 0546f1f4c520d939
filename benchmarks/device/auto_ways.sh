#!/usr/bin/env bash
# Where the interposer's launches under auto go, and what each way costs, on a lent host (after h100.sh built
# build-runtime): bench_enqueue and tiny under `dop exec --config auto` with dop's log, summarised by how each launch
# was decided and routed (the log itself stays there: hundreds of thousands of lines), then bench_enqueue's added
# cost per launch with the model never asked (DOP_AUTO_EXPLORE_MS=100000) and with the default budget.
#   bash benchmarks/device/auto_ways.sh [MODEL]   (from the repository root; results in $OUT)
set -uo pipefail
OUT=${OUT:-/tmp/dop-out}
model=${1:-models}
build=${BUILD:-build-runtime}
b=$build/bin
export BENCH_ENQUEUE_GPU=${BENCH_ENQUEUE_GPU:-1}
summarise() {  # the log's launch lines by kernel, decision and route, with the median call_us of each group
  python3 -c '
import re, statistics, sys, collections
groups = collections.defaultdict(list)
other = collections.Counter()
for line in open(sys.argv[1], errors="replace"):
    if "kernel=" not in line or "call_us=" not in line:
        if line.startswith("dop-intercept"):
            other[line.strip()[:160]] += 1
        continue
    f = dict(kv.split("=", 1) for kv in line.split() if "=" in kv)
    key = " ".join(k + "=" + f.get(k, "-") for k in ("kernel", "config", "auto", "model", "class", "data", "route"))
    groups[key].append(float(f["call_us"]))
for k, v in sorted(groups.items(), key=lambda kv: -len(kv[1])):
    print(f"{len(v):7d} {statistics.median(v):8.2f} us  {k}")
for k, n in other.most_common(8):
    print(f"{n:7d} x {k}")' "$1"
}
echo "== bench_enqueue under auto, dop's log (one repetition per pattern)"
DOP_LOG=1 $b/dop exec --config auto --model "$model" -- $b/bench_enqueue --benchmark_repetitions=1 \
  2>/tmp/enq-auto.log >/dev/null
summarise /tmp/enq-auto.log
# The applications with their bundles where .device/app-bundles has them (as h100.sh apps runs them)
bundles=()
[ -d .device/app-bundles ] && bundles=(--bundles .device/app-bundles)
for app in "tiny --size medium" "tiny --size medium --threads 2"; do
  echo "== $app under auto, dop's log ${bundles[*]}"
  DOP_LOG=1 $b/dop exec --config auto --model "$model" "${bundles[@]}" -- $b/apps/$app 2>/tmp/app-auto.log | tail -2
  summarise /tmp/app-auto.log
done
echo "== bench_enqueue: the model never asked (DOP_AUTO_EXPLORE_MS=100000)"
DOP_AUTO_EXPLORE_MS=100000 DOP_MODEL=$model bash benchmarks/intercept_overhead.sh "$build" auto "${ROUNDS:-5}"
echo "== bench_enqueue: the default budget"
DOP_MODEL=$model bash benchmarks/intercept_overhead.sh "$build" auto "${ROUNDS:-5}"
