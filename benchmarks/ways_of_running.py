#!/usr/bin/env python3
"""What ran in a sweep dataset's rows, by the work-groups each device ran rather than by the configuration's levels.

A configuration of both devices may run one of them alone: the dynamic distribution gives the GPU's share up when
staging the inputs costs more than the CPU needs for all of them (host data), or the CPU's when its first chunk is
too slow. Such rows run as that device alone at its level does (after what the other did before it gave up), so an
oracle over the configurations takes the least of several draws of much the same way of running. For each file and
data place this prints how many workloads' best row ran both devices (and the median gain of those over the best
row that ran one), and, for rows of one device alone longer than --min-ms, the spread of the repeats inside a row
(time_ms_max / time_ms_min) and, for the CPU, of the medians of the rows that ran it alone at one CPU level, any GPU
level (their largest over their least).

  python3 benchmarks/ways_of_running.py models/h100-xeon16/real.csv.gz [more.csv.gz ...] [--min-ms 5]

Standard library only; reads CSV or gzipped CSV with the dataset columns of docs/dataset.md.
"""
import argparse
import collections
import csv
import statistics
import sys

from protocol_losses import ran, read_rows  # the dataset reader and "which devices ran", beside this script


def rows_of(path):
    return (r for r in read_rows(path) if r.get("valid", "1") == "1")


def median(xs):
    return statistics.median(xs) if xs else float("nan")


def report(path, min_ms, out):
    by_place = collections.defaultdict(lambda: collections.defaultdict(list))
    for r in rows_of(path):
        by_place[r["data_on"]][r["workload"]].append(r)
    out.write(f"== {path}\n")
    for place in sorted(by_place):
        workloads = by_place[place]
        both_best, gains = 0, []
        repeat_spread = collections.defaultdict(list)
        same_way = collections.defaultdict(list)  # (workload, CPU level) -> medians of rows that ran the CPU alone
        for w, rs in workloads.items():
            best = min(rs, key=lambda r: float(r["time_ms_median"]))
            single = [float(r["time_ms_median"]) for r in rs if ran(r) != "CG"]
            if ran(best) == "CG":
                both_best += 1
                if single:
                    gains.append(min(single) / float(best["time_ms_median"]))
            for r in rs:
                cpu = ran(r) == "C"
                t = float(r["time_ms_median"])
                if ran(r) not in ("C", "G") or t < min_ms:
                    continue
                level = float(r["cpu_util"]) if cpu else float(r["gpu_util"])
                repeat_spread["CPU" if cpu else "GPU", level].append(float(r["time_ms_max"]) / float(r["time_ms_min"]))
                if cpu:
                    same_way[w, level].append(t)
        gain = f", median gain over the best row of one device {median(gains):.3f}" if gains else ""
        out.write(f"data on {place}: {len(workloads)} workloads; the best row ran both devices for {both_best}{gain}\n")
        for (dev, level), v in sorted(repeat_spread.items()):
            ways = [max(m) / min(m) for (w, l), m in same_way.items() if dev == "CPU" and l == level and len(m) >= 3]
            line = f"  {dev} alone at {level:g}, rows over {min_ms:g} ms: {len(v)}, repeats' max/min median {median(v):.2f}"
            if ways:
                line += f"; {len(ways)} workloads with 3+ such rows: their medians' max/min median {median(ways):.2f}"
            out.write(line + "\n")


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("datasets", nargs="+")
    p.add_argument("--min-ms", type=float, default=5.0, help="rows shorter than this are left out of the spreads")
    a = p.parse_args(argv)
    for path in a.datasets:
        try:
            report(path, a.min_ms, sys.stdout)
        except (OSError, KeyError, ValueError, csv.Error) as e:
            sys.stderr.write(f"ways_of_running.py: {path}: {e}\n")
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
