#!/usr/bin/env python3
"""An evaluation's decisions on the instances of one data place (docs/models.md, "Page-locked host data as a model
input"): mean, geometric mean and worst share of the oracle for the model (Dopia's protocol and leave-one-kernel-out,
the first seed's decisions), for the decision the same model took for each workload's host-data twin applied to this
place's times, and for the constant configurations CPU only, GPU only and both at full share.

    dop train ... --test-set real --json > eval.json
    python3 benchmarks/place_metrics.py eval.json DATA.csv[.gz] [PLACE]

DATA holds the place's rows (e.g. real-paper-pinned.csv.gz); PLACE is its data_on (default pinned).
"""
import csv
import gzip
import json
import math
import sys
from collections import defaultdict


def stats(xs):
    if not xs:
        return "no instances"
    geo = math.exp(sum(math.log(x) for x in xs) / len(xs))
    return "%.1f / %.1f / %.1f %% (n=%d)" % (100 * sum(xs) / len(xs), 100 * geo, 100 * min(xs), len(xs))


def main(argv):
    if len(argv) not in (3, 4):
        sys.exit(__doc__)
    place = argv[3] if len(argv) == 4 else "pinned"
    opener = gzip.open if argv[2].endswith(".gz") else open
    times = defaultdict(dict)
    with opener(argv[2], "rt") as f:
        for r in csv.DictReader(f):
            if r["valid"] == "1" and r["data_on"] == place:
                times[r["workload"]][(float(r["cpu_util"]), float(r["gpu_util"]))] = float(r["time_ms_median"])
    if not times:
        sys.exit(f"{argv[2]}: no valid rows with data_on {place}")
    with open(argv[1]) as f:
        ev = json.load(f)

    def perf(workload, cfg):
        t = times[workload]
        return min(t.values()) / t[cfg]

    def chosen(d):
        return (d["chosen"]["cpu"], d["chosen"]["gpu"])

    print(f"{len(times)} workloads with data_on {place}; mean / geometric mean / worst of the oracle:")
    for part, label in (("test_set", "Dopia's protocol"), ("loko", "leave-one-kernel-out")):
        if part not in ev:
            continue
        decisions = [d for d in ev[part]["decisions"] if d["workload"] in times]
        here = [d for d in decisions if d["data_on"] == place]
        twin = {d["workload"]: d for d in decisions if d["data_on"] == "host"}
        print(f"  {label}, the model: {stats([perf(d['workload'], chosen(d)) for d in here])}")
        print(f"  {label}, its host-data twin's decision: "
              f"{stats([perf(d['workload'], chosen(twin[d['workload']])) for d in here if d['workload'] in twin])}")
    for name, cfg in (("CPU only", (1.0, 0.0)), ("GPU only", (0.0, 1.0)), ("both at full share", (1.0, 1.0))):
        print(f"  constant {name}: {stats([perf(w, cfg) for w in times if cfg in times[w]])}")


if __name__ == "__main__":
    main(sys.argv)
