#!/usr/bin/env python3
"""What a dataset's mixed configurations ran (docs/models.md, "What the oracle's mixed configurations are"):
how many complete instances a mixed configuration wins, in how many of those one device ran every work-group, how
(1, x) with an idle GPU compares with (1, 0) row by row, and how the best of those compares with (1, 0).

    python3 benchmarks/idle_device.py models/h100-xeon16/real.csv.gz
"""
import csv
import gzip
import statistics
import sys
from collections import defaultdict


def main(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        rows = [r for r in csv.DictReader(f) if r["valid"] == "1"]
    by = defaultdict(dict)
    for r in rows:
        by[(r["workload"], r.get("data_on", "host"))][(float(r["cpu_util"]), float(r["gpu_util"]))] = r
    grid = max(len(d) for d in by.values())
    ms = lambda r: float(r["time_ms_median"])
    idle_gpu = lambda r: int(r["gpu_work_groups"]) == 0
    complete = mixed = one_device = 0
    best_vs_cpu = []
    for d in by.values():
        if len(d) < grid:
            continue
        complete += 1
        best = min(d.values(), key=ms)
        if float(best["cpu_util"]) > 0 and float(best["gpu_util"]) > 0:
            mixed += 1
            if idle_gpu(best) or int(best["cpu_work_groups"]) == 0:
                one_device += 1
                if idle_gpu(best) and (1.0, 0.0) in d:
                    best_vs_cpu.append(ms(best) / ms(d[(1.0, 0.0)]))
    per_row = [ms(r) / ms(d[(1.0, 0.0)]) for d in by.values() if (1.0, 0.0) in d
               for (c, g), r in d.items() if c == 1.0 and g > 0 and idle_gpu(r)]
    print(f"{path}: {complete} complete instances; a mixed configuration is best for {mixed}, "
          f"one device ran every work-group in {one_device}")
    q = statistics.quantiles(per_row, n=4)
    print(f"(1, x) with the GPU idle / (1, 0), per row: median {q[1]:.2f}, quartiles {q[0]:.2f} and {q[2]:.2f} "
          f"({len(per_row)} rows)")
    print(f"the best such row / (1, 0), per instance whose best ran the CPU alone: median "
          f"{statistics.median(best_vs_cpu):.2f} ({len(best_vs_cpu)} instances)")


if __name__ == "__main__":
    main(sys.argv[1])
