#!/usr/bin/env bash
# Kernel bundles of benchmarks/apps/ (each kernel of each application's .cl file, with the build options the
# application passes), for `dop exec --bundles DIR` on a runtime-only machine such as the lent H100 host:
#   bash benchmarks/device/make_app_bundles.sh .device/app-bundles [build/bin/dop]
# The options must be the applications' own (a bundle matches a launch by source, kernel and options).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
out=$1
dop=${2:-build/bin/dop}
mkdir -p "$out"
declare -A options=(
  [stencil]="-DCENTER_WEIGHT=4 -DSHIFT=3" [gemm_chain]="-DELEM=uint" [lu]="-DPRIME=2147483647u"
  [compute]="-DSOFTENING2=0.01f" [tiny]="" [stream]=""
)
n=0
for app in "${!options[@]}"; do
  f=benchmarks/apps/$app.cl
  for k in $($dop features "$f" --options "${options[$app]}" --csv | tail -n +2 | cut -d, -f2); do
    $dop bundle "$f" --kernel "$k" --options "${options[$app]}" --out "$out/$app-$k.json" >/dev/null
    n=$((n + 1))
  done
done
echo "$n bundles in $out"
