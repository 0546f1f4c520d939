#!/usr/bin/env python3
"""Combines passes of one sweep (the same workloads and configurations measured again, in other processes and
sessions) into one dataset of each row's median pass, and says how far the passes agree on what is best.

    python3 benchmarks/median_passes.py [--out OUT.csv] PASS.csv[.gz] PASS.csv[.gz]...

For every (platform, workload, data_on, configuration) the valid rows of the passes that have it are sorted by
time_ms_median and the middle one is kept whole (the lower middle of an even count), so that every column of a kept
row comes from one measurement; a configuration with no valid row keeps the first pass's row. Rows are written in the
first pass's order, then any the first pass lacks. --out writes the combined dataset (a .gz name is gzip-compressed).

Printed: for each ordered pair of passes, the configuration that was best in one, scored in the other (the other's
best time over that configuration's time, mean / geometric mean / least over the workloads both have whole), which is
what a decision that knew one measurement exactly would reach against another; and the rows' spread between passes
(max / min, median and 90th percentile). Standard library only.
"""
import argparse
import csv
import gzip
import math
import statistics
import sys

from protocol_losses import read_rows  # the dataset reader, beside this script

KEY = ("platform_id", "workload", "data_on", "cpu_util", "gpu_util")


class InputError(Exception):
    pass


def read_pass(path):
    """(header, rows) of one pass; each row a dict, in file order (read by protocol_losses.read_rows)."""
    try:
        rows = list(read_rows(path))
    except (OSError, EOFError, csv.Error, UnicodeDecodeError) as e:
        raise InputError(f"{path}: {e}") from e
    if not rows:
        raise InputError(f"{path}: no rows")
    header = list(rows[0].keys())
    missing = [c for c in KEY + ("time_ms_median", "valid") if c not in header]
    if missing:
        raise InputError(f"{path}: no column {', '.join(missing)}")
    return header, rows


def time_of(row):
    """The row's median time when it is a valid measurement, else None."""
    if row.get("valid") != "1":
        return None
    try:
        t = float(row["time_ms_median"])
    except ValueError:
        return None
    return t if math.isfinite(t) and t > 0 else None


def key_of(row):
    return tuple(row[c] for c in KEY)


def combine(passes):
    """The rows of the median pass, keyed as the first pass orders them."""
    by_key = {}
    order = []
    for _, rows in passes:
        for row in rows:
            k = key_of(row)
            if k not in by_key:
                by_key[k] = []
                order.append(k)
            by_key[k].append(row)
    out = []
    for k in order:
        rows = by_key[k]
        valid = sorted((r for r in rows if time_of(r) is not None), key=time_of)
        out.append(valid[(len(valid) - 1) // 2] if valid else rows[0])
    return out


def times_by_workload(rows):
    """{(platform, workload, data_on): {(cpu, gpu): time}} of the valid rows."""
    t = {}
    for r in rows:
        v = time_of(r)
        if v is not None:
            t.setdefault(key_of(r)[:3], {})[key_of(r)[3:]] = v
    return t


def agreement(passes, names):
    """Lines: each pass's best configuration scored in each other pass, and the rows' spread between passes."""
    tables = [times_by_workload(rows) for _, rows in passes]
    lines = []
    for j, a in enumerate(tables):
        for k, b in enumerate(tables):
            if j == k:
                continue
            scores = []
            for w, ta in a.items():
                tb = b.get(w)
                if not tb or set(ta) != set(tb):
                    continue
                best_a = min(ta, key=ta.get)
                scores.append(min(tb.values()) / tb[best_a])
            if scores:
                lines.append(f"best of {names[j]} scored on {names[k]}: mean {statistics.mean(scores):.3f}, geometric "
                             f"mean {statistics.geometric_mean(scores):.3f}, least {min(scores):.3f} "
                             f"({len(scores)} workloads)")
    spread = []
    for w, t0 in tables[0].items():
        for c in t0:
            vals = [t[w][c] for t in tables if w in t and c in t[w]]
            if len(vals) > 1:
                spread.append(max(vals) / min(vals))
    if len(spread) >= 10:
        lines.append(f"rows' max / min between passes: median {statistics.median(spread):.3f}, 90th percentile "
                     f"{statistics.quantiles(spread, n=10)[8]:.3f} ({len(spread)} rows)")
    return lines


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("passes", nargs="+", metavar="PASS")
    ap.add_argument("--out")
    args = ap.parse_args(argv)
    if len(args.passes) < 2:
        ap.error("give at least two passes")
    try:
        passes = [read_pass(p) for p in args.passes]
    except InputError as e:
        print(f"median_passes.py: {e}", file=sys.stderr)
        return 1
    header = passes[0][0]
    for path, (h, _) in zip(args.passes[1:], passes[1:]):
        if h != header:
            print(f"median_passes.py: {path}: its columns differ from {args.passes[0]}'s", file=sys.stderr)
            return 1
    names = [f"pass {i + 1}" for i in range(len(passes))]
    for n, p in zip(names, args.passes):
        print(f"{n}: {p}")
    for line in agreement(passes, names):
        print(line)
    if args.out:
        rows = combine(passes)
        opener = gzip.open if args.out.endswith(".gz") else open
        with opener(args.out, "wt", newline="") as f:
            w = csv.DictWriter(f, fieldnames=header, lineterminator="\n")
            w.writeheader()
            w.writerows(rows)
        print(f"wrote {len(rows)} rows, each its configuration's median pass, to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
