#!/usr/bin/env bash
# Everything the lent H100 host needs in .device/ (git-ignored, carried with `carry: [".device"]`), made here on an
# analysis machine: Debian's OpenCL packages (../shared/platforms/debs), the header-only includes the runtime tier
# builds with, and the kernel bundles of every kernel the sweeps run and of benchmarks/apps/. Without the bundles a
# sweep there refuses GPU levels below 8/8 (they would run the whole GPU):
#   bash benchmarks/device/prepare.sh [build/bin/dop]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
dop=${1:-build/bin/dop}
debs=../shared/platforms/debs
[ -d "$debs" ] || { echo "prepare.sh: $debs is missing (the platform's OpenCL packages)" >&2; exit 1; }
[ -x "$dop" ] || { echo "prepare.sh: $dop is missing: build dop first (./setup.sh)" >&2; exit 1; }
mkdir -p .device/include .device/data
cp "$debs"/*.deb .device/
cp -r /usr/include/nlohmann /usr/include/CLI .device/include/
# Google Benchmark's Debian files (the host has none), for the runtime tier's benchmarks (h100.sh enqueue)
dpkg -L libbenchmark-dev libbenchmark1debian | while read -r f; do [ -f "$f" ] && echo "$f"; done |
  grep -v /usr/share/doc | tar -cf .device/libbenchmark.tar -T - 2>/dev/null
# The analysis tier's predictor benchmark with the libraries the host lacks (h100.sh predictor), and the source tree
# it reads the shipped models from
bench=$(dirname "$dop")/bench_predictor
if [ -x "$bench" ]; then
  mkdir -p .device/predictor-bench
  cp "$bench" .device/predictor-bench/
  for lib in $(ldd "$bench" | grep -o '/[^ ]*lib\(xgboost\|dmlc\|gomp\)[^ ]*'); do cp -L "$lib" .device/predictor-bench/; done
  pwd >.device/predictor-bench/source_dir
fi
bash benchmarks/device/make_bundles.sh .device/bundles "$dop"
bash benchmarks/device/make_app_bundles.sh .device/app-bundles "$dop"
echo "prepared .device ($(du -sh .device | cut -f1)); datasets to resume go in .device/data/"
