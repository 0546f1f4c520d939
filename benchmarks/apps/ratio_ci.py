#!/usr/bin/env python3
"""Bootstrap intervals of each dop mode's kernel_ms ratio to the best native device, from run_apps.sh --json files.

    python3 benchmarks/apps/ratio_ci.py [--threshold 1.05] [--level 0.90] [--resamples 10000] [--seed 1]
                                        [--json OUT] FILE.json...

For every application and every mode `dop:*` or `again:*` (run_apps.sh --again's second native run: the A/A
calibration) of each file (each file on its own, never pooled): the ratio of the mode's median kernel_ms to the best native device's (the lower median of native-gpu and native-cpu, as run_apps.sh
computes it), and a percentile bootstrap interval at --level: each resample draws every mode's runs and each native
device's runs with replacement, independently, takes their medians, the lower native median as the best, and their
ratio. Verdict: "<= T" when the upper bound is at most T (--threshold), "> T" when the lower bound is above it, else
"undecided". Per mode, the geometric mean of the applications' ratios, its interval from the same resamples (the
geometric mean of each resample's ratios) and a verdict against 1.0. A mode or native device with fewer than 3 runs
gets its point ratio and "too few runs"; "!" marks a row whose runs partly failed. Standard library only.
"""
import argparse
import json
import math
import random
import statistics
import sys

NATIVES = ("native-gpu", "native-cpu")
MIN_RUNS = 3


class InputError(Exception):
    pass


def load(path):
    """The file's results, or InputError naming the file."""
    try:
        with open(path) as f:
            data = json.load(f)
    except OSError as e:
        raise InputError("%s: cannot read: %s" % (path, e.strerror or e))
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise InputError("%s: not valid JSON: %s" % (path, e))
    if not isinstance(data, dict) or not isinstance(data.get("results"), list):
        raise InputError('%s: no "results" list (not a run_apps.sh --json file)' % path)
    return data


def quantile(sorted_values, q):
    """Linear interpolation between order statistics (numpy's default)."""
    pos = q * (len(sorted_values) - 1)
    lo = math.floor(pos)
    hi = min(lo + 1, len(sorted_values) - 1)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (pos - lo)


def verdict(lower, upper, threshold):
    if upper <= threshold:
        return "<= %s" % threshold
    if lower > threshold:
        return "> %s" % threshold
    return "undecided"


def analyse(data, args):
    """Rows (app, mode) and geometric means per mode of one file's results."""
    runs, failures, apps, modes = {}, {}, [], []
    for r in data["results"]:
        app, mode = r["app"], r["mode"]
        runs[app, mode] = [float(x) for x in r["kernel_ms_runs"]]
        failures[app, mode] = int(r.get("failures") or 0)
        if app not in apps:
            apps.append(app)
        if mode.startswith(("dop:", "again:")) and mode not in modes:
            modes.append(mode)

    def best_native(app, pick):
        medians = [statistics.median(pick(runs[app, n])) for n in NATIVES if runs.get((app, n))]
        return min(medians) if medians else None

    rows = []
    for app in apps:
        natives = [runs[app, n] for n in NATIVES if runs.get((app, n))]
        best = best_native(app, lambda xs: xs)
        for mode in modes:
            if (app, mode) not in runs:
                continue
            xs = runs[app, mode]
            row = {"app": app, "mode": mode, "runs": len(xs), "ratio": None, "lower": None, "upper": None,
                   "verdict": None, "failures": failures[app, mode]}
            if not xs:
                row["verdict"] = "no runs"
            elif best is None:
                row["verdict"] = "no native runs"
            else:
                row["ratio"] = statistics.median(xs) / best
                if min(len(v) for v in natives + [xs]) < MIN_RUNS:
                    row["verdict"] = "too few runs"
            rows.append(row)

    # One resampling loop for every row, so that each iteration's per-app ratios also give that iteration's
    # geometric means. Within an iteration an app's native runs are drawn once, for all of its modes.
    boot = [r for r in rows if r["verdict"] is None]
    samples = {(r["app"], r["mode"]): [] for r in boot}
    rng = random.Random(args.seed)
    draw = lambda xs: rng.choices(xs, k=len(xs))
    boot_apps = [a for a in apps if any(r["app"] == a for r in boot)]
    for _ in range(args.resamples):
        for app in boot_apps:
            best = best_native(app, draw)
            for mode in modes:
                if (app, mode) in samples:
                    samples[app, mode].append(statistics.median(draw(runs[app, mode])) / best)
    lo_q, hi_q = (1 - args.level) / 2, (1 + args.level) / 2
    for r in boot:
        s = sorted(samples[r["app"], r["mode"]])
        r["lower"], r["upper"] = quantile(s, lo_q), quantile(s, hi_q)
        r["verdict"] = verdict(r["lower"], r["upper"], args.threshold)

    geomean = []
    for mode in modes:
        mine = [r for r in rows if r["mode"] == mode and r["ratio"] is not None]
        if not mine:
            continue
        g = {"mode": mode, "apps": len(mine), "ratio": math.exp(sum(math.log(r["ratio"]) for r in mine) / len(mine)),
             "lower": None, "upper": None, "verdict": "too few runs"}
        if all((r["app"], mode) in samples for r in mine):
            series = [samples[r["app"], mode] for r in mine]
            s = sorted(math.exp(sum(math.log(x) for x in xs) / len(xs)) for xs in zip(*series))
            g["lower"], g["upper"] = quantile(s, lo_q), quantile(s, hi_q)
            g["verdict"] = verdict(g["lower"], g["upper"], 1.0)
        geomean.append(g)
    return rows, geomean


def fmt(x):
    return "-" if x is None else "%.3f" % x


def print_file(path, data, rows, geomean, args):
    print("== %s: size %s, %s runs a mode; ratio = median kernel_ms / best native's; %g%% bootstrap interval "
          "(%d resamples, seed %d) ==" % (path, data.get("size", "?"), data.get("repeat", "?"), 100 * args.level,
                                          args.resamples, args.seed))
    table = [("app", "mode", "runs", "ratio", "lower", "upper", "verdict")]
    for r in rows:
        table.append((r["app"], r["mode"], str(r["runs"]), fmt(r["ratio"]) + ("!" if r["failures"] else ""),
                      fmt(r["lower"]), fmt(r["upper"]), r["verdict"]))
    for g in geomean:
        table.append(("geomean (%d apps)" % g["apps"], g["mode"], "", fmt(g["ratio"]), fmt(g["lower"]),
                      fmt(g["upper"]), g["verdict"]))
    widths = [max(len(line[i]) for line in table) for i in range(6)]
    for line in table:
        cells = [line[0].ljust(widths[0]), line[1].ljust(widths[1])]
        cells += [c.rjust(w) for c, w in zip(line[2:6], widths[2:6])]
        print("  ".join(cells + [line[6]]))
    if any(r["failures"] for r in rows):
        print("! = some of the mode's runs failed (its median is of the runs that passed)")
    print()


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--threshold", type=float, default=1.05, help="verdict threshold of a row's ratio (default 1.05)")
    p.add_argument("--level", type=float, default=0.90, help="confidence level of the intervals (default 0.90)")
    p.add_argument("--resamples", type=int, default=10000, help="bootstrap resamples (default 10000)")
    p.add_argument("--seed", type=int, default=1, help="random seed (default 1)")
    p.add_argument("--json", metavar="OUT", help="also write the results as JSON to OUT")
    p.add_argument("files", nargs="+", metavar="FILE.json", help="run_apps.sh --json output")
    args = p.parse_args(argv)
    if not 0 < args.level < 1 or args.resamples < 1:
        p.error("--level must lie between 0 and 1 and --resamples be at least 1")

    try:
        loaded = [(path, load(path)) for path in args.files]
    except InputError as e:
        print("ratio_ci.py: %s" % e, file=sys.stderr)
        return 2
    out = {"threshold": args.threshold, "level": args.level, "files": []}
    for path, data in loaded:
        if not all(isinstance(r, dict) and "kernel_ms_runs" in r for r in data["results"]):
            print("ratio_ci.py: %s: no per-run times (kernel_ms_runs; an older run_apps.sh), skipped" % path,
                  file=sys.stderr)
            continue
        try:
            rows, geomean = analyse(data, args)
        except (KeyError, TypeError, ValueError) as e:
            print("ratio_ci.py: %s: malformed results (%s: %s)" % (path, type(e).__name__, e), file=sys.stderr)
            return 2
        print_file(path, data, rows, geomean, args)
        out["files"].append({"file": path, "rows": rows, "geomean": geomean})
    if not out["files"]:
        print("ratio_ci.py: no usable file (none has per-run times)", file=sys.stderr)
        return 2
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)
            f.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
