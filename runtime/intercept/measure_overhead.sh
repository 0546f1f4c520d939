#!/usr/bin/env bash
# Overhead of the interposer on an application: tests/apps/cl_app vecadd (N floats, REPEAT launches, one read at the
# end) alone and under libdop_intercept.so, RUNS times each, interleaved; prints the median app-reported time
# (launch loop + final read) and DOP_LOG's per-launch dop/total times. Usage:
#   runtime/intercept/measure_overhead.sh BUILD_DIR [N] [REPEAT] [RUNS] [CONFIG...]
set -euo pipefail
build=${1:?build dir}; n=${2:-4194304}; repeat=${3:-10}; runs=${4:-5}; shift $(( $# < 4 ? $# : 4 )) || true
configs=("$@"); [ ${#configs[@]} -gt 0 ] || configs=(1,1 1,0)
app=$build/bin/dop_test_cl_app; lib=$build/lib/libdop_intercept.so
export POCL_DEVICES=${POCL_DEVICES:-pthread pthread}
median() { sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
declare -A times; declare -A dopms; declare -A totms
for ((r = 0; r < runs; ++r)); do
  t=$("$app" vecadd "$n" "$repeat" | sed -n 's/.*time_ms=\([0-9.]*\).*/\1/p'); times[bare]+="$t "
  for c in "${configs[@]}"; do
    out=$(LD_PRELOAD=$lib DOP_CONFIG=$c DOP_LOG=1 "$app" vecadd "$n" "$repeat" 2>&1)
    times[$c]+="$(sed -n 's/.*time_ms=\([0-9.]*\).*/\1/p' <<<"$out") "
    # steady state: every launch but the first (which builds dop's programs)
    dopms[$c]+="$(grep dop-intercept <<<"$out" | tail -n +2 | sed -n 's/.*dop_ms=\([0-9.]*\).*/\1/p' | median) "
    totms[$c]+="$(grep dop-intercept <<<"$out" | tail -n +2 | sed -n 's/.*total_ms=\([0-9.]*\).*/\1/p' | median) "
  done
done
echo "vecadd n=$n ($((n * 4 / 1048576)) MiB per buffer) repeat=$repeat runs=$runs, median app time (ms):"
printf '  %-22s %10.1f  (%.2f ms per launch)\n' "without interposer" "$(tr ' ' '\n' <<<"${times[bare]}" | grep . | median)" \
  "$(echo "$(tr ' ' '\n' <<<"${times[bare]}" | grep . | median) / $repeat" | bc -l)"
for c in "${configs[@]}"; do
  m=$(tr ' ' '\n' <<<"${times[$c]}" | grep . | median)
  printf '  %-22s %10.1f  (per launch after the first: dop %.2f ms, with copies %.2f ms)\n' "interposer at $c" "$m" \
    "$(tr ' ' '\n' <<<"${dopms[$c]}" | grep . | median)" "$(tr ' ' '\n' <<<"${totms[$c]}" | grep . | median)"
done
