#!/usr/bin/env bash
# A/B of the split experiment on the lent H100 host: another commit's tree and this one, alternating, in one call.
# Prepare here (the older tree needs the same .device/include and .device/bundles as this one):
#   rm -rf .device/before && mkdir -p .device/before/.device && git archive REV | tar x -C .device/before
#   cp -r .device/include .device/bundles .device/before/.device/
# then on the device (carry .device):  bash benchmarks/device/ab_split.sh [ROUNDS]
# Each round runs `SPLIT_SIZE=sweep SPLIT_REPEAT=9 benchmarks/device/h100.sh split` in both trees; $OUT gets
# before_I.json/.txt and after_I.json/.txt (at most 4 rounds: 8 files come back).
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
R=${OUT:-/tmp/dop-out}
mkdir -p "$R"
for i in $(seq 1 "${1:-2}"); do
  for w in before after; do
    d=.
    [ "$w" = before ] && d=.device/before
    (cd "$d" && OUT=/tmp/ab_${w}_$i SPLIT_SIZE=sweep SPLIT_REPEAT=9 bash benchmarks/device/h100.sh split \
      >/tmp/ab_${w}_$i.log 2>&1)
    cp /tmp/ab_${w}_$i/split.json "$R/${w}_$i.json"
    cp /tmp/ab_${w}_$i/split.txt "$R/${w}_$i.txt"
    tail -1 /tmp/ab_${w}_$i/split.txt | sed "s/^/$w $i: /"
  done
done
