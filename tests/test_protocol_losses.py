#!/usr/bin/env python3
"""benchmarks/protocol_losses.py on decisions and rows written here: the groups by data place and by which devices
ran in the chosen and the best rows, their shares of the lost performance, the fewer-cores line, and clear errors for
a JSON without decisions and a missing file."""
import csv
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "..", "benchmarks", "protocol_losses.py")

# Rows: (workload, data_on, cpu_util, gpu_util, cpu_work_groups, gpu_work_groups).
ROWS = [
    ("a", "host", 0.75, 0, 8, 0),
    ("a", "host", 1, 0, 8, 0),
    ("a", "host", 1, 0.5, 8, 0),  # a configuration of both levels that ran the CPU alone
    ("b", "host", 0, 1, 0, 8),
    ("b", "host", 1, 0, 8, 0),
    ("c", "gpu", 0, 1, 0, 8),
    ("c", "gpu", 0.5, 0.5, 4, 4),
]


def decision(w, place, chosen, best, perf):
    return {"workload": w, "data_on": place, "perf": perf, "chosen": {"cpu": chosen[0], "gpu": chosen[1]},
            "best": {"cpu": best[0], "gpu": best[1]}}


# a: 12 cores chosen, the best (1, 0.5) ran the CPU alone: "C C", fewer cores, 0.8. b: the GPU chosen where the CPU
# was best: "G C", 0.5. c: both chosen, the GPU alone best: "CG G", 0.9. Lost: 0.2 + 0.5 + 0.1 = 0.8 of 3 decisions.
DECISIONS = [decision("a", "host", (0.75, 0), (1, 0.5), 0.8), decision("b", "host", (0, 1), (1, 0), 0.5),
             decision("c", "gpu", (0.5, 0.5), (0, 1), 0.9)]


def run(doc, rows=ROWS, data_name="real.csv"):
    with tempfile.TemporaryDirectory() as d:
        ev, data = os.path.join(d, "eval.json"), os.path.join(d, data_name)
        with open(ev, "w") as f:
            json.dump(doc, f)
        with open(data, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["workload", "data_on", "cpu_util", "gpu_util", "cpu_work_groups", "gpu_work_groups"])
            w.writerows(rows)
        r = subprocess.run([sys.executable, SCRIPT, ev, data], capture_output=True, text=True)
        return r.returncode, r.stdout, r.stderr


failures = []


def check(cond, what):
    if not cond:
        failures.append(what)


rc, out, err = run({"test_set": {"decisions": DECISIONS}})
check(rc == 0, f"exit status {rc}: {err}")
check("3 decisions, mean 73.3 %, lost 26.7 points of the mean" in out, "summary:\n" + out)
lines = [l.split() for l in out.splitlines()]
# The groups, the largest loss first: host G C (0.5 of 3: 16.7 points), host C C (6.7), gpu CG G (3.3).
groups = [l[:3] + l[-1:] for l in lines if len(l) == 7 and l[0] in ("host", "gpu")]
check(groups == [["host", "G", "C", "16.7"], ["host", "C", "C", "6.7"], ["gpu", "CG", "G", "3.3"]],
      f"groups: {groups}\n{out}")
check("host data, the CPU alone in both: 1 of 1 chose fewer cores than the best (mean perf 80.0 %), the rest 0.0 %"
      in out, "fewer cores:\n" + out)
# A decision whose chosen row is not in the dataset (c's (0.5, 0.5)): its way is "?", not a crash.
rc, out, err = run({"test_set": {"decisions": DECISIONS}}, rows=ROWS[:-1])
check(rc == 0 and any(l[:3] == ["gpu", "?", "G"] for l in (x.split() for x in out.splitlines())),
      f"missing row: rc {rc}\n{out}{err}")
# No decisions in the JSON, and a missing dataset: the script says why and exits non-zero.
rc, out, err = run({"test_set": {"folds": 1}})
check(rc != 0 and "no decisions" in err, f"no decisions: rc {rc}, {err}")
with tempfile.TemporaryDirectory() as d:
    ev = os.path.join(d, "eval.json")
    with open(ev, "w") as f:
        json.dump({"test_set": {"decisions": DECISIONS}}, f)
    r = subprocess.run([sys.executable, SCRIPT, ev, "/nonexistent/real.csv"], capture_output=True, text=True)
check(r.returncode != 0 and "/nonexistent/real.csv" in r.stderr, f"missing file: rc {r.returncode}, {r.stderr}")

if failures:
    for f in failures:
        print("FAIL:", f)
    sys.exit(1)
print("protocol_losses: all checks passed")
