#!/usr/bin/env bash
# Experiments on the lent H100 host (../shared/platforms/h100-xeon16.md). Run from the repository root on that
# machine with the folder .device/ carried, made first on the analysis machine by benchmarks/device/prepare.sh (Debian's
# OpenCL debs, header-only includes, the kernel bundles of the sweeps and of the apps):
#   bash benchmarks/device/h100.sh EXPERIMENT...
# Experiments: characterize, split, malleable, svm, alone, pinned, sweepctx, processes, membw, sweepone, trial, realset, span, apps, presence, spread, enqueue, predictor. Results go to $OUT (at most 8 files come back).
# On another lent host (the H200 host, docs/results.md), PLATFORM_NAME names its platform in characterize's record and
# in realset's rows (default h100-xeon16); the other sweeps write h100-xeon16's rows.
# The sweeps (trial, realset, span) need .device/bundles: without them dop sweep refuses the grid's GPU levels below
# 8/8, which would run the whole GPU. A dataset to resume goes in .device/data/ under the name the experiment writes.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
OUT=${OUT:-/tmp/dop-out}
mkdir -p "$OUT"
for f in .device/*.deb; do dpkg -x "$f" /; done
ldconfig
mkdir -p /etc/OpenCL/vendors
echo /usr/lib/libnvidia-opencl.so.1 >/etc/OpenCL/vendors/nvidia.icd

t0=$(date +%s)
# .device/libbenchmark.tar (Google Benchmark's Debian files, made by prepare.sh): the runtime tier's benchmarks
# (bench_enqueue, bench_runtime) are built too, for the experiments enqueue and predictor
benchmarks=OFF
if [ -f .device/libbenchmark.tar ]; then
  tar -xf .device/libbenchmark.tar -C / && ldconfig && benchmarks=ON
fi
if ! { cmake -S . -B build-runtime -DCMAKE_BUILD_TYPE=Release -DDOP_ANALYSIS=OFF -DDOP_BUILD_TESTS=OFF \
         -DDOP_BUILD_BENCHMARKS=$benchmarks -DDOP_VENDOR_INCLUDE="$PWD/.device/include" &&
       cmake --build build-runtime -j "$(nproc)"; } >"$OUT/build.log" 2>&1; then
  tail -40 "$OUT/build.log"
  exit 1
fi
echo "build: $(($(date +%s) - t0)) s"
dop=build-runtime/bin/dop
$dop devices --json >"$OUT/devices.json"
$dop devices

# resume FILE UPGRADE-ARGS...: a dataset of .device/data/ copied into $OUT for the sweep to resume, given the data
# columns first (dop sweep upgrade with the sweep's own set, size and memory) when it was swept before them.
resume() {
  local f=$1
  shift
  [ -f ".device/data/$f" ] || return 0
  cp ".device/data/$f" "$OUT/$f"
  head -1 "$OUT/$f" | grep -q ',args,' && return 0
  $dop sweep upgrade "$OUT/$f" "$@" --out "$OUT/$f.upgraded" && mv "$OUT/$f.upgraded" "$OUT/$f"
}

# bundle_of SPEC: the --bundle arguments for a spec's kernel where .device/bundles has its bundle.
bundle_of() {
  local file
  file=$(sed -n 's/.*"kernel": *{"file": *"\([^"]*\)\.cl", *"name": *"\([^"]*\)".*/\1-\2/p' "$1")
  [ -f ".device/bundles/$file.json" ] && echo "--bundle .device/bundles/$file.json"
}
# ways SPEC REPEAT DOP-RUN-ARGS...: `dop run` of SPEC (under the command prefix "${watch[@]}" where one is set),
# printing the median time, the MB sent to the GPU in the last run and of them those sent from page-locked memory in
# place, then every run (C: the CPU ran, G: the GPU ran, w: warm, o: a device left out by choice, and its time).
watch=()
ways() {
  local spec=$1 repeat=$2
  shift 2
  timeout 200 "${watch[@]}" $dop run "$spec" $(bundle_of "$spec") --repeat "$repeat" --json "$@" >/tmp/ways.json &&
    python3 -c 'import json; j=json.load(open("/tmp/ways.json")); l=j["last"]
way = lambda r: ("C" if r["cpu_work_groups"] else "") + ("G" if r["gpu_work_groups"] else "") + ("w" if r["warm"] else "") + ("o" if r["left_out"] else "")
print("%.2f %.0f %.0f" % (j["time_ms"]["median"], l["h2d_bytes"] / 1e6, l.get("h2d_in_place_bytes", 0) / 1e6),
      " ".join("%s:%.1f" % (way(r), r["time_ms"]) for r in j["runs"]))'
}

# busy: each run of the last `ways` as CPU kernel time / CPU finish / GPU kernel time / total (ms): a slow kernel or a
# slow launch around it.
busy() {
  python3 -c 'import json; j=json.load(open("/tmp/ways.json"))
print("  busy:", " ".join("%.0f/%.0f/%.0f/%.0f" % (r["cpu_busy_ms"], r["cpu_finish_ms"], r["gpu_busy_ms"], r["time_ms"]) for r in j["runs"]))'
}

for exp in "$@"; do
  t0=$(date +%s)
  case "$exp" in
    characterize)
      $dop characterize --name "${PLATFORM_NAME:-h100-xeon16}" --out "$OUT/platform.json" | tee "$OUT/characterize.txt"
      ;;
    split)  # dynamic at all cores + whole GPU vs the best of 19 static splits, every real kernel (one organisation)
      # With bundles, copies are the slices the footprints allow, and dynamic is also timed with whole copies.
      size=${SPLIT_SIZE:-paper}
      bundles=()
      [ -d .device/bundles ] && bundles=(--bundles .device/bundles)
      timeout "${SPLIT_TIMEOUT:-400}" $dop bench split $(ls kernels/*/*_${size}_*wg256.json kernels/*/*_${size}_*wg16x16.json) \
        --repeat "${SPLIT_REPEAT:-5}" "${bundles[@]}" --out "$OUT/split.json" | tee "$OUT/split.txt"
      ;;
    malleable)  # the malleable GPU form's own cost: GPU only at 8/8, resident data, original kernel vs malleable form
      size=${SPLIT_SIZE:-sweep}
      printf "%-34s %12s %12s %8s\n" workload original_ms malleable_ms ratio | tee "$OUT/malleable.txt"
      for spec in $(ls kernels/*/*_${size}_*wg256.json kernels/*/*_${size}_*wg16x16.json); do
        file=$(sed -n 's/.*"kernel": *{"file": *"\([^"]*\)\.cl", *"name": *"\([^"]*\)".*/\1-\2/p' "$spec")
        b=.device/bundles/$file.json
        [ -f "$b" ] || continue
        run() { timeout 120 $dop run "$spec" --config 0,1 --memory resident --repeat "${MALLEABLE_REPEAT:-7}" \
                  --bundle "$b" --json "$@" | sed -n 's/.*"median": *\([0-9.e+-]*\).*/\1/p' | head -1; }
        o=$(run); m=$(run --malleable-at-full)
        r=$(awk -v o="$o" -v m="$m" 'BEGIN { if (o > 0) printf "%.3f", m / o; else print "-" }')
        printf "%-34s %12s %12s %8s\n" "$(basename "$spec" .json)" "$o" "$m" "$r" | tee -a "$OUT/malleable.txt"
      done
      ;;
    svm)  # shared virtual memory: why it is unavailable with the two platforms, and SVM against host pointers on
      # the CPU alone (PoCL's own SVM), median of 7 runs each, every real kernel (one organisation)
      size=${SPLIT_SIZE:-sweep}
      specs=$(ls kernels/*/*_${size}_*wg256.json kernels/*/*_${size}_*wg16x16.json)
      $dop run $(echo "$specs" | head -1) --memory svm 2>&1 | tee "$OUT/svm.txt"
      printf "%-34s %12s %12s %8s\n" workload zero_copy_ms svm_ms ratio | tee -a "$OUT/svm.txt"
      for spec in $specs; do
        med() {  # the median; "!" after it when the run failed or did not validate
          local j rc
          j=$(timeout 120 $dop run "$spec" --gpu none --config 1,0 --memory "$1" --repeat 7 --validate --json)
          rc=$?
          echo "$(echo "$j" | sed -n 's/.*"median": *\([0-9.e+-]*\).*/\1/p' | head -1)$([ $rc -eq 0 ] || echo '!')"
        }
        z=$(med zero-copy); v=$(med svm)
        r=$(awk -v z="$z" -v v="$v" 'BEGIN { if (z > 0) printf "%.3f", v / z; else print "-" }')
        printf "%-34s %12s %12s %8s\n" "$(basename "$spec" .json)" "$z" "$v" "$r" | tee -a "$OUT/svm.txt"
      done
      ;;
    trial)  # a timed sample of the sweep: synthetic workloads and every real kernel, at the full grid
      # Malleable GPU forms come from bundles made with Clang beforehand (benchmarks/device/make_bundles.sh).
      bundles=()
      [ -d .device/bundles ] && bundles=(--bundles .device/bundles)
      timeout "${TRIAL_TIMEOUT:-500}" $dop sweep --set "${TRIAL_SET:-paper}" --sample "${TRIAL_SAMPLE:-50}" \
        --scale "${TRIAL_SCALE:-1}" --repeat "${TRIAL_REPEAT:-3}" --warmup "${TRIAL_WARMUP:-1}" \
        --platform-id h100-xeon16 "${bundles[@]}" --out "$OUT/trial.csv" 2>&1 | tail -4
      timeout "${TRIAL_REAL_TIMEOUT:-300}" $dop sweep --set real --size "${TRIAL_REAL_SIZE:-paper}" \
        --repeat "${TRIAL_REPEAT:-3}" --warmup "${TRIAL_WARMUP:-1}" --platform-id h100-xeon16 "${bundles[@]}" \
        --out "$OUT/trial.csv" 2>&1 | tail -4
      ;;
    alone)  # a both-device configuration whose GPU gives its staging up: every launch cold (--cold, the engine before
      # the GPU was timed alone once) against warm launches (the default), interleaved, with each device alone beside;
      # ALONE_SPECS (default: three large host-data real kernels), ALONE_CONFIGS (default "0.5,1 1,1 0.25,0.5"); the
      # last column is every launch of the warm runs
      specs=${ALONE_SPECS:-"kernels/atax/atax1_large_n23040_wg64.json kernels/gesummv/gesummv_large_n23040_wg64.json kernels/mvt/mvt1_large_n23040_wg64.json"}
      printf "%-34s %-9s %10s %10s %10s %10s  %s\n" workload config cold_ms warm_ms cpu_ms gpu_ms \
        "warm runs, the warm-up first (C: the CPU ran, G: the GPU ran, w: warm, o: a device left out by choice)" |
        tee "$OUT/alone.txt"
      for spec in $specs; do
        med() { ways "$spec" "${ALONE_REPEAT:-5}" --memory copy "$@"; }
        c1=$(med --config 1,0 | cut -d' ' -f1); g1=$(med --config 0,1 | cut -d' ' -f1)
        for cfg in ${ALONE_CONFIGS:-0.5,1 1,1 0.25,0.5}; do
          cold=$(med --config "$cfg" --cold | cut -d' ' -f1); warm=$(med --config "$cfg")
          printf "%-34s %-9s %10s %10s %10s %10s  %s\n" "$(basename "$spec" .json)" "$cfg" "$cold" "${warm%% *}" "$c1" "$g1" \
            "$(echo "$warm" | cut -d' ' -f4-)" | tee -a "$OUT/alone.txt"
        done
      done
      ;;
    spread)  # where the CPU's spread with host data lies: SPREAD_PROCS processes of `dop run --repeat SPREAD_REPEAT` for
      # each configuration of SPREAD_CONFIGS (default 16 cores alone, 15 cores alone, 16 cores + half the GPU) and each
      # spec of SPREAD_SPECS, interleaved; spread.txt: every process's median and runs; then, per spec and
      # configuration, the spread within a process (median over processes of max/min of its runs after the warm-up)
      # against the spread between processes (max/min of the processes' medians)
      specs=${SPREAD_SPECS:-"kernels/atax/atax1_paper_n16384_wg256.json kernels/bicg/bicg2_paper_n16384_wg64.json kernels/fdtd2d/fdtd3_sweep_n4096_wg8x8.json kernels/mvt/mvt1_sweep_n4096_wg256.json"}
      for p in $(seq "${SPREAD_PROCS:-5}"); do
        for spec in $specs; do
          for cfg in ${SPREAD_CONFIGS:-1,0 0.9375,0 1,0.5}; do
            echo "$(basename "$spec" .json) $cfg $p $(ways "$spec" "${SPREAD_REPEAT:-8}" --memory copy --config "$cfg")" |
              tee -a "$OUT/spread.txt"
          done
        done
      done
      python3 - "$OUT/spread.txt" <<'PY'
import collections, re, statistics as st, sys
procs = collections.defaultdict(list)
for line in open(sys.argv[1]):
    p = line.split()
    if len(p) < 7:
        continue
    runs = [float(x.split(":")[1]) for x in p[6:]][1:]  # the warm-up left out
    if runs:
        procs[p[0], p[1]].append((st.median(runs), max(runs) / min(runs), "".join(sorted({x.split(":")[0] for x in p[7:]}))))
for (w, c), v in sorted(procs.items()):
    meds = [m for m, _, _ in v]
    print(f"{w:34s} {c:9s} n={len(v)} medians {min(meds):8.2f} .. {max(meds):8.2f} ({max(meds) / min(meds):.2f}x between)"
          f"  within {st.median(r for _, r, _ in v):.2f}x  ways {' '.join(sorted({x for _, _, x in v}))}")
PY
      ;;
    pinned)  # host data in pageable memory (copy: staged through pinned memory by idle cores) against page-locked
      # memory (pinned: the GPU's DMA reads it in place), each device alone and both, warm, interleaved per
      # configuration; PINNED_SPECS (default: three large host-data real kernels), PINNED_CONFIGS
      printf "%-34s %-9s %-7s %10s %8s %8s  %s\n" workload config memory median_ms h2d_MB inplace_MB \
        "runs, the warm-up first (C: the CPU ran, G: the GPU ran, w: warm, o: a device left out by choice)" |
        tee "$OUT/pinned.txt"
      specs=${PINNED_SPECS:-"kernels/atax/atax1_large_n23040_wg64.json kernels/gesummv/gesummv_large_n23040_wg64.json kernels/mvt/mvt1_large_n23040_wg64.json"}
      for spec in $specs; do
        for cfg in ${PINNED_CONFIGS:-1,0 0,1 1,1 0.75,1 0.5,1}; do
          for mem in copy pinned; do
            r=$(ways "$spec" "${PINNED_REPEAT:-7}" --config "$cfg" --memory "$mem")
            printf "%-34s %-9s %-7s %10s %8s %8s  %s\n" "$(basename "$spec" .json)" "$cfg" "$mem" $(echo "$r" | cut -d' ' -f1-3) \
              "$(echo "$r" | cut -d' ' -f4-)" | tee -a "$OUT/pinned.txt"
          done
        done
      done
      ;;
    sweepctx)  # one workload's configurations inside a sweep's executor against the same in `dop run` (a fresh
      # executor each): CTX_WORKLOAD (a real kernel's workload name) of CTX_SIZE, rows from .device/data/CTX_DATA;
      # each ';'-separated group of CTX_SETS is swept in a fresh process with the workload's other rows present (so
      # that only the group is measured, in grid order, in one executor), vmstat beside it; then `dop run` at
      # CTX_RUN. Memory limits and use are printed first.
      w=${CTX_WORKLOAD:-fdtd2_large_n23040_wg16x16}
      size=${CTX_SIZE:-large}
      spec=$(ls kernels/*/"$w".json)
      { cat /sys/fs/cgroup/memory.max 2>/dev/null; free -g; grep -i -E 'swap|hugepages_total|anonhuge' /proc/meminfo; } |
        tee "$OUT/sweepctx.txt"
      IFS=';' read -ra groups <<<"${CTX_SETS:-1,0 1,0.25 1,1;0,1 0.5,0.5 1,0.25 1,1}"
      g=0
      for cfgs in "${groups[@]}"; do
        g=$((g + 1))
        python3 - ".device/data/${CTX_DATA:-real-large-copy.csv}" "$w" $cfgs >"$OUT/ctx$g.csv" <<'PY'
import csv, sys
rows = list(csv.reader(open(sys.argv[1])))
h = rows[0]
w, c, gu = h.index("workload"), h.index("cpu_util"), h.index("gpu_util")
drop = {tuple(float(v) for v in x.split(",")) for x in sys.argv[3:]}
out = csv.writer(sys.stdout, lineterminator="\n")
out.writerow(h)
for r in rows[1:]:
    if r[w] == sys.argv[2] and (float(r[c]), float(r[gu])) not in drop:
        out.writerow(r)
PY
        vmstat 2 >"$OUT/vmstat$g.txt" &
        vm=$!
        echo "group $g: $cfgs" | tee -a "$OUT/sweepctx.txt"
        timeout 300 $dop sweep --set real --size "$size" --match "^$w\$" --memory copy --repeat 3 --warmup 1 \
          --platform-id h100-xeon16 --bundles .device/bundles --out "$OUT/ctx$g.csv" 2>&1 | tail -4 | tee -a "$OUT/sweepctx.txt"
        kill $vm
        python3 - "$OUT/ctx$g.csv" $cfgs <<'PY' | tee -a "$OUT/sweepctx.txt"
import csv, sys
want = {tuple(float(v) for v in x.split(",")) for x in sys.argv[2:]}
for r in csv.DictReader(open(sys.argv[1])):
    if (float(r["cpu_util"]), float(r["gpu_util"])) in want:
        print("  %s,%s %9s ms  cpu_wg %s gpu_wg %s h2d %s d2h %s merge %s" % (r["cpu_util"], r["gpu_util"], r["time_ms_median"],
              r["cpu_work_groups"], r["gpu_work_groups"], r["h2d_ms"], r["d2h_ms"], r["merge_ms"]))
PY
      done
      for cfg in ${CTX_RUN:-1,0 1,0.25 1,1}; do
        echo "dop run $cfg: $(ways "$spec" 8 --config "$cfg" --memory copy)" | tee -a "$OUT/sweepctx.txt"
        python3 -c 'import json; print("  note:", json.load(open("/tmp/ways.json"))["last"].get("note", ""))' |
          tee -a "$OUT/sweepctx.txt"
      done
      free -g | tee -a "$OUT/sweepctx.txt"
      ;;
    processes)  # one workload in PROCESSES separate `dop run` processes (REPEAT runs each), every launch listed, to
      # see what differs between processes: SPEC; the configurations of CONFIGS and the environment settings of
      # PROC_ENVS (';'-separated, e.g. "X=0;X=1") taken in turn, one per process, PROC_ARGS passed to every
      # `dop run`; each process watched
      # (benchmarks/device/procwatch.py: its CPU time, page faults, context switches, page-locked memory, and the
      # machine's steal time meanwhile)
      spec=${SPEC:-kernels/fdtd2d/fdtd2_large_n23040_wg16x16.json}
      read -ra cfgs <<<"${CONFIGS:-${CONFIG:-1,1}}"
      IFS=';' read -ra envs <<<"${PROC_ENVS:-}"
      [ ${#envs[@]} -eq 0 ] && envs=("")
      for i in $(seq 0 $((${PROCESSES:-6} - 1))); do
        cfg=${cfgs[$((i % ${#cfgs[@]}))]}
        e=${envs[$((i % ${#envs[@]}))]}
        # shellcheck disable=SC2206  # e: assignments for env, split on purpose
        watch=(env $e python3 benchmarks/device/procwatch.py /tmp/watch.txt --)
        # shellcheck disable=SC2086  # PROC_ARGS: more `dop run` arguments, split on purpose
        echo "$cfg ${e:-(no env)}: $(ways "$spec" "${REPEAT:-7}" --config "$cfg" --memory copy ${PROC_ARGS:-})" |
          tee -a "$OUT/processes.txt"
        busy | tee -a "$OUT/processes.txt"
        echo "  watch: $(cat /tmp/watch.txt)" | tee -a "$OUT/processes.txt"
      done
      watch=()
      ;;
    membw)  # host memory bandwidth alone (benchmarks/device/membw.cpp, fdtd2's update over two 2 GiB arrays on every
      # core, no OpenCL) in MEMBW_PROCESSES fresh processes, each watched as in `processes`
      g++ -O2 -pthread benchmarks/device/membw.cpp -o /tmp/membw || exit 1
      for i in $(seq "${MEMBW_PROCESSES:-6}"); do
        python3 benchmarks/device/procwatch.py /tmp/watch.txt -- /tmp/membw ${MEMBW_ARGS:-} | tee -a "$OUT/membw.txt"
        echo "  watch: $(cat /tmp/watch.txt)" | tee -a "$OUT/membw.txt"
      done
      ;;
    sweepone)  # one workload swept whole (every configuration, grid order, one fresh process each time) once per
      # environment setting of ONE_ENVS (';'-separated, e.g. ";POCL_AFFINITY=1"), each sweep watched as in
      # `processes`; then each configuration of ONE_RUN in a `dop run` process of its own. ONE_WORKLOAD, ONE_SIZE.
      w=${ONE_WORKLOAD:-fdtd2_large_n23040_wg16x16}
      spec=$(ls kernels/*/"$w".json)
      IFS=';' read -ra envs <<<"${ONE_ENVS:-}"
      [ ${#envs[@]} -eq 0 ] && envs=("")
      for i in "${!envs[@]}"; do
        e=${envs[$i]}
        echo "sweep $i: ${e:-(no env)}" | tee -a "$OUT/sweepone.txt"
        # shellcheck disable=SC2086  # e: assignments for env, split on purpose
        timeout 300 env $e python3 benchmarks/device/procwatch.py /tmp/watch.txt -- $dop sweep --set real \
          --size "${ONE_SIZE:-large}" --match "^$w\$" --memory copy --repeat 3 --warmup 1 --platform-id h100-xeon16 \
          --bundles .device/bundles --out "$OUT/one$i.csv" 2>&1 | tail -2 | tee -a "$OUT/sweepone.txt"
        echo "  watch: $(cat /tmp/watch.txt)" | tee -a "$OUT/sweepone.txt"
        python3 - "$OUT/one$i.csv" <<'PY' | tee -a "$OUT/sweepone.txt"
import csv, sys
for r in csv.DictReader(open(sys.argv[1])):
    print("  %s,%s %9s ms  cpu_wg %s/%s chunks gpu_wg %s/%s chunks h2d %s" % (r["cpu_util"], r["gpu_util"],
          r["time_ms_median"], r["cpu_work_groups"], r["cpu_chunks"], r["gpu_work_groups"], r["gpu_chunks"], r["h2d_ms"]))
PY
      done
      for cfg in ${ONE_RUN:-}; do
        echo "dop run $cfg: $(ways "$spec" 5 --config "$cfg" --memory copy)" | tee -a "$OUT/sweepone.txt"
        busy | tee -a "$OUT/sweepone.txt"
      done
      ;;
    realset)  # the evaluation set of issue 16: the real kernels at each size of REAL_SIZES in each memory situation of
      # REAL_MEMORY (copy: inputs in host memory, end to end; resident: the GPU holds the inputs), the full grid, one
      # file per (size, memory) in $OUT; a file already in .device/data/ is resumed (the sweep skips its rows)
      bundles=()
      [ -d .device/bundles ] && bundles=(--bundles .device/bundles)
      for size in ${REAL_SIZES:-small sweep}; do
        for mem in ${REAL_MEMORY:-copy resident}; do
          f=real-$size-$mem.csv
          resume "$f" --set real --size "$size" --memory "$mem"
          t1=$(date +%s)
          timeout "${REAL_TIMEOUT:-300}" $dop sweep --set real --size "$size" --memory "$mem" \
            --repeat "${REAL_REPEAT:-3}" --warmup "${REAL_WARMUP:-1}" --platform-id "${PLATFORM_NAME:-h100-xeon16}" "${bundles[@]}" \
            --out "$OUT/$f" 2>&1 | tail -2
          echo "$f: $(($(date +%s) - t1)) s"
        done
      done
      ;;
    span)  # issue 16's training sweep: the span set (SPAN_SAMPLE workloads spread over it, SPAN_CONFIGS configurations
      # each, the three corners always) in each memory situation of SPAN_MEMORY, one resumable file each (as realset);
      # SPAN_MATCH=REGEX sweeps only the workloads whose names match (before the sample; SPAN_SAMPLE=0: all of them),
      # into span-MEMORY$SPAN_TAG.csv; SPAN_PLATFORM=RECORD sweeps that record's grid (e.g. one CPU level: the
      # configurations of that level a sampled sweep left out, when resumed from it with SPAN_CONFIGS=0); SPAN_SCALE=S
      # sweeps the set at scale S with names ending _xS (dop sweep --name-suffix: kept apart from the scale-1 rows),
      # e.g. SPAN_SCALE=0.02 SPAN_TAG=-x0.02 for launches of 0.1-0.5 ms
      bundles=()
      [ -d .device/bundles ] && bundles=(--bundles .device/bundles)
      match=()
      [ -n "${SPAN_MATCH:-}" ] && match=(--match "$SPAN_MATCH")
      platform=(--platform-id h100-xeon16)
      [ -n "${SPAN_PLATFORM:-}" ] && platform=(--platform "$SPAN_PLATFORM")
      for mem in ${SPAN_MEMORY:-copy resident}; do
        f=span-$mem${SPAN_TAG:-}.csv
        resume "$f" --set span --memory "$mem"
        t1=$(date +%s)
        scale=()
        [ -n "${SPAN_SCALE:-}" ] && scale=(--scale "$SPAN_SCALE" --name-suffix "_x$SPAN_SCALE")
        timeout "${SPAN_TIMEOUT:-400}" $dop sweep --set span "${match[@]}" "${scale[@]}" --sample "${SPAN_SAMPLE:-160}" \
          --configs "${SPAN_CONFIGS:-12}" \
          --memory "$mem" --repeat "${SPAN_REPEAT:-2}" --warmup "${SPAN_WARMUP:-1}" "${platform[@]}" \
          "${bundles[@]}" --out "$OUT/$f" 2>&1 | tail -2
        echo "$f: $(($(date +%s) - t1)) s, $(($(wc -l <"$OUT/$f") - 1)) rows"
      done
      ;;
    apps)  # benchmarks/apps/ natively on the GPU and the CPU and under dop exec (auto with the platform's model of models/ and
      # the apps' bundles, and fixed configurations): medians of kernel_ms and ratios to the best native device
      bundles=()
      [ -d .device/app-bundles ] && bundles=(--dop-arg --bundles --dop-arg .device/app-bundles)
      # APPS_BEFORE=DIR (a source tree, e.g. `git archive` of an earlier commit): its dop and interposer are built too
      # and every dop mode runs with both trees' dop exec, interleaved (run_apps.sh --lib before=BUILD --lib after=BUILD)
      libs=()
      if [ -n "${APPS_BEFORE:-}" ]; then
        if ! { cmake -S "$APPS_BEFORE" -B build-before -DCMAKE_BUILD_TYPE=Release -DDOP_ANALYSIS=OFF \
                 -DDOP_BUILD_TESTS=OFF -DDOP_BUILD_BENCHMARKS=OFF -DDOP_VENDOR_INCLUDE="$PWD/.device/include" &&
               cmake --build build-before -j "$(nproc)" --target dop dop_intercept; } >"$OUT/build-before.log" 2>&1; then
          tail -40 "$OUT/build-before.log"
          exit 1
        fi
        libs=(--lib "before=$PWD/build-before" --lib "after=$PWD/build-runtime")
      fi
      # APPS_NATIVES="gpu" runs no application natively on the CPU (where it is known to be far slower)
      # APPS_AGAIN=1 runs the first native device a second time as a mode of its own (run_apps.sh --again: an A/A
      # calibration of what identical runs differ by)
      # APPS_MODELS="NAME=MODEL ...": auto once per model instead (run_apps.sh --models), e.g. before and after a retrain
      model_args=(--model "${APPS_MODEL:-models}")
      if [ -n "${APPS_MODELS:-}" ]; then
        model_args=()
        for m in $APPS_MODELS; do model_args+=(--models "$m"); done
      fi
      export DOP_CACHE_DIR=$PWD/build-runtime/dop-cache
      timeout "${APPS_TIMEOUT:-540}" bash benchmarks/apps/run_apps.sh --size "${APPS_SIZE:-medium}" \
        --warmup "${APPS_WARMUP:-1}" --repeat "${APPS_REPEAT:-3}" --configs "${APPS_CONFIGS:-1,0 0,1 1,1}" \
        --natives "${APPS_NATIVES:-gpu cpu}" ${APPS_AGAIN:+--again} \
        "${model_args[@]}" --dop "$dop" --bin build-runtime/bin/apps \
        ${APPS:+--apps "$APPS"} "${bundles[@]}" "${libs[@]}" --json "$OUT/apps${APPS_TAG:-}.json" \
        2>"$OUT/apps${APPS_TAG:-}.log" | tee "$OUT/apps${APPS_TAG:-}.txt"
      # APPS_LOG=1: then each application once under auto with dop's log, its launches summarised by how each was
      # decided and routed (count and the interposer's call_us), and the cost of reading the clocks dop uses
      if [ -n "${APPS_LOG:-}" ]; then
        {
          echo "clocksource: $(cat /sys/devices/system/clocksource/clocksource0/current_clocksource 2>/dev/null)"
          cc -O2 -x c -o /tmp/clock_cost - <<'C' && /tmp/clock_cost
#include <stdio.h>
#include <time.h>
int main(void) {
  const clockid_t ids[2] = {CLOCK_MONOTONIC, CLOCK_MONOTONIC_COARSE};
  const char* names[2] = {"CLOCK_MONOTONIC", "CLOCK_MONOTONIC_COARSE"};
  for (int k = 0; k < 2; ++k) {
    struct timespec a, b, t;
    clock_gettime(CLOCK_MONOTONIC, &a);
    for (int i = 0; i < 1000000; ++i) clock_gettime(ids[k], &t);
    clock_gettime(CLOCK_MONOTONIC, &b);
    printf("%s: %.1f ns per read\n", names[k], ((b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec)) / 1e6);
  }
  return 0;
}
C
          for a in stencil gemm_chain lu compute tiny stream "stream --host"; do
            echo "== $a"
            $dop exec --config auto --model "${APPS_MODEL:-models}" --bundles .device/app-bundles \
              --log -- build-runtime/bin/apps/$a --size "${APPS_SIZE:-medium}" 2>&1 >/dev/null | python3 -c '
import collections, re, sys
n, us, own, rest = collections.Counter(), collections.defaultdict(float), collections.defaultdict(float), collections.Counter()
for line in sys.stdin:
    m = re.search(r"call_us=([0-9.]+)", line)
    if not m:
        rest[re.sub(r"[0-9.]+", "N", line.strip())[:160]] += 1
        continue
    f = dict(kv.split("=", 1) for kv in line.split() if "=" in kv)
    k = " ".join(f.get(x, "-") for x in ("kernel", "class", "model", "auto", "route"))
    n[k] += 1
    us[k] += float(m.group(1))
    own[k] += float(m.group(1)) - 1e3 * float(f.get("enqueue_ms", 0))
print("launches    call_us  each  dop_us  each  (dop_us: call_us less the real enqueue)  kernel class model auto route")
for k in sorted(n):
    print(f"{n[k]:6d} {us[k]:10.1f} {us[k] / n[k]:6.2f} {own[k]:7.1f} {own[k] / n[k]:5.2f}  {k}")
for k, c in rest.most_common(8):
    print(f"{c:6d} x {k}")'
          done
        } >"$OUT/apps${APPS_TAG:-}-log.txt" 2>&1
        cat "$OUT/apps${APPS_TAG:-}-log.txt"
      fi
      ;;
    presence)  # the interposer's mere presence: PRESENCE_APPS natively on the GPU and in PRESENCE_MODES (default:
      # preloaded at DOP_CONFIG=0,1 with no dop exec and no decision, under dop exec --config 0,1, under auto),
      # PRESENCE_ROUNDS interleaved rounds; medians of kernel_ms, submit_ms, cpu_ms and main_cpu_ms (the apps' section
      # clocks, benchmarks/apps/app_common.h) and kernel_ms's ratio to native (presence.txt: every run). More modes:
      # gpuonly (preloaded, DOP_CPU=none: dop discovers no CPU device of its own), stdcxx (only libstdc++ preloaded),
      # nvnative and nvpreload (natively and preloaded with the NVIDIA ICD alone registered: no PoCL in the process);
      # pin:MODE, any of them with the application bound to the cores PRESENCE_CPUS (taskset)
      export DOP_CACHE_DIR=$PWD/build-runtime/dop-cache
      auto_args=(--config auto --model models --bundles .device/app-bundles)
      papps=${PRESENCE_APPS:-gemm_chain lu stencil tiny}
      pmodes="native ${PRESENCE_MODES:-preload exec01 auto}"
      lib=$PWD/build-runtime/lib/libdop_intercept.so
      mkdir -p /tmp/nv-only && cp /etc/OpenCL/vendors/nvidia.icd /tmp/nv-only/
      stdcxx=$(ldconfig -p | sed -n 's/.*libstdc++.so.6 .*=> //p' | head -1)
      for a in $papps; do $dop exec "${auto_args[@]}" -- build-runtime/bin/apps/$a --size medium >/dev/null 2>&1; done
      read -r -a pm <<<"$pmodes"
      num() { sed -n "s/.* $1=\([0-9.]*\).*/\1/p" <<<"$o"; }  # a number of the last run's summary line ($o)
      for r in $(seq "${PRESENCE_ROUNDS:-14}"); do
        for a in $papps; do
          for ((i = 0; i < ${#pm[@]}; ++i)); do  # round r starts at its r-th mode: no mode always runs first
            m=${pm[$(((r - 1 + i) % ${#pm[@]}))]}
            app=(build-runtime/bin/apps/$a --size medium)
            # pin:MODE runs MODE with the application on the cores PRESENCE_CPUS (default 4-7)
            [[ $m == pin:* ]] && app=(taskset -c "${PRESENCE_CPUS:-4-7}" "${app[@]}")
            case ${m#pin:} in
              native) o=$(APP_DEVICE=gpu "${app[@]}" 2>/dev/null) ;;
              preload) o=$(LD_PRELOAD=$lib DOP_CONFIG=0,1 "${app[@]}" 2>/dev/null) ;;
              gpuonly) o=$(LD_PRELOAD=$lib DOP_CONFIG=0,1 DOP_CPU=none "${app[@]}" 2>/dev/null) ;;
              stdcxx) o=$(LD_PRELOAD=$stdcxx APP_DEVICE=gpu "${app[@]}" 2>/dev/null) ;;
              nvnative) o=$(OCL_ICD_VENDORS=/tmp/nv-only APP_DEVICE=gpu "${app[@]}" 2>/dev/null) ;;
              nvpreload) o=$(OCL_ICD_VENDORS=/tmp/nv-only LD_PRELOAD=$lib DOP_CONFIG=0,1 "${app[@]}" 2>/dev/null) ;;
              exec01) o=$($dop exec --config 0,1 -- "${app[@]}" 2>/dev/null) ;;
              auto) o=$($dop exec "${auto_args[@]}" -- "${app[@]}" 2>/dev/null) ;;
              *) echo "presence: unknown mode '$m'" >&2 && exit 2 ;;
            esac
            echo "$a $m $(num kernel_ms) $(sed -n 's/.*check=\([a-zA-Z]*\).*/\1/p' <<<"$o") $(num submit_ms) $(num cpu_ms)" \
              "$(num main_cpu_ms)" >>"$OUT/presence.txt"
          done
        done
      done
      python3 - "$OUT/presence.txt" "$papps" "$pmodes" <<'PY'
import collections, statistics as st, sys
v = collections.defaultdict(list)
for line in open(sys.argv[1]):
    p = line.split()
    if len(p) >= 4 and p[3] == "ok":
        v[p[0], p[1]].append([float(x) for x in [p[2]] + p[4:]])
med = lambda rows, i: st.median(r[i] for r in rows) if rows and all(len(r) > i for r in rows) else float("nan")
for a in sys.argv[2].split():
    n = med(v[a, "native"], 0)
    for m in sys.argv[3].split():
        rows = v[a, m]
        q = st.quantiles([r[0] for r in rows], n=4) if len(rows) > 1 else [float("nan")] * 3
        print(f"{a:11s} {m:14s} n={len(rows):2d} kernel {med(rows, 0):8.3f} ({med(rows, 0) / n:.3f}, quartiles"
              f" {q[2] / q[0]:.2f}x apart)  submit {med(rows, 1):8.3f}  cpu {med(rows, 2):8.3f}  main_cpu {med(rows, 3):8.3f}")
PY
      ;;
    enqueue)  # the interposer's cost per launch on the native route (the GPU in whole: 0,1); needs Google Benchmark
      # ENQUEUE_CONFIGS (default 0,1; `auto` takes models/), ENQUEUE_ROUNDS (default 5); the application asks for a
      # GPU by type (BENCH_ENQUEUE_GPU=1)
      if [ -x build-runtime/bin/bench_enqueue ]; then
        export BENCH_ENQUEUE_GPU=1 DOP_MODEL=${DOP_MODEL:-models}
        build-runtime/bin/bench_enqueue --benchmark_filter='BM_EnqueueNDRange/' 2>&1 | grep -v '^BM_' | tee "$OUT/enqueue.txt"
        for c in ${ENQUEUE_CONFIGS:-0,1}; do
          timeout "${ENQUEUE_TIMEOUT:-240}" bash benchmarks/intercept_overhead.sh build-runtime "$c" \
            "${ENQUEUE_ROUNDS:-5}" | tee -a "$OUT/enqueue.txt"
        done
      else
        echo "enqueue: no bench_enqueue (.device/libbenchmark.tar missing)" | tee "$OUT/enqueue.txt"
      fi
      ;;
    predictor)  # the predictor's latency on this host's CPU: bench_predictor (analysis tier: built on the analysis
      # machine and carried with its libraries in .device/predictor-bench by prepare.sh; it reads the shipped models
      # from the source tree it was built in, so that path is made to point here)
      src=$(cat .device/predictor-bench/source_dir)
      if [ ! -e "$src" ]; then mkdir -p "$(dirname "$src")" && ln -s "$PWD" "$src"; fi
      LD_LIBRARY_PATH=$PWD/.device/predictor-bench timeout "${PREDICTOR_TIMEOUT:-300}" \
        .device/predictor-bench/bench_predictor --benchmark_filter="${PREDICTOR_FILTER:-Decide}" \
        --benchmark_repetitions="${PREDICTOR_REPETITIONS:-9}" --benchmark_report_aggregates_only=true |
        tee "$OUT/predictor.txt"
      ;;
    *)
      echo "unknown experiment $exp" >&2
      ;;
  esac
  echo "$exp: $(($(date +%s) - t0)) s"
done
