#!/usr/bin/env bash
# One application natively, with the interposer preloaded by hand at a fixed configuration (no dop exec), and under
# dop exec at that configuration and at auto, interleaved ROUNDS times: medians of its kernel_ms and their ratios to
# native, to tell what dop exec's process adds from what the interposer's calls add (after h100.sh built
# build-runtime; results on stdout). AUTO_ENV="VAR=VALUE ..." adds a fifth mode: auto under those variables too (e.g.
# DOP_AUTO_EXPLORE_MS=100000: the model never read).
#   bash benchmarks/device/preload_ab.sh ROUNDS CONFIG APP [ARGS...]
set -uo pipefail
rounds=$1 config=$2
shift 2
b=${BUILD:-build-runtime}
lib=$(realpath "$b/lib/libdop_intercept.so")
bundles=()
[ -d .device/app-bundles ] && bundles=(--bundles .device/app-bundles)
declare -A runs
for _ in $(seq "$rounds"); do
  modes=(native preload exec auto)
  [ -n "${AUTO_ENV:-}" ] && modes+=(auto_env)
  for mode in "${modes[@]}"; do
    case $mode in
      native) out=$("$b/bin/apps/$@" 2>/dev/null) ;;
      preload) out=$(LD_PRELOAD=$lib DOP_CONFIG=$config "$b/bin/apps/$@" 2>/dev/null) ;;
      exec) out=$("$b/bin/dop" exec --config "$config" "${bundles[@]}" -- "$b/bin/apps/$@" 2>/dev/null) ;;
      auto) out=$("$b/bin/dop" exec --config auto --model models "${bundles[@]}" -- "$b/bin/apps/$@" 2>/dev/null) ;;
      auto_env) out=$(env $AUTO_ENV "$b/bin/dop" exec --config auto --model models "${bundles[@]}" -- "$b/bin/apps/$@" \
                      2>/dev/null) ;;
    esac
    ms=$(grep -o 'kernel_ms=[0-9.]*' <<<"$out" | cut -d= -f2)
    grep -q 'check=ok' <<<"$out" || ms=nan
    runs[$mode]+="$ms "
  done
done
python3 - "$*" "$config" "${AUTO_ENV:-}" "${runs[native]}" "${runs[preload]}" "${runs[exec]}" "${runs[auto]}" \
  ${AUTO_ENV:+"${runs[auto_env]}"} <<'PY'
import statistics as st, sys
app, config, auto_env, *cols = sys.argv[1:]
names = ["native", f"preload {config}", f"dop exec {config}", "dop exec auto", f"auto, {auto_env}"]
vals = [[float(x) for x in c.split()] for c in cols]
base = st.median(vals[0])
print(f"{app}: kernel_ms, medians of {len(vals[0])} interleaved rounds (ratio to native; per-round ratios' quartiles)")
for n, v in zip(names, vals):
    r = sorted(x / y for x, y in zip(v, vals[0]))
    q = st.quantiles(r, n=4) if len(r) > 1 else [float("nan")] * 3
    print(f"  {n:18s} {st.median(v):9.3f}  {st.median(v) / base:6.3f}  ({q[0]:.3f}-{q[2]:.3f})")
PY
