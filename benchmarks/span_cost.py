#!/usr/bin/env python3
"""Estimated H100-host cost of sweeping the span set, from the model's figures in each spec's meta.

    dop synth emit --all --set span --out /tmp/span && python3 benchmarks/span_cost.py /tmp/span

Per workload the meta holds est_cpu_ms (16 cores) and est_gpu_ms (the whole GPU, copies included); this script
spreads them over the 44 configurations of models/h100-xeon16/platform.json's grid as the real kernels' sweep does
on that host (models/h100-xeon16/real/real-sweep-copy.csv.gz): 4/8/12 of 16 cores 3.2/1.8/1.25x slower, a fraction g
of the GPU 1 + 0.4 (1/g - 1) times slower (3.8x at 1/8), a split 10 % short of the ideal one. A row costs
(repeat + warmup) runs plus 5 ms; a workload adds its setup (0.3 s) and its reference (1e9 term-operations per
second on each of 16 host threads). Not a measurement: the lead times the set on the host.
"""
import glob
import json
import sys

CPU_SLOWDOWN = {0.25: 3.2, 0.5: 1.8, 0.75: 1.25, 1.0: 1.0}
GPU_LEVELS = [i / 8 for i in range(9)]


def config_times(cpu_ms, gpu_ms):
    out = []
    for c in [0.0] + list(CPU_SLOWDOWN):
        for g in GPU_LEVELS:
            if c == 0 and g == 0:
                continue
            tc = cpu_ms * CPU_SLOWDOWN[c] if c else None
            tg = gpu_ms * (1 + 0.4 * (1 / g - 1)) if g else None
            out.append(1.1 / (1 / tc + 1 / tg) if tc and tg else tc or tg)
    return out


def main(folder, repeat=3, warmup=1, sample=12):
    full = sampled = 0.0
    rows = 0
    by_family = {}
    for path in sorted(glob.glob(folder + "/*.json")):
        meta = json.load(open(path))["meta"]
        if meta.get("set") != "span":
            continue
        t = config_times(float(meta["est_cpu_ms"]), float(meta["est_gpu_ms"]))
        terms = float(meta["flops"]) / 2
        setup = 0.3 + terms / (16 * 1e9)
        w_full = setup + sum((repeat + warmup) * x / 1e3 + 0.005 for x in t)
        w_sample = setup + sample * ((repeat + warmup) * sum(t) / len(t) / 1e3 + 0.005)
        full += w_full
        sampled += w_sample
        rows += len(t)
        fam = meta["span_family"] + (meta["radius"] if meta["radius"] != "0" else "")
        by_family[fam] = by_family.get(fam, 0) + w_full
    print(f"rows (full grid): {rows}; rows with {sample} configurations each: {rows // 44 * sample}")
    print(f"full grid, --repeat {repeat} --warmup {warmup}: {full / 60:.1f} min")
    print(f"{sample} configurations per workload: {sampled / 60:.1f} min")
    print("full grid per family (min): " + ", ".join(f"{k} {v / 60:.1f}" for k, v in sorted(by_family.items())))


if __name__ == "__main__":
    main(sys.argv[1])
