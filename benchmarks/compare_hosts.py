#!/usr/bin/env python3
"""Two hosts' sweeps of the same workloads (docs/models.md, "A model on another host"): per kind of instance (the size
in the workload's name, and where the data was), how the first host's best configuration scores on the second (its
time there over the second's best: what any decision learnt on the first can reach on the second) and the geometric
mean time ratio, second over first, at the CPU alone, the GPU alone and both in whole; with --eval, a model's
decisions (dop eval --json, dop train --test-set --json) summarised over the instances both sweeps hold.

    python3 benchmarks/compare_hosts.py models/h100-xeon16/real.csv.gz models/h200-host/real.csv.gz \\
        [--eval A_EVAL.json] [--eval B_EVAL.json]
"""
import argparse
import json
import math
import sys
from collections import defaultdict

from protocol_losses import decisions_of, read_rows

CORNERS = ((1.0, 0.0), (0.0, 1.0), (1.0, 1.0))


def times(path):
    """{(workload, data_on): {(cpu_util, gpu_util): median ms}} of a dataset's rows without an error."""
    out = defaultdict(dict)
    for r in read_rows(path):
        if r.get("error"):
            continue
        out[(r["workload"], r.get("data_on", "host"))][(float(r["cpu_util"]), float(r["gpu_util"]))] = float(
            r["time_ms_median"])
    return out


def kind(instance):
    """(size, data_on) of an instance: the size is the second word of the workload's name (atax1_paper_n16384...)."""
    words = instance[0].split("_")
    return (words[1] if len(words) > 1 else "?", instance[1])


def geomean(xs):
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("first")
    ap.add_argument("second")
    ap.add_argument("--eval", action="append", default=[], help="a model's decisions (JSON); repeatable")
    a = ap.parse_args()
    try:
        first, second = times(a.first), times(a.second)
        evals = [(p, decisions_of(json.load(open(p)))) for p in a.eval]
    except (OSError, ValueError, KeyError) as e:
        sys.exit(f"compare_hosts.py: {e}")
    both = sorted(set(first) & set(second))
    if not both:
        sys.exit(f"compare_hosts.py: {a.first} and {a.second} share no instance (workload and data place)")
    by_kind = defaultdict(list)
    for inst in both:
        by_kind[kind(inst)].append(inst)
    print(f"{len(both)} instances in both; the first's best configuration scored on the second, and time ratios "
          f"second / first (geometric mean)")
    print(f"{'size':8} {'data':5} {'n':>4} {'first best':>10} {'worst':>6} " +
          " ".join(f"{'%g,%g' % c:>6}" for c in CORNERS))
    scores = []
    for k in sorted(by_kind):
        ps, ratios = [], defaultdict(list)
        for inst in by_kind[k]:
            a_t, b_t = first[inst], second[inst]
            a_best = min(a_t, key=a_t.get)
            if a_best in b_t:
                ps.append(min(b_t.values()) / b_t[a_best])
            for c in CORNERS:
                if c in a_t and c in b_t:
                    ratios[c].append(b_t[c] / a_t[c])
        scores += ps
        print(f"{k[0]:8} {k[1]:5} {len(by_kind[k]):4d} {100 * sum(ps) / max(1, len(ps)):9.1f}% "
              f"{100 * min(ps, default=float('nan')):5.1f}% " + " ".join(f"{geomean(ratios[c]):6.2f}" for c in CORNERS))
    print(f"{'all':8} {'':5} {len(both):4d} {100 * sum(scores) / max(1, len(scores)):9.1f}%")
    shared = set(both)
    for path, decisions in evals:
        perf = [d["perf"] for d in decisions if (d["workload"], d["data_on"]) in shared]
        if not perf:
            print(f"{path}: no decision of an instance both sweeps hold")
            continue
        print(f"{path}: {len(perf)} decisions of instances both hold: mean {100 * sum(perf) / len(perf):.1f} %, "
              f"geometric mean {100 * geomean(perf):.1f} %, worst {100 * min(perf):.1f} %")


if __name__ == "__main__":
    main()
