#!/usr/bin/env bash
# run_apps.sh: runs the applications of benchmarks/apps/ natively on the GPU and on the CPU (APP_DEVICE=gpu|cpu)
# and under `dop exec` at each configuration, REPEAT times interleaved, checks every run (check=ok, and for the
# bit-exact applications the same checksum as the native run), and prints the medians of the applications' own
# kernel_ms and of whole-process wall times, with each dop mode's ratio to the best native device and geometric
# means. Exit status 0 when every run passed, 1 when one failed, 2 on bad usage. See benchmarks/apps/README.md.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
size=small
repeat=3
warmup=0
configs="1,0 0,1 1,1"
natives="gpu cpu"
model=""
dop="$root/build/bin/dop"
bin="$root/build/bin/apps"
apps="stencil,gemm_chain,lu,compute,tiny,tiny --ooo,tiny --threads 2,stream,stream --host"
json=""
tsv=""
again=0
dop_args=()
declare -A libs=() lib_dops=() models_by=()
lib_names=()
model_names=()
# The dop binary of a --lib NAME: its build folder's, else --dop.
lib_dop() { echo "${lib_dops[$1]:-$dop}"; }

usage() {
  cat <<EOF
usage: $0 [options]
  --size S          small|medium|large (default $size)
  --repeat N        runs of every mode, interleaved (default $repeat)
  --warmup N        untimed runs of every mode first (default $warmup): warms on-disk kernel caches (PoCL's)
  --configs "C..."  dop configurations, space-separated (default "$configs"); "none" for native only
  --natives "D..."  the native devices to run, of gpu and cpu (default "$natives"): "gpu" alone where the CPU is known
                    to be far slower (the ratios are then to the native GPU, not to the better of the two)
  --model M         also run under dop exec --config auto --model M
  --models NAME=M   run auto once per model given (repeatable; modes auto=NAME), to compare models (e.g. before and
                    after retraining) in the same interleaved runs
  --apps "A,B..."   comma-separated applications, each with its arguments (default "$apps")
  --dop PATH        the dop binary (default $dop)
  --bin DIR         the applications' folder (default $bin)
  --dop-arg ARG     an extra argument for every dop exec (repeatable, e.g. --dop-arg --memory --dop-arg copy)
  --lib NAME=LIB    run auto (with --model) and each configuration once per interposer library given (repeatable;
                    modes auto@NAME, C@NAME), to compare libraries (e.g. before and after a change) in the same
                    interleaved runs; LIB a build folder: its bin/dop runs its lib/libdop_intercept.so (the whole
                    dop exec of that tree, not only its library)
  --again           also run the first native device a second time, as a mode of its own (again:native-D), shown
                    and bootstrapped like a dop mode: its ratio is what two identical ways of running differ by on
                    this machine at this count of runs (an A/A calibration beside the dop modes)
  --json FILE       write the results as JSON
  --tsv FILE        write the results as TSV
EOF
}

die() {
  echo "run_apps.sh: $*" >&2
  exit 2
}

while [[ $# -gt 0 ]]; do
  case "$1" in
    --size | --repeat | --warmup | --configs | --natives | --model | --models | --apps | --dop | --bin | --dop-arg | --lib | --json | --tsv)
      [[ $# -ge 2 ]] || die "$1 needs a value"
      case "$1" in
        --size) size=$2 ;;
        --repeat) repeat=$2 ;;
        --warmup) warmup=$2 ;;
        --configs) configs=$2 ;;
        --natives) natives=$2 ;;
        --model) model=$2 ;;
        --apps) apps=$2 ;;
        --dop) dop=$2 ;;
        --bin) bin=$2 ;;
        --dop-arg) dop_args+=("$2") ;;
        --models)
          [[ $2 == ?*=?* ]] || die "--models takes NAME=MODEL, not '$2'"
          [[ -z ${models_by[${2%%=*}]:-} ]] || die "--models: '${2%%=*}' is given twice"
          models_by[${2%%=*}]=${2#*=}
          model_names+=("${2%%=*}")
          ;;
        --lib)
          [[ $2 == ?*=?* ]] || die "--lib takes NAME=LIB, not '$2'"
          libs[${2%%=*}]=${2#*=}
          if [[ -d ${2#*=} ]]; then
            libs[${2%%=*}]=${2#*=}/lib/libdop_intercept.so
            lib_dops[${2%%=*}]=${2#*=}/bin/dop
          fi
          lib_names+=("${2%%=*}")
          ;;
        --json) json=$2 ;;
        --tsv) tsv=$2 ;;
      esac
      shift 2
      ;;
    --again)
      again=1
      shift
      ;;
    -h | --help)
      usage
      exit 0
      ;;
    *)
      usage >&2
      die "unknown argument '$1'"
      ;;
  esac
done

[[ $size =~ ^(small|medium|large)$ ]] || die "--size is small, medium or large, not '$size'"
[[ $repeat =~ ^[1-9][0-9]*$ ]] || die "--repeat takes a positive integer, not '$repeat'"
[[ $warmup =~ ^[0-9]+$ ]] || die "--warmup takes a non-negative integer, not '$warmup'"
[[ $configs == none ]] && configs=""

modes=()
for d in $natives; do
  [[ $d == gpu || $d == cpu ]] || die "--natives takes gpu and/or cpu, not '$d'"
  [[ " ${modes[*]} " != *" native-$d "* ]] || die "--natives: '$d' is given twice"
  modes+=("native-$d")
done
[[ ${#modes[@]} -gt 0 ]] || die "--natives needs gpu, cpu or both"
nnat=${#modes[@]}
[[ $again -eq 1 ]] && modes+=("again:${modes[0]}")
if [[ -n $model ]]; then
  [[ -r $model ]] || die "cannot read the model $model"
  if [[ ${#lib_names[@]} -eq 0 ]]; then
    modes+=("dop:auto")
  else
    for l in "${lib_names[@]}"; do modes+=("dop:auto@$l"); done
  fi
fi
for n in "${model_names[@]}"; do
  [[ -r ${models_by[$n]} ]] || die "cannot read the model ${models_by[$n]} (--models $n)"
  modes+=("dop:auto=$n")
done
for c in $configs; do
  if [[ ${#lib_names[@]} -eq 0 ]]; then
    modes+=("dop:$c")
  else
    for l in "${lib_names[@]}"; do modes+=("dop:$c@$l"); done
  fi
done
if [[ " ${modes[*]}" == *" dop:"* ]]; then
  used=("$dop")
  [[ ${#lib_names[@]} -gt 0 ]] && used=()
  for l in "${lib_names[@]}"; do used+=("$(lib_dop "$l")"); done
  for d in "${used[@]}"; do [[ -x $d ]] || die "no dop binary at $d (build it, or give --dop)"; done
fi

IFS=',' read -r -a specs <<<"$apps"
for spec in "${specs[@]}"; do
  read -r -a words <<<"$spec"
  [[ ${#words[@]} -gt 0 ]] || die "an empty application in --apps"
  [[ -x $bin/${words[0]} ]] || die "no application $bin/${words[0]} (build the dop_apps target, or give --bin)"
done

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

declare -A kernel_ms wall_ms failures devices ref_sum exact notes
no_gpu=() # the applications whose native GPU run found no GPU
failed=0

now_ms() { echo $(($(date +%s%N) / 1000000)); }

# The value of KEY in a summary line.
field() { sed -n "s/.* $2=\\([^ ]*\\).*/\\1/p; s/^$2=\\([^ ]*\\).*/\\1/p" <<<"$1" | head -n 1; }

# run_one SPEC MODE [untimed]: one run; appends its times (unless untimed), or records why it failed.
run_one() {
  local spec=$1 mode=$2 key="$1|$2" untimed=${3:-} out="$tmp/out" err="$tmp/err" rc=0 start end line
  local -a words cmd
  read -r -a words <<<"$spec"
  local app=${words[0]}
  cmd=("$bin/$app" "${words[@]:1}" --size "$size")
  start=$(now_ms)
  case "$mode" in
    native-gpu | again:native-gpu) APP_DEVICE=gpu "${cmd[@]}" >"$out" 2>"$err" || rc=$? ;;
    native-cpu | again:native-cpu) APP_DEVICE=cpu "${cmd[@]}" >"$out" 2>"$err" || rc=$? ;;
    dop:auto) env -u APP_DEVICE "$dop" exec --config auto --model "$model" "${dop_args[@]}" -- "${cmd[@]}" \
      >"$out" 2>"$err" || rc=$? ;;
    dop:auto=*) env -u APP_DEVICE "$dop" exec --config auto --model "${models_by[${mode#dop:auto=}]}" "${dop_args[@]}" \
      -- "${cmd[@]}" >"$out" 2>"$err" || rc=$? ;;
    dop:auto@*) env -u APP_DEVICE "$(lib_dop "${mode#dop:auto@}")" exec --config auto --model "$model" --lib "${libs[${mode#dop:auto@}]}" \
      "${dop_args[@]}" -- "${cmd[@]}" >"$out" 2>"$err" || rc=$? ;;
    dop:*@*)
      local c=${mode#dop:}
      env -u APP_DEVICE "$(lib_dop "${mode##*@}")" exec --config "${c%@*}" --lib "${libs[${mode##*@}]}" "${dop_args[@]}" -- "${cmd[@]}" \
        >"$out" 2>"$err" || rc=$?
      ;;
    dop:*) env -u APP_DEVICE "$dop" exec --config "${mode#dop:}" "${dop_args[@]}" -- "${cmd[@]}" \
      >"$out" 2>"$err" || rc=$? ;;
  esac
  end=$(now_ms)
  line=$(grep -m 1 "^app=" "$out" || true)
  local why=""
  if [[ $rc -ne 0 ]]; then
    why="exit status $rc"
  elif [[ -z $line ]]; then
    why="no summary line"
  elif [[ $(field "$line" check) != ok ]]; then
    why="check=$(field "$line" check)"
  fi
  local sum
  sum=$(field "$line" checksum)
  if [[ -z $why ]]; then
    exact[$spec]=$(field "$line" exact)
    if [[ -z ${ref_sum[$spec]:-} ]]; then
      ref_sum[$spec]=$sum
    elif [[ $sum != "${ref_sum[$spec]}" ]]; then
      if [[ ${exact[$spec]} == yes ]]; then
        why="checksum $sum differs from the native run's ${ref_sum[$spec]}"
      else
        notes[$spec]="checksums differ between runs (a float application: exact=no, checked by its own tolerance)"
      fi
    fi
  fi
  if [[ -n $why ]]; then
    failures[$key]=$((${failures[$key]:-0} + 1))
    failed=1
    echo "FAIL: $spec ($mode): $why" >&2
    tail -n 5 "$err" | sed 's/^/    /' >&2
    return
  fi
  [[ -z $untimed ]] || return 0
  kernel_ms[$key]+="$(field "$line" kernel_ms) "
  wall_ms[$key]+="$((end - start)) "
  devices[$key]="$(field "$line" device) ($(field "$line" device_type))"
}

median() { tr ' ' '\n' <<<"$1" | grep . | sort -g | awk '{v[NR] = $1} END {if (NR == 0) print ""; else if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }

echo "run_apps.sh: size $size, $warmup untimed and $repeat timed runs of each of: ${modes[*]}" >&2
for spec in "${specs[@]}"; do
  for ((r = 1; r <= warmup; ++r)); do
    for mode in "${modes[@]}"; do
      echo "  $spec: $mode (warm-up $r/$warmup)" >&2
      run_one "$spec" "$mode" untimed
    done
  done
  # Round r starts at the r-th mode and wraps: every mode runs at every position of a round equally often (as far as
  # the count of rounds allows), so that no mode always follows the same one (a native CPU run's heat, caches).
  for ((r = 1; r <= repeat; ++r)); do
    for ((i = 0; i < ${#modes[@]}; ++i)); do
      mode=${modes[$(((r - 1 + i) % ${#modes[@]}))]}
      echo "  $spec: $mode ($r/$repeat)" >&2
      run_one "$spec" "$mode"
    done
  done
  gpu_dev=${devices["$spec|native-gpu"]:-}
  if [[ -n $gpu_dev && $gpu_dev != *"(gpu)" ]]; then no_gpu+=("$spec on $gpu_dev"); fi
done

# The results, one row per (application, mode): medians, best native, ratio.
rows="$tmp/rows"
: >"$rows"
for spec in "${specs[@]}"; do
  best=""
  for mode in "${modes[@]:0:nnat}"; do
    m=$(median "${kernel_ms["$spec|$mode"]:-}")
    if [[ -n $m ]] && { [[ -z $best ]] || awk -v a="$m" -v b="$best" 'BEGIN {exit !(a < b)}'; }; then best=$m; fi
  done
  best_wall=""
  for mode in "${modes[@]:0:nnat}"; do
    m=$(median "${wall_ms["$spec|$mode"]:-}")
    if [[ -n $m ]] && { [[ -z $best_wall ]] || awk -v a="$m" -v b="$best_wall" 'BEGIN {exit !(a < b)}'; }; then
      best_wall=$m  # a median of an even count of runs may end in .5
    fi
  done
  for mode in "${modes[@]}"; do
    key="$spec|$mode"
    k=$(median "${kernel_ms[$key]:-}")
    w=$(median "${wall_ms[$key]:-}")
    ratio=$(awk -v a="$k" -v b="$best" 'BEGIN {if (a == "" || b == "" || b <= 0) print ""; else printf "%.3f", a / b}')
    wratio=$(awk -v a="$w" -v b="$best_wall" 'BEGIN {if (a == "" || b == "" || b <= 0) print ""; else printf "%.3f", a / b}')
    runs=$(echo ${kernel_ms[$key]:-})
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$spec" "$mode" "${k:--}" "${w:--}" "${ratio:--}" "${wratio:--}" \
      "${failures[$key]:-0}" "${devices[$key]:--}" "${best:--}" "${runs:--}" >>"$rows"
  done
done

# print_table COLUMN RATIO_COLUMN TITLE: one line per application, then the geometric means of the ratios.
print_table() {
  awk -F'\t' -v col="$1" -v rcol="$2" -v title="$3" -v nnat="$nnat" '
    { app = $1; mode = $2
      if (!(app in seen)) { seen[app] = 1; order[++napps] = app }
      if (!(mode in mseen)) { mseen[mode] = 1; morder[++nm] = mode }
      v[app, mode] = ($7 > 0 ? $col "!" : $col); r[app, mode] = $rcol }
    END {
      printf "\n%s\n%-18s", title, "app"
      for (j = 1; j <= nm; ++j) printf " %14s", morder[j]
      printf " %12s", "best native"
      for (j = nnat + 1; j <= nm; ++j) printf " %12s", morder[j] "/best"
      printf "\n"
      for (i = 1; i <= napps; ++i) {
        a = order[i]; printf "%-18s", a
        best = ""
        for (j = 1; j <= nm; ++j) {
          printf " %14s", v[a, morder[j]]
          if (j <= nnat && v[a, morder[j]] != "-" && v[a, morder[j]] !~ /!/ && (best == "" || v[a, morder[j]] + 0 < best + 0)) best = v[a, morder[j]]
        }
        printf " %12s", (best == "" ? "-" : best)
        for (j = nnat + 1; j <= nm; ++j) {
          x = r[a, morder[j]]; printf " %12s", x
          if (x != "-" && x > 0) { lsum[j] += log(x); lcount[j]++ }
        }
        printf "\n"
      }
      printf "%-18s", "geomean"
      for (j = 1; j <= nm; ++j) printf " %14s", ""
      printf " %12s", ""
      for (j = nnat + 1; j <= nm; ++j) printf " %12s", (lcount[j] ? sprintf("%.3f", exp(lsum[j] / lcount[j])) : "-")
      printf "\n"
    }' "$rows"
}

print_table 3 5 "kernel_ms (median of $repeat; the applications' own timed sections; ! = some runs failed)"
print_table 4 6 "process wall ms (median of $repeat)"
for spec in "${specs[@]}"; do
  if [[ -n ${notes[$spec]:-} ]]; then echo "note: $spec: ${notes[$spec]}"; fi
done
if [[ ${#no_gpu[@]} -gt 0 ]]; then
  echo "note: no GPU device: APP_DEVICE=gpu fell back to the first device for ${#no_gpu[@]} of ${#specs[@]}" \
    "applications (${no_gpu[0]}$([[ ${#no_gpu[@]} -gt 1 ]] && echo ", ..."))"
fi

if [[ -n $tsv ]]; then
  {
    printf 'app\tmode\tkernel_ms\twall_ms\tratio\twall_ratio\tfailures\tdevice\tbest_native_ms\tkernel_ms_runs\n'
    cat "$rows"
  } >"$tsv"
fi
if [[ -n $json ]]; then
  awk -F'\t' -v size="$size" -v repeat="$repeat" '
    function num(x) { return (x == "-" || x == "") ? "null" : x }
    function str(x) { gsub(/\\/, "\\\\", x); gsub(/"/, "\\\"", x); return "\"" x "\"" }
    BEGIN { printf "{\"size\": %s, \"repeat\": %d, \"results\": [", str(size), repeat }
    function runs(x) { if (x == "-" || x == "") return "[]"; gsub(/ /, ", ", x); return "[" x "]" }
    { printf "%s\n  {\"app\": %s, \"mode\": %s, \"kernel_ms\": %s, \"wall_ms\": %s, \"ratio\": %s, \"wall_ratio\": %s, \"failures\": %d, \"device\": %s, \"best_native_ms\": %s, \"kernel_ms_runs\": %s}",
        (NR > 1 ? "," : ""), str($1), str($2), num($3), num($4), num($5), num($6), $7, str($8), num($9), runs($10) }
    END { printf "\n]}\n" }' "$rows" >"$json"
fi
if [[ $failed -ne 0 ]]; then
  echo "run_apps.sh: some runs failed (above)" >&2
  exit 1
fi
