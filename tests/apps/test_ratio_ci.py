#!/usr/bin/env python3
"""CTest apps_ratio_ci: benchmarks/apps/ratio_ci.py on small files written here and on docs/results/apps-h100-run16.json.

    python3 tests/apps/test_ratio_ci.py    (exit 0 when every check passes; each failed check is printed)
"""
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "benchmarks", "apps", "ratio_ci.py")
RUN16 = os.path.join(ROOT, "docs", "results", "apps-h100-run16.json")
failed = []


def check(cond, what):
    print("%s: %s" % ("ok" if cond else "FAIL", what))
    if not cond:
        failed.append(what)


def run(*args):
    return subprocess.run([sys.executable, SCRIPT] + list(args), capture_output=True, text=True)


def entry(app, mode, runs, failures=0):
    return {"app": app, "mode": mode, "kernel_ms": None, "failures": failures, "kernel_ms_runs": runs}


def main():
    with tempfile.TemporaryDirectory(prefix="ratio_ci_") as tmp:
        return checks(tmp)


def checks(tmp):
    gpu = [10.0, 11.0, 12.5, 9.0, 10.5, 13.0, 9.5, 11.5]
    cpu = [x * 3 for x in gpu]
    results = []
    for app, scale in (("a", 1.0), ("b", 0.5)):
        g = [x * scale for x in gpu]
        results += [entry(app, "native-gpu", g), entry(app, "native-cpu", [x * scale for x in cpu]),
                    entry(app, "dop:double", [2 * x for x in g], failures=1 if app == "b" else 0),
                    entry(app, "dop:same", list(g)), entry(app, "dop:few", g[:2]),
                    entry(app, "again:native-gpu", [x * 1.1 for x in g])]
    synth = os.path.join(tmp, "synth.json")
    with open(synth, "w") as f:
        json.dump({"size": "custom", "repeat": 8, "results": results}, f)

    out = os.path.join(tmp, "out.json")
    r = run("--resamples", "2000", "--json", out, synth)
    check(r.returncode == 0, "synthetic file: exit 0 (rc %d, %s)" % (r.returncode, r.stderr.strip()))
    rows = {(x["app"], x["mode"]): x for x in json.load(open(out))["files"][0]["rows"]}
    geo = {x["mode"]: x for x in json.load(open(out))["files"][0]["geomean"]}
    for app in ("a", "b"):
        d, s, few = rows[app, "dop:double"], rows[app, "dop:same"], rows[app, "dop:few"]
        # (1) runs exactly 2x the native's: point 2, the interval holds 2 and lies above the threshold.
        check("%.3f" % d["ratio"] == "2.000", "%s: 2x runs give the point ratio 2.000 (%s)" % (app, d["ratio"]))
        check(d["lower"] <= 2 <= d["upper"], "%s: 2x interval [%.3f, %.3f] holds 2" % (app, d["lower"], d["upper"]))
        check(d["verdict"] == "> 1.05", "%s: 2x verdict is '> 1.05' (%s)" % (app, d["verdict"]))
        # (2) the native's own runs: the interval holds 1.
        check("%.3f" % s["ratio"] == "1.000" and s["lower"] <= 1 <= s["upper"],
              "%s: equal runs give 1.000 in [%.3f, %.3f]" % (app, s["lower"], s["upper"]))
        check(few["lower"] is None and few["verdict"] == "too few runs" and few["ratio"] is not None,
              "%s: 2 runs give a point ratio and 'too few runs'" % app)
    # (2b) run_apps.sh --again's second native run is analysed like a dop mode: 1.1x runs give 1.100.
    check("%.3f" % rows["a", "again:native-gpu"]["ratio"] == "1.100" and "again:native-gpu" in geo,
          "the again: mode is analysed (%s)" % rows.get(("a", "again:native-gpu")))
    g = geo["dop:double"]
    check("%.3f" % g["ratio"] == "2.000" and g["lower"] <= 2 <= g["upper"] and g["verdict"] == "> 1.0",
          "geomean of the 2x mode: 2.000 in [%.3f, %.3f], '> 1.0'" % (g["lower"], g["upper"]))
    check(geo["dop:few"]["verdict"] == "too few runs", "geomean of a mode with too few runs: no interval")
    text = [line.split() for line in r.stdout.splitlines()]
    check(["b", "dop:double", "8", "2.000!"] == next((t[:4] for t in text if t[:2] == ["b", "dop:double"]), None),
          "a row whose runs partly failed is marked '!'")

    # (3) run16: the point ratios are the ratios run_apps.sh wrote, for every dop row.
    r = run("--json", out, RUN16)
    check(r.returncode == 0, "run16: exit 0 (rc %d, %s)" % (r.returncode, r.stderr.strip()))
    mine = {(x["app"], x["mode"]): x["ratio"] for x in json.load(open(out))["files"][0]["rows"]}
    theirs = {(x["app"], x["mode"]): x["ratio"] for x in json.load(open(RUN16))["results"]
              if x["mode"].startswith("dop:")}
    check(len(theirs) == 8 and set(mine) == set(theirs), "run16: one row per dop row of the file (%d)" % len(mine))
    for k in theirs:
        check("%.3f" % mine.get(k, -1) == "%.3f" % theirs[k], "run16 %s: %.3f as in the file" % (k, theirs[k]))

    # (4) bad input: status 2, the file named, no traceback.
    missing = os.path.join(tmp, "missing.json")
    noresults = os.path.join(tmp, "noresults.json")
    invalid = os.path.join(tmp, "invalid.json")
    old = os.path.join(tmp, "old.json")
    with open(noresults, "w") as f:
        json.dump({"size": "small", "repeat": 3}, f)
    with open(invalid, "w") as f:
        f.write("{\"results\": [")
    with open(old, "w") as f:
        json.dump({"results": [{"app": "a", "mode": "native-gpu", "kernel_ms": 1.0, "failures": 0}]}, f)
    for path, what in ((missing, "a missing file"), (noresults, "a file without results"),
                       (invalid, "invalid JSON"), (old, "a file without per-run times")):
        r = run(path)
        check(r.returncode == 2 and path in r.stderr and "Traceback" not in r.stderr,
              "%s: status 2, named on stderr (rc %d: %s)" % (what, r.returncode, r.stderr.strip()))
    r = run(old, synth)
    check(r.returncode == 0 and old in r.stderr and "== " + synth in r.stdout,
          "an old file beside a usable one is skipped with a message")

    # (5) the same seed, the same output; another seed, other intervals.
    a, b, c = run("--seed", "7", RUN16), run("--seed", "7", RUN16), run("--seed", "8", RUN16)
    check(a.returncode == 0 and a.stdout == b.stdout, "the same seed gives identical output")
    check(a.stdout != c.stdout, "another seed gives other intervals")

    print("%d check(s) failed" % len(failed) if failed else "all checks passed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
