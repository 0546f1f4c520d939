#!/usr/bin/env python3
"""Datasets to resume for re-measuring what an engine change alters: the rows on both devices in which the GPU ran
nothing (gpu_work_groups = 0; valid ones only).

    python3 benchmarks/device/rerun_idle_gpu.py OUT_DIR DATASET.csv[.gz]...

writes OUT_DIR/NAME.csv (plain CSV) for each DATASET, without those rows, and prints how many were dropped, of how
many workloads. Put them in .device/data/ under the names the experiment writes (h100.sh realset:
real-SIZE-MEM.csv); the sweep then measures exactly the dropped rows again."""
import csv
import gzip
import os
import sys


def main(argv):
    if len(argv) < 3:
        sys.exit(__doc__)
    out_dir = argv[1]
    os.makedirs(out_dir, exist_ok=True)
    for path in argv[2:]:
        opener = gzip.open if path.endswith(".gz") else open
        with opener(path, "rt", newline="") as f:
            rows = list(csv.reader(f))
        if not rows:
            sys.exit(f"{path}: empty")
        header = rows[0]
        try:
            cpu, gpu, valid, gwg, name = (header.index(c) for c in
                                          ("cpu_util", "gpu_util", "valid", "gpu_work_groups", "workload"))
        except ValueError as e:
            sys.exit(f"{path}: not a dop dataset ({e})")
        keep, dropped = [header], set()
        for line, r in enumerate(rows[1:], start=2):
            if len(r) != len(header):
                sys.exit(f"{path}:{line}: {len(r)} fields, the header has {len(header)}")
            if float(r[cpu]) > 0 and float(r[gpu]) > 0 and r[valid] == "1" and r[gwg] == "0":
                dropped.add((r[name], r[cpu], r[gpu]))
            else:
                keep.append(r)
        base = os.path.basename(path)
        base = base[:-3] if base.endswith(".gz") else base
        with open(os.path.join(out_dir, base), "w", newline="") as f:
            csv.writer(f, lineterminator="\n").writerows(keep)
        print(f"{base}: {len(rows) - 1} rows, {len(dropped)} to measure again "
              f"({len({d[0] for d in dropped})} workloads)")


if __name__ == "__main__":
    main(sys.argv)
