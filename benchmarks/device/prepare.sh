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
bash benchmarks/device/make_bundles.sh .device/bundles "$dop"
bash benchmarks/device/make_app_bundles.sh .device/app-bundles "$dop"
echo "prepared .device ($(du -sh .device | cut -f1)); datasets to resume go in .device/data/"
