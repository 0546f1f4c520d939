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
#   ./setup.sh embed      install + build, then embed dop as its users do (docs/embedding.md): `cmake --install` into
#                         build-embed/prefix, build and run examples/ against it (CMake package and pkg-config),
#                         `pip install .` into the venv build-embed/venv and run the Python tests, shellcheck the
#                         Slurm script (tools/slurm/)
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
  pkg-config python3-dev python3-venv python3-pip shellcheck
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

# docs/embedding.md: an installed dop, as applications, pkg-config users and Python see it.
embed() {
  local root=$PWD out=$PWD/build-embed
  local prefix=$out/prefix
  rm -rf "$prefix"
  cmake --install build --prefix "$prefix"

  echo "embed: examples/ against $prefix (CMake package dop)"
  for e in predict_c predict_cpp executor; do
    cmake -S "examples/$e" -B "$out/$e" -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_BUILD_TYPE=Release
    cmake --build "$out/$e" -j "$jobs"
  done
  local model=models/h100-xeon16/gbt.json
  local c cpp pc
  c=$("$out/predict_c/predict_c" "$model" 1024 1024 16 16 | tail -1)
  cpp=$("$out/predict_cpp/predict_cpp" "$model" models/h100-xeon16/features.csv gemm.cl:gemm 1024,1024 16,16 \
        nk=1024 | sed -n 1p)
  echo "  $c"
  echo "  $cpp"
  # The C and the C++ API decide the same configuration with the same output for gemm's features.
  [ "$(grep -o 'cpu_util [^)]*)' <<<"$c")" = "$(grep -o 'cpu_util [^)]*)' <<<"$cpp")" ] ||
    { echo "embed: the C and C++ examples disagree" >&2; return 1; }
  POCL_DEVICES="pthread pthread" "$out/executor/saxpy" 0.5,0.75 1000000
  POCL_DEVICES="pthread pthread" "$out/executor/saxpy" 0,1 1000000 pinned | tee /tmp/dop-saxpy-pinned.txt
  grep -q "4000000 of them from page-locked memory in place" /tmp/dop-saxpy-pinned.txt ||
    { echo "embed: the executor example's read-only input did not reach the GPU from page-locked memory" >&2; return 1; }

  echo "embed: pkg-config dop-predictor"
  local pcdir
  pcdir=$(dirname "$(find "$prefix" -name dop-predictor.pc)")
  # shellcheck disable=SC2046  # pkg-config prints several words
  cc -o "$out/predict_c_pkgconfig" examples/predict_c/predict.c \
    $(PKG_CONFIG_PATH="$pcdir" pkg-config --cflags --libs dop-predictor)
  pc=$("$out/predict_c_pkgconfig" "$model" 1024 1024 16 16 | tail -1)
  [ "$pc" = "$c" ] || { echo "embed: pkg-config build printed '$pc', not '$c'" >&2; return 1; }

  echo "embed: the installed dop exec preloads the installed interposer"
  local preload
  # shellcheck disable=SC2016  # expanded by the application's shell, which sees dop exec's LD_PRELOAD
  preload=$(POCL_DEVICES="pthread pthread" "$prefix/bin/dop" exec --config 0.5,0.5 -- sh -c 'echo "$LD_PRELOAD"')
  case "$preload" in
    "$prefix"/*/libdop_intercept.so) echo "  LD_PRELOAD=$preload" ;;
    *) echo "embed: dop exec preloaded '$preload', not the installed interposer" >&2; return 1 ;;
  esac

  echo "embed: Python package (pip install . into $out/venv), pytest"
  [ -x "$out/venv/bin/python" ] || python3 -m venv "$out/venv"
  "$out/venv/bin/pip" install -q pytest
  local launcher=()
  command -v ccache >/dev/null && launcher=(-C cmake.define.CMAKE_CXX_COMPILER_LAUNCHER=ccache)
  "$out/venv/bin/pip" install -q "$root" -C cmake.define.dop_DIR="$(dirname "$(find "$prefix" -name dopConfig.cmake)")" \
    "${launcher[@]}"
  (cd "$out" && DOP_BIN="$prefix/bin/dop" "$out/venv/bin/python" -m pytest -q "$root/python/tests")

  echo "embed: shellcheck tools/slurm/"
  shellcheck tools/slurm/*.sbatch
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
    # intercept_tls_get_addr=0: GCC 12's LeakSanitizer crashed at exit ("Tracer caught signal 11", scanning a bogus
    # dynamic-TLS block it had recorded through __tls_get_addr) in the C test applications (tests/apps/cl_app,
    # benchmarks/apps) after they built a program on PoCL, the interposer absent as well (seen 2026-11-27; the same
    # application built from earlier sources crashed too). Static TLS (thread_local in dop and the libraries it links)
    # is still scanned; use_tls=0 instead reported thread_local scratch (the predictor's, libgomp's) as leaks.
    ASAN_OPTIONS=detect_leaks=1:abort_on_error=0:intercept_tls_get_addr=0 \
      LSAN_OPTIONS=suppressions=$PWD/tests/lsan.supp:print_suppressions=0 \
      UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 run_tests build-asan
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
    # Workload specs, parsed and serialised back (seeds: the specs of tests/data/run, kernels/gemm).
    fuzz fuzz_spec -max_len=4096 -dict=features/fuzz/spec.dict build-fuzz/corpus-spec tests/data/run kernels/gemm
    ;;
  embed)
    install_packages
    configure_and_build build -DCMAKE_BUILD_TYPE=Release -DDOP_WERROR=ON
    export CCACHE_BASEDIR=$PWD  # the pip build compiles the bindings through ccache
    embed
    ;;
  runtime)
    configure_and_build build-runtime -DCMAKE_BUILD_TYPE=Release -DDOP_ANALYSIS=OFF -DDOP_BUILD_TESTS=OFF \
      -DDOP_BUILD_BENCHMARKS=OFF
    ;;
  *)
    echo "usage: $0 [build|test|sanitize|fuzz|runtime|embed]" >&2
    exit 2
    ;;
esac
