#!/usr/bin/env python3
"""benchmarks/ways_of_running.py on a small dataset written here: which rows count as both devices, the gain of a
best row that ran both, the spreads of repeats and of the rows of one way of running, and a clear error for a file
that lacks the columns."""
import csv
import io
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "..", "benchmarks", "ways_of_running.py")
COLUMNS = ["workload", "data_on", "cpu_util", "gpu_util", "time_ms_median", "time_ms_min", "time_ms_max",
           "cpu_work_groups", "gpu_work_groups", "valid"]


def row(w, place, c, g, med, lo, hi, cwg, gwg, valid="1"):
    return dict(zip(COLUMNS, [w, place, c, g, med, lo, hi, cwg, gwg, valid]))


def run(rows, *args):
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "data.csv")
        with open(path, "w", newline="") as f:
            wr = csv.DictWriter(f, fieldnames=list(rows[0].keys()))
            wr.writeheader()
            wr.writerows(rows)
        r = subprocess.run([sys.executable, SCRIPT, path, *args], capture_output=True, text=True)
        return r.returncode, r.stdout, r.stderr


failures = []


def check(cond, what):
    if not cond:
        failures.append(what)


# "a": its best row is (1, 0.5), which ran the CPU alone: one device, whatever its levels say. Three rows ran the CPU
# alone at level 1 (medians 10, 12, 15: their largest over their least 1.5). "b": its best row ran both devices, 8 ms
# against 10 for the best row of one device (gain 1.25). An invalid row of 1 ms is not read.
rows = [
    row("a", "host", 1, 0, 12, 11, 13.2, 64, 0),
    row("a", "host", 1, 0.5, 10, 10, 11, 64, 0),
    row("a", "host", 1, 1, 15, 15, 16.5, 64, 0),
    row("a", "host", 0, 1, 20, 20, 20, 0, 64),
    row("b", "host", 1, 0, 10, 10, 10, 64, 0),
    row("b", "host", 0.5, 0.5, 8, 8, 8, 30, 34),
    row("b", "host", 0, 1, 30, 30, 30, 0, 64),
    row("b", "host", 0.5, 1, 1, 1, 1, 30, 34, valid="0"),
    row("c", "gpu", 0, 1, 2, 2, 2, 0, 8),
]
rc, out, err = run(rows)
check(rc == 0, f"exit status {rc}: {err}")
check("data on host: 2 workloads; the best row ran both devices for 1, median gain over the best row of one device 1.250"
      in out, "host line:\n" + out)
check("data on gpu: 1 workloads; the best row ran both devices for 0" in out, "gpu line:\n" + out)
# CPU alone at 1, rows over 5 ms: a's three and b's one; repeats' max/min 1.2, 1.1, 1.1, 1.0: median 1.10; a has
# three such rows (15 / 10 = 1.50).
check("CPU alone at 1, rows over 5 ms: 4, repeats' max/min median 1.10; 1 workloads with 3+ such rows: their medians'"
      " max/min median 1.50" in out, "CPU line:\n" + out)
# --min-ms 12 leaves a's 10 and b's 10 out (and the 2 ms GPU row always).
rc, out, err = run(rows, "--min-ms", "12")
check("CPU alone at 1, rows over 12 ms: 2," in out, "--min-ms:\n" + out)
check("GPU alone at 1, rows over 12 ms: 2," in out, "--min-ms GPU:\n" + out)
# A file without the work-group columns: a clear error naming the file and the column.
rc, out, err = run([{k: v for k, v in r.items() if k != "gpu_work_groups"} for r in rows])
check(rc == 1 and "data.csv" in err and "gpu_work_groups" in err, f"missing column: rc {rc}, {err}")

if failures:
    for f in failures:
        print("FAIL:", f)
    sys.exit(1)
print("ways_of_running: all checks passed")
