#!/usr/bin/env python3
"""benchmarks/median_passes.py on passes written here: the kept row is its configuration's median pass, whole; invalid
rows are passed over; each pass's best configuration is scored in the others; a pass whose columns differ, or that
lacks one, is a clear error naming the file."""
import csv
import gzip
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "..", "benchmarks", "median_passes.py")
COLUMNS = ["platform_id", "workload", "data_on", "cpu_util", "gpu_util", "time_ms_median", "cpu_work_groups", "valid"]

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)


def row(w, c, g, t, cwg, valid="1"):
    return dict(zip(COLUMNS, ["p", w, "host", c, g, t, cwg, valid]))


def write(path, rows, columns=COLUMNS):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "wt", newline="") as f:
        w = csv.DictWriter(f, fieldnames=columns, extrasaction="ignore", lineterminator="\n")
        w.writeheader()
        w.writerows(rows)


def run(d, passes, out=True):
    paths = []
    for i, rows in enumerate(passes):
        p = os.path.join(d, f"pass{i + 1}.csv" + (".gz" if i == 1 else ""))  # one compressed, as committed
        write(p, rows)
        paths.append(p)
    args = [sys.executable, SCRIPT, *paths] + (["--out", os.path.join(d, "out.csv")] if out else [])
    r = subprocess.run(args, capture_output=True, text=True)
    kept = []
    if out and r.returncode == 0:
        with open(os.path.join(d, "out.csv"), newline="") as f:
            kept = list(csv.DictReader(f))
    return r.returncode, r.stdout, r.stderr, kept


# Workload "a": (1, 0) measured 10, 30, 12 -> the 12 row (work-groups 7, from pass 3) is kept whole. (0, 1) measured
# 11, 11.5 and an invalid 1 -> the valid two's lower middle, 11 (pass 1). Pass 1's best is (1, 0) at 10; in pass 2
# (1, 0) took 30 against its best 11.5: scored 0.383. Passes 2 and 3 pick (0, 1).
passes = [
    [row("a", 1, 0, 10, 5), row("a", 0, 1, 11, 0)],
    [row("a", 1, 0, 30, 6), row("a", 0, 1, 11.5, 0)],
    [row("a", 1, 0, 12, 7), row("a", 0, 1, 1, 0, valid="0")],
]
with tempfile.TemporaryDirectory() as d:
    rc, out, err, kept = run(d, passes)
    check(rc == 0, f"exit status {rc}: {err}")
    by = {(r["cpu_util"], r["gpu_util"]): r for r in kept}
    check(len(kept) == 2, f"rows kept: {kept}")
    check(by.get(("1", "0"), {}).get("time_ms_median") == "12" and by[("1", "0")]["cpu_work_groups"] == "7",
          f"(1, 0) kept: {by.get(('1', '0'))}")
    check(by.get(("0", "1"), {}).get("time_ms_median") == "11", f"(0, 1) kept: {by.get(('0', '1'))}")
    check("best of pass 1 scored on pass 2: mean 0.383" in out, "pass 1 on 2:\n" + out)
    check("best of pass 2 scored on pass 1: mean 0.909" in out, "pass 2 on 1 (10 / 11):\n" + out)
    # Pass 3 has no valid (0, 1): it is not whole, so it is scored against no pass and no pass against it.
    check("pass 3 scored" not in out and "scored on pass 3" not in out, "pass 3 not whole:\n" + out)

    # A pass without a column the key needs, and a pass whose columns differ: errors naming the file, nothing written.
    bad = os.path.join(d, "bad.csv")
    write(bad, passes[0], [c for c in COLUMNS if c != "gpu_util"])
    good = os.path.join(d, "pass1.csv")
    r = subprocess.run([sys.executable, SCRIPT, good, bad, "--out", os.path.join(d, "x.csv")], capture_output=True,
                       text=True)
    check(r.returncode == 1 and "bad.csv" in r.stderr and "gpu_util" in r.stderr, f"missing column: {r.stderr}")
    check(not os.path.exists(os.path.join(d, "x.csv")), "written despite the error")
    extra = os.path.join(d, "extra.csv")
    write(extra, passes[1], COLUMNS + ["note"])
    r = subprocess.run([sys.executable, SCRIPT, good, extra], capture_output=True, text=True)
    check(r.returncode == 1 and "extra.csv" in r.stderr and "columns differ" in r.stderr, f"columns: {r.stderr}")
    # A file that is not gzip though named so: an error naming it, not a traceback.
    broken = os.path.join(d, "broken.csv.gz")
    with open(broken, "w") as f:
        f.write("not gzip\n")
    r = subprocess.run([sys.executable, SCRIPT, good, broken], capture_output=True, text=True)
    check(r.returncode == 1 and "broken.csv.gz" in r.stderr and "Traceback" not in r.stderr, f"broken: {r.stderr}")

if failures:
    for f in failures:
        print("FAIL:", f)
    sys.exit(1)
print("median_passes: all checks passed")
