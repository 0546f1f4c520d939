#!/usr/bin/env python3
"""Where a model's lost performance on the real set comes from (docs/models.md, "The decision's mixing margin"): the
decisions of `dop train ... --test-set real --json` (or `dop eval --json`) grouped by where the data was and by the
way the chosen and the best configurations ran (C: only the CPU ran work-groups, G: only the GPU, CG: both; from the
dataset's cpu_work_groups and gpu_work_groups), with each group's count, mean normalised performance and share of
the lost performance; then, for the host-data decisions that ran the CPU alone where the best did too, how often the
model chose fewer cores than the best.

    dop train all.csv ... --test-set real --cv 0 --no-loko --json > eval.json
    python3 benchmarks/protocol_losses.py eval.json models/h100-xeon16/real.csv.gz
"""
import csv
import gzip
import json
import sys
from collections import defaultdict


def read_rows(path):
    """The rows of a sweep dataset, CSV or gzipped CSV (docs/dataset.md), as dicts."""
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", newline="") as f:
        yield from csv.DictReader(f)


def ran(row):
    """Which devices ran work-groups in a dataset row: "C", "G", "CG" or "" (none)."""
    return ("C" if int(row["cpu_work_groups"]) > 0 else "") + ("G" if int(row["gpu_work_groups"]) > 0 else "")


def load_rows(path):
    rows = {}
    for r in read_rows(path):
        key = (r["workload"], r.get("data_on", "host"), float(r["cpu_util"]), float(r["gpu_util"]))
        rows[key] = r
    return rows


def decisions_of(doc):
    for section in ("test_set", "evaluation", "loko", "cv"):
        if isinstance(doc.get(section), dict) and "decisions" in doc[section]:
            return doc[section]["decisions"]
    raise ValueError("no decisions (run dop train with --test-set and --json, or dop eval --json)")


def way(rows, d, which):
    r = rows.get((d["workload"], d["data_on"], d[which]["cpu"], d[which]["gpu"]))
    return "?" if r is None else ran(r)


def main(eval_path, data_path):
    try:
        with open(eval_path) as f:
            decisions = decisions_of(json.load(f))
        rows = load_rows(data_path)
    except (OSError, ValueError, KeyError) as e:
        sys.exit(f"protocol_losses.py: {e}")
    groups = defaultdict(list)
    for d in decisions:
        groups[(d["data_on"], way(rows, d, "chosen"), way(rows, d, "best"))].append(d)
    lost = sum(1 - d["perf"] for d in decisions)
    n = len(decisions)
    mean = sum(d["perf"] for d in decisions) / n if n else float("nan")
    print(f"{n} decisions, mean {100 * mean:.1f} %, lost {100 * lost / n:.1f} points of the mean")
    print(f"{'data':6} {'chosen ran':10} {'best ran':8} {'n':>4} {'mean perf':>9} {'points lost':>11}")
    for (data_on, chosen, best), ds in sorted(groups.items(), key=lambda kv: -sum(1 - d["perf"] for d in kv[1])):
        loss = sum(1 - d["perf"] for d in ds)
        print(f"{data_on:6} {chosen:10} {best:8} {len(ds):4d} {100 * sum(d['perf'] for d in ds) / len(ds):8.1f} %"
              f" {100 * loss / n:11.1f}")
    cpu_alone = groups.get(("host", "C", "C"), [])
    if cpu_alone:
        fewer = [d for d in cpu_alone if d["chosen"]["cpu"] < d["best"]["cpu"]]
        rest = [d for d in cpu_alone if d["chosen"]["cpu"] >= d["best"]["cpu"]]
        mean_of = lambda ds: 100 * sum(d["perf"] for d in ds) / max(1, len(ds))
        print(f"host data, the CPU alone in both: {len(fewer)} of {len(cpu_alone)} chose fewer cores than the best "
              f"(mean perf {mean_of(fewer):.1f} %), the rest {mean_of(rest):.1f} %")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2])
