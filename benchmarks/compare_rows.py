#!/usr/bin/env python3
"""Two sweeps of the same workloads, row by row: how a dataset measured again differs from the one before.

    python3 benchmarks/compare_rows.py OLD.csv[.gz] NEW.csv[.gz]

Per workload: the best time and configuration of each, the ratio of the best times, and over the configurations
both measured, the median new/old ratio of all rows and of the rows in which the CPU ran (their least too). Last,
the median ratio over every shared row and the range of the best-time ratios. docs/models.md, "Large host data
measured again", cites it for `real/real-large-copy.csv.gz` against the file at `cc1da98`.
"""
import csv
import gzip
import statistics
import sys


def load(path):
    opener = gzip.open if path.endswith(".gz") else open
    out = {}
    with opener(path, "rt") as f:
        for r in csv.DictReader(f):
            out.setdefault(r["workload"], {})[(float(r["cpu_util"]), float(r["gpu_util"]))] = float(r["time_ms_median"])
    return out


def main(old_path, new_path):
    old, new = load(old_path), load(new_path)
    every, bests = [], []
    print("%-34s %9s %-12s %9s %-12s %6s %6s %8s %8s" %
          ("workload", "old best", "at", "new best", "at", "best", "rows", "cpu rows", "cpu min"))
    for w in sorted(set(old) & set(new)):
        o, n = old[w], new[w]
        shared = [k for k in n if k in o]
        if not shared:
            continue
        ratios = [n[k] / o[k] for k in shared]
        cpu = [n[k] / o[k] for k in shared if k[0] > 0] or [float("nan")]
        bo, bn = min(o, key=o.get), min(n, key=n.get)
        every += ratios
        bests.append(n[bn] / o[bo])
        print("%-34s %9.1f %-12s %9.1f %-12s %6.2f %6.2f %8.2f %8.2f" %
              (w, o[bo], "%g,%g" % bo, n[bn], "%g,%g" % bn, n[bn] / o[bo], statistics.median(ratios),
               statistics.median(cpu), min(cpu)))
    if every:
        print("every shared row, new/old: median %.2f; best times new/old %.2f .. %.2f over %d workloads" %
              (statistics.median(every), min(bests), max(bests), len(bests)))


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2])
