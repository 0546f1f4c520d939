#!/usr/bin/env python3
"""benchmarks/compare_hosts.py on two hosts' rows written here: the first host's best configuration scored on the
second per kind of instance, the corners' time ratios, a model's decisions over the shared instances, and clear
errors for sweeps that share nothing and a missing file."""
import csv
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "..", "benchmarks", "compare_hosts.py")

# (workload, data_on, cpu_util, gpu_util, ms) per host. k_small on the host: A's best (1, 0) takes 2 ms on B, whose
# best is 1 ms (0, 1): 50 %. k_sweep with GPU data: the same best on both, 100 %. only_a is A's alone.
A = [("k_small_n1", "host", 1, 0, 1.0), ("k_small_n1", "host", 0, 1, 2.0), ("k_small_n1", "host", 1, 1, 1.5),
     ("k_sweep_n2", "gpu", 1, 0, 8.0), ("k_sweep_n2", "gpu", 0, 1, 1.0), ("k_sweep_n2", "gpu", 1, 1, 4.0),
     ("only_a_small_n3", "host", 1, 0, 1.0)]
B = [("k_small_n1", "host", 1, 0, 2.0), ("k_small_n1", "host", 0, 1, 1.0), ("k_small_n1", "host", 1, 1, 1.5),
     ("k_sweep_n2", "gpu", 1, 0, 16.0), ("k_sweep_n2", "gpu", 0, 1, 0.5), ("k_sweep_n2", "gpu", 1, 1, 4.0)]
DECISIONS = [{"workload": "k_small_n1", "data_on": "host", "perf": 0.5},
             {"workload": "k_sweep_n2", "data_on": "gpu", "perf": 1.0},
             {"workload": "only_a_small_n3", "data_on": "host", "perf": 0.1}]  # not in both: left out


def write_rows(path, rows):
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["workload", "data_on", "cpu_util", "gpu_util", "time_ms_median", "error"])
        w.writerows([r + ("",) for r in rows])


def run(a_rows, b_rows, evals=()):
    with tempfile.TemporaryDirectory() as d:
        a, b = os.path.join(d, "a.csv"), os.path.join(d, "b.csv")
        write_rows(a, a_rows)
        write_rows(b, b_rows)
        args = [sys.executable, SCRIPT, a, b]
        for i, doc in enumerate(evals):
            p = os.path.join(d, f"eval{i}.json")
            with open(p, "w") as f:
                json.dump(doc, f)
            args += ["--eval", p]
        r = subprocess.run(args, capture_output=True, text=True)
        return r.returncode, r.stdout, r.stderr


failures = []


def check(cond, what):
    if not cond:
        failures.append(what)


rc, out, err = run(A, B, [{"evaluation": {"decisions": DECISIONS}}])
check(rc == 0, f"exit status {rc}: {err}")
rows = {tuple(l.split()[:2]): l.split() for l in out.splitlines()}
check(rows.get(("small", "host"), [])[2:5] == ["1", "50.0%", "50.0%"], "small host:\n" + out)
check(rows.get(("small", "host"), [])[5:] == ["2.00", "0.50", "1.00"], "small host ratios:\n" + out)
check(rows.get(("sweep", "gpu"), [])[2:5] == ["1", "100.0%", "100.0%"], "sweep gpu:\n" + out)
check(rows.get(("sweep", "gpu"), [])[5:] == ["2.00", "0.50", "1.00"], "sweep gpu ratios:\n" + out)
check("2 instances in both" in out and any(l.split()[:3] == ["all", "2", "75.0%"] for l in out.splitlines()),
      "all:\n" + out)
check("2 decisions of instances both hold: mean 75.0 %, geometric mean 70.7 %, worst 50.0 %" in out,
      "eval:\n" + out)
# Nothing shared, and a missing file: said, with a non-zero exit.
rc, out, err = run(A[-1:], B)
check(rc != 0 and "share no instance" in err, f"nothing shared: rc {rc}, {err}")
r = subprocess.run([sys.executable, SCRIPT, "/nonexistent/a.csv", "/nonexistent/b.csv"], capture_output=True, text=True)
check(r.returncode != 0 and "compare_hosts.py:" in r.stderr and "Traceback" not in r.stderr,
      f"missing file: rc {r.returncode}, {r.stderr}")

for f in failures:
    print("FAILED:", f)
sys.exit(1 if failures else 0)
