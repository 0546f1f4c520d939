#!/usr/bin/env bash
# dop setup: installs the Debian packages dop needs (only those missing), configures and builds.
#
#   ./setup.sh            install + build (build/, Release, analysis tier on)
#   ./setup.sh test       install + build + run every test (ctest)
#   ./setup.sh sanitize   install + build with ASan+UBSan (build-asan/) + run every test
#   ./setup.sh runtime    build the runtime tier only (build-runtime/, no Clang/XGBoost), no install
#   ./setup.sh fuzz       build the libFuzzer targets with clang-15 + ASan/UBSan (build-fuzz/) and run each for
#                         DOP_FUZZ_SECONDS (default 60) from its seeds: OpenCL C (tests/data/features), specs
#                         (tests/data/run, kernels/gemm)
#
# Environment: DOP_JOBS (parallel build jobs, default nproc), DOP_CMAKE_ARGS (extra cmake arguments).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"

mode=${1:-build}
jobs=${DOP_JOBS:-$(nproc)}

# What each package is for is documented in README.md ("Dependencies").
packages=(
  build-essential cmake git ccache
  opencl-headers ocl-icd-opencl-dev clinfo pocl-opencl-icd
  nlohmann-json3-dev libcli11-dev
  libclang-15-dev llvm-15-dev clang-15
  libxgboost-dev libeigen3-dev zlib1g-dev
  catch2 libbenchmark-dev
)

install_packages() {
  local missing=()
  for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  echo "setup: installing ${missing[*]}"
  local sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  $sudo apt-get update -q
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends "${missing[@]}"
}

configure_and_build() {  # dir, cmake args... (DOP_TARGET: build only that target)
  local dir=$1
  shift
  cmake -S . -B "$dir" "$@" ${DOP_CMAKE_ARGS:-}
  cmake --build "$dir" -j "$jobs" ${DOP_TARGET:+--target "$DOP_TARGET"}
}

run_tests() {  # dir
  ctest --test-dir "$1" --output-on-failure -j "$jobs"
}

case "$mode" in
  build)
    install_packages
    configure_and_build build -DCMAKE_BUILD_TYPE=Release
    ;;
  test)
    install_packages
    configure_and_build build -DCMAKE_BUILD_TYPE=Release -DDOP_WERROR=ON
    run_tests build
    ;;
  sanitize)
    install_packages
    configure_and_build build-asan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DDOP_SANITIZE=ON -DDOP_WERROR=ON \
      -DDOP_BUILD_BENCHMARKS=OFF
    ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 run_tests build-asan
    ;;
  fuzz)
    install_packages
    CC=clang-15 CXX=clang++-15 DOP_TARGET=fuzz_features configure_and_build build-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo -DDOP_FUZZ=ON \
      -DDOP_SANITIZE=ON -DDOP_BUILD_TESTS=OFF -DDOP_BUILD_BENCHMARKS=OFF
    cmake --build build-fuzz -j "$jobs" --target fuzz_spec
    # New inputs go to build-fuzz/corpus* (kept between runs); the seeds are only read. A crash, a leak, or one
    # input taking more than -timeout seconds fails the run (and CI).
    mkdir -p build-fuzz/corpus build-fuzz/corpus-spec build-fuzz/artifacts
    # Leaks inside libclang-cpp/libLLVM are suppressed as in the tests (tests/lsan.supp): when Clang crashes on an
    # input (Clang 15 bugs exist), the parse is recovered and what Clang had allocated is deliberately leaked.
    fuzz() {  # target, libFuzzer arguments...
      local target=$1
      shift
      ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
        LSAN_OPTIONS="suppressions=$PWD/tests/lsan.supp:print_suppressions=0" \
        "build-fuzz/bin/$target" -max_total_time="${DOP_FUZZ_SECONDS:-60}" -timeout=10 -rss_limit_mb=2560 \
        -print_final_stats=1 -artifact_prefix="build-fuzz/artifacts/$target-" "$@"
    }
    # OpenCL C sources into the feature extractor (seeds: tests/data/features).
    fuzz fuzz_features -max_len=4096 -dict=features/fuzz/opencl.dict build-fuzz/corpus tests/data/features
    # Workload specs, parsed and checked against kernel signatures (seeds: the specs of tests/data/run, kernels/gemm).
    fuzz fuzz_spec -max_len=4096 -dict=features/fuzz/spec.dict build-fuzz/corpus-spec tests/data/run kernels/gemm
    ;;
  runtime)
    configure_and_build build-runtime -DCMAKE_BUILD_TYPE=Release -DDOP_ANALYSIS=OFF -DDOP_BUILD_TESTS=OFF \
      -DDOP_BUILD_BENCHMARKS=OFF
    ;;
  *)
    echo "usage: $0 [build|test|sanitize|fuzz|runtime]" >&2
    exit 2
    ;;
esac
