#!/usr/bin/env bash
# Kernel bundles (dop-bundle/1: the malleable GPU forms, made with Clang on an analysis machine) of every kernel the
# sweep runs (the synthetic paper and span sets' programs and kernels/), for `dop sweep --bundles DIR` on a runtime-only
# machine such as the lent H100 host:
#   bash benchmarks/device/make_bundles.sh .device/bundles [build/bin/dop]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
out=$1
dop=${2:-build/bin/dop}
mkdir -p "$out"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
$dop synth emit --all --set paper --out "$tmp" >/dev/null
$dop synth emit --all --set span --out "$tmp" >/dev/null
n=0
for f in "$tmp"/*.cl kernels/*/*.cl; do
  for k in $($dop features "$f" --csv | tail -n +2 | cut -d, -f2); do
    $dop bundle "$f" --kernel "$k" --out "$out/$(basename "$f" .cl)-$k.json" >/dev/null
    n=$((n + 1))
  done
done
echo "$n bundles in $out"
