#!/usr/bin/env python3
"""Writes the workload specs (docs/spec.md) of the real-world kernels under kernels/<benchmark>/.

The spec files are committed; this script is how they were made. Re-run it after changing a size or an
initialisation here (`python3 kernels/gen_specs.py`), and commit the result. It removes spec files it no longer
writes. Sizes and the reasoning behind them: docs/kernels.md.
"""
import json
import math
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
GIB = 1 << 30

WG1 = [64, 256]           # Dopia Table 4: 1D kernels
WG2 = [(8, 8), (16, 16)]  # Dopia Table 4: 2D kernels


def rel_tol(terms):
    """Relative tolerance for a float sum of `terms` non-negative products, accumulated in the same order as the
    reference: 16 * sqrt(terms) float epsilons (covers FMA contraction and any summation order with a wide margin),
    at least 1e-5. A wrong element (another row, another column) differs by about 1/sqrt(terms), far above it."""
    t = max(1e-5, 16.0 * math.sqrt(terms) * 2.0 ** -24)
    return float(f"{t:.2g}")


def rand(seed, lo=0.0, hi=1.0):
    return {"fill": "random", "seed": seed, "min": lo, "max": hi}


def buf(name, typ, count, access="read", init=None, output=False):
    a = {"name": name, "kind": "buffer", "type": typ, "count": count, "access": access}
    if output:
        a["output"] = True
    if init is not None:
        a["init"] = init
    return a


def scalar(name, typ, value):
    return {"name": name, "kind": "scalar", "type": typ, "value": value}


def global_1d(n, wg):
    return [-(-n // wg) * wg]


def global_2d(cols, rows, wg):
    return [-(-cols // wg[0]) * wg[0], -(-rows // wg[1]) * wg[1]]


def footprint(args):
    sizes = {"float": 4, "int": 4}
    return sum(a["count"] * sizes[a["type"]] for a in args if a["kind"] == "buffer")


# --------------------------------------------------------------------------------------------------------------
# The kernels: each entry gives its folder, source, benchmark name, dimensionality, its three sizes and a function
# that returns (args, tolerance, name part, extra meta) for one size.
# --------------------------------------------------------------------------------------------------------------


def matvec(kernel, mat_arg, vec_in, vec_out, out_rw=False):
    """1D matrix-vector kernels over an n x n matrix (ATAX, BICG, MVT)."""

    def make(size):
        n = size["n"]
        out_init = rand(3) if out_rw else None
        args = [
            buf(mat_arg, "float", n * n, init=rand(1)),
            buf(vec_in, "float", n, init=rand(2)),
            buf(vec_out, "float", n, access="read_write" if out_rw else "write", init=out_init, output=True),
            scalar("n", "int", n),
        ]
        if kernel.startswith("mvt"):  # mvt(A, x, y, n): the output comes before the input vector
            args[1], args[2] = args[2], args[1]
        return args, {"rel": rel_tol(n), "abs": 1e-6}, f"n{n}", {"n": str(n)}

    return make


def gesummv(size):
    n = size["n"]
    args = [
        buf("A", "float", n * n, init=rand(1)),
        buf("B", "float", n * n, init=rand(2)),
        buf("x", "float", n, init=rand(3)),
        buf("y", "float", n, access="write", output=True),
        scalar("alpha", "float", 1.5),
        scalar("beta", "float", 0.75),
        scalar("n", "int", n),
    ]
    return args, {"rel": rel_tol(n), "abs": 1e-6}, f"n{n}", {"n": str(n)}


def conv2d(size):
    n, m = size["n"], size["m"]
    args = [
        buf("A", "float", n * m, init=rand(1)),
        buf("B", "float", n * m, access="write", output=True),
        scalar("n", "int", n),
        scalar("m", "int", m),
    ]
    # Nine terms of mixed sign: the result can be near zero, hence an absolute part.
    return args, {"rel": 1e-5, "abs": 1e-5}, dims_name(n, m), {"n": str(n), "m": str(m)}


FDTD_STEPS = 64  # length of fict (the source term of each time step)
FDTD_T = 5       # the time step the spec runs


def fdtd(which):
    def make(size):
        nx, ny = size["n"], size["m"]
        cells = nx * ny
        if which == 1:
            args = [
                buf("ey", "float", cells, access="read_write", init=rand(2), output=True),
                buf("hz", "float", cells, init=rand(3)),
                buf("fict", "float", FDTD_STEPS, init=rand(4)),
                scalar("t", "int", FDTD_T),
            ]
        elif which == 2:
            args = [
                buf("ex", "float", cells, access="read_write", init=rand(1), output=True),
                buf("hz", "float", cells, init=rand(3)),
            ]
        else:
            args = [
                buf("hz", "float", cells, access="read_write", init=rand(3), output=True),
                buf("ex", "float", cells, init=rand(1)),
                buf("ey", "float", cells, init=rand(2)),
            ]
        args += [scalar("nx", "int", nx), scalar("ny", "int", ny)]
        return args, {"rel": 1e-5, "abs": 1e-6}, dims_name(nx, ny), {"n": str(nx), "m": str(ny)}

    return make


def gemm(size):
    ni, nj, nk = size["n"], size["m"], size["k"]
    args = [
        buf("A", "float", ni * nk, init=rand(1)),
        buf("B", "float", nk * nj, init=rand(2)),
        buf("C", "float", ni * nj, access="read_write", init=rand(3), output=True),
        scalar("alpha", "float", 1.5),
        scalar("beta", "float", 0.75),
        scalar("ni", "int", ni),
        scalar("nj", "int", nj),
        scalar("nk", "int", nk),
    ]
    name = f"n{ni}" if ni == nj == nk else f"n{ni}x{nj}x{nk}"
    return args, {"rel": rel_tol(nk), "abs": 1e-6}, name, {"n": str(ni), "m": str(nj), "k": str(nk)}


def syr2k(size):
    n, m = size["n"], size["m"]
    args = [
        buf("A", "float", n * m, init=rand(1)),
        buf("B", "float", n * m, init=rand(2)),
        buf("C", "float", n * n, access="read_write", init=rand(3), output=True),
        scalar("alpha", "float", 1.5),
        scalar("beta", "float", 0.75),
        scalar("n", "int", n),
        scalar("m", "int", m),
    ]
    return args, {"rel": rel_tol(2 * m), "abs": 1e-6}, dims_name(n, m), {"n": str(n), "m": str(m)}


def spmv(size):
    n, k = size["n"], size["k"]
    nnz = n * k
    args = [
        buf("rowptr", "int", n + 1, init={"fill": "index", "start": 0, "step": k}),
        buf("col", "int", nnz, init={"fill": "random_index", "seed": 5, "bound": n}),
        buf("val", "float", nnz, init=rand(1)),
        buf("x", "float", n, init=rand(2)),
        buf("y", "float", n, access="write", output=True),
        scalar("n", "int", n),
    ]
    return args, {"rel": rel_tol(k), "abs": 1e-6}, f"n{n}_k{k}", {"n": str(n), "k": str(k), "nnz": str(nnz)}


PAGERANK_D = 0.85


def pagerank(size):
    n, k = size["n"], size["k"]
    nnz = n * k
    args = [
        buf("rowptr", "int", n + 1, init={"fill": "index", "start": 0, "step": k}),
        buf("src", "int", nnz, init={"fill": "random_index", "seed": 6, "bound": n}),
        # Each node is the source of k in-links in expectation (src is uniform over the nodes): the out-degree
        # array holds that expectation, so that the rank mass stays about 1 over iterations.
        buf("outdeg", "int", n, init={"fill": "constant", "value": k}),
        buf("rank", "float", n, init=rand(7, 0.5 / n, 1.5 / n)),
        buf("rank_new", "float", n, access="write", output=True),
        scalar("d", "float", PAGERANK_D),
        scalar("n", "int", n),
    ]
    # Ranks are about 1/n: compare relatively, with an absolute part far below one rank.
    return args, {"rel": rel_tol(k), "abs": 1e-12}, f"n{n}_k{k}", {"n": str(n), "k": str(k), "nnz": str(nnz)}


def dims_name(n, m):
    return f"n{n}" if n == m else f"n{n}x{m}"


# Sizes. small: for the tests on a 2-core machine (not multiples of the work-group sizes, non-square where the kernel
# allows it, so that bounds guards and index order are exercised). paper: Dopia Table 4. large: scaled for current
# machines (docs/kernels.md).
# sweep: sized for characterisation sweeps (every workload x 44 configurations x repeats within the H100 time
# budget): about 64 MiB in the largest buffer, a few ms per run on a 16-core CPU.
MV_SIZES = {"small": {"n": 500}, "sweep": {"n": 4096}, "paper": {"n": 16384}, "large": {"n": 23040}}
CONV_SIZES = {"small": {"n": 250, "m": 190}, "sweep": {"n": 4096, "m": 4096}, "paper": {"n": 8192, "m": 8192},
              "large": {"n": 11584, "m": 11584}}
FDTD_SIZES = {"small": {"n": 250, "m": 190}, "sweep": {"n": 4096, "m": 4096}, "paper": {"n": 16384, "m": 16384},
              "large": {"n": 23040, "m": 23040}}
GEMM_SIZES = {"small": {"n": 100, "m": 90, "k": 110}, "sweep": {"n": 512, "m": 512, "k": 512},
              "paper": {"n": 1024, "m": 1024, "k": 1024}, "large": {"n": 1536, "m": 1536, "k": 1536}}
SYR2K_SIZES = {"small": {"n": 100, "m": 90}, "sweep": {"n": 512, "m": 512}, "paper": {"n": 1024, "m": 1024},
               "large": {"n": 1536, "m": 1536}}
SPMV_SIZES = {"small": {"n": 1000, "k": 32}, "sweep": {"n": 262144, "k": 32}, "paper": {"n": 16384, "k": 16384},
              "large": {"n": 4194304, "k": 64}}
PR_SIZES = {"small": {"n": 1000, "k": 16}, "sweep": {"n": 262144, "k": 32}, "paper": {"n": 16384, "k": 16384},
            "large": {"n": 4194304, "k": 64}}

KERNELS = [
    # (folder, file, kernel, benchmark, dims, sizes, make)
    ("conv2d", "conv2d.cl", "conv2d", "2DCONV", 2, CONV_SIZES, conv2d),
    ("atax", "atax.cl", "atax1", "ATAX1", 1, MV_SIZES, matvec("atax1", "A", "x", "tmp")),
    ("atax", "atax.cl", "atax2", "ATAX2", 1, MV_SIZES, matvec("atax2", "A", "tmp", "y")),
    ("bicg", "bicg.cl", "bicg1", "BICG1", 1, MV_SIZES, matvec("bicg1", "A", "r", "s")),
    ("bicg", "bicg.cl", "bicg2", "BICG2", 1, MV_SIZES, matvec("bicg2", "A", "p", "q")),
    ("fdtd2d", "fdtd2d.cl", "fdtd1", "FDTD1", 2, FDTD_SIZES, fdtd(1)),
    ("fdtd2d", "fdtd2d.cl", "fdtd2", "FDTD2", 2, FDTD_SIZES, fdtd(2)),
    ("fdtd2d", "fdtd2d.cl", "fdtd3", "FDTD3", 2, FDTD_SIZES, fdtd(3)),
    ("gemm", "gemm.cl", "gemm", "GEMM", 2, GEMM_SIZES, gemm),
    ("gesummv", "gesummv.cl", "gesummv", "GESUMMV", 1, MV_SIZES, gesummv),
    ("mvt", "mvt.cl", "mvt1", "MVT1", 1, MV_SIZES, matvec("mvt1", "A", "y1", "x1", out_rw=True)),
    ("mvt", "mvt.cl", "mvt2", "MVT2", 1, MV_SIZES, matvec("mvt2", "A", "y2", "x2", out_rw=True)),
    ("syr2k", "syr2k.cl", "syr2k", "SYR2K", 2, SYR2K_SIZES, syr2k),
    ("spmv", "spmv.cl", "spmv", "SpMV", 1, SPMV_SIZES, spmv),
    ("pagerank", "pagerank.cl", "pagerank", "PageRank", 1, PR_SIZES, pagerank),
]


def launch_rows_cols(kernel, size):
    """(columns, rows) of the 2D launch: dimension 0 runs along a row."""
    if kernel == "syr2k":
        return size["n"], size["n"]
    return size["m"], size["n"]


def launch_items(size):
    return size["n"]


def to_json(spec):
    """One line per top-level field and per argument: diffs stay readable."""
    lines = []
    for key, value in spec.items():
        if key == "args":
            inner = ",\n".join("    " + json.dumps(a) for a in value)
            lines.append(f'  "args": [\n{inner}\n  ]')
        else:
            lines.append(f"  {json.dumps(key)}: {json.dumps(value)}")
    return "{\n" + ",\n".join(lines) + "\n}\n"


def main():
    written = set()
    for folder, cl_file, kernel, bench, dims, sizes, make in KERNELS:
        for size_name, size in sizes.items():
            args, tol, dims_part, meta = make(size)
            wgs = WG2 if dims == 2 else WG1
            for wg in wgs:
                if dims == 2:
                    cols, rows = launch_rows_cols(kernel, size)
                    glob, loc, wg_name = global_2d(cols, rows, wg), list(wg), f"{wg[0]}x{wg[1]}"
                else:
                    n = launch_items(size)
                    glob, loc, wg_name = global_1d(n, wg), [wg], str(wg)
                name = f"{kernel}_{size_name}_{dims_part}_wg{wg_name}"
                fp = footprint(args)
                spec_meta = {"set": "real", "benchmark": bench, "kernel": kernel, "size": size_name, "wg": wg_name,
                             "footprint_bytes": str(fp)}
                spec_meta.update(meta)
                if kernel == "gemm" and size_name == "paper":
                    spec_meta["note"] = ("GEMM is named in Dopia's text but not in its Table 4; 1,024 as for SYR2K")
                big = max(a["count"] * 4 for a in args if a["kind"] == "buffer")
                if big >= GIB:
                    spec_meta["note"] = (f"buffers of {big / GIB:.3g} GiB ({fp / GIB:.3g} GiB in all)"
                                         + ("; Dopia's size" if size_name == "paper" else ""))
                spec = {
                    "format": "dop-spec/1",
                    "name": name,
                    "kernel": {"file": cl_file, "name": kernel, "options": ""},
                    "global": glob,
                    "local": loc,
                    "args": args,
                    "reference": f"kernels:{kernel}",
                    "tolerance": tol,
                    "meta": spec_meta,
                }
                path = os.path.join(HERE, folder, name + ".json")
                with open(path, "w") as f:
                    f.write(to_json(spec))
                written.add(os.path.abspath(path))
    removed = 0
    for folder in sorted({k[0] for k in KERNELS}):
        d = os.path.join(HERE, folder)
        for f in os.listdir(d):
            p = os.path.abspath(os.path.join(d, f))
            if f.endswith(".json") and p not in written:
                os.remove(p)
                removed += 1
    print(f"gen_specs: wrote {len(written)} spec files, removed {removed}", file=sys.stderr)


if __name__ == "__main__":
    main()
