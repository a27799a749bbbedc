#!/usr/bin/env python3
"""impulse against OSQP and ProxQP on random QPs of every size (issue 46), side by side.

The problems: `impulse generate --kind random --n N` (P = MM'/n + 0.1 I, Gaussian A, half
the inequality rows active at a known optimum), dense (m = 2n inequality rows) and sparse
(10 % of A's entries, n/4 equality rows and 2n inequality rows), `--count` per size. One
process, one thread for every solver (impulse threads=1), eps 1e-6 absolute and relative
for all; per problem:

  - impulse in lanes (the batch) and one at a time (lanes=False): the batch's time / count;
  - OSQP: setup + solve of each problem (its default settings but the tolerances; the
    sparse matrices built before the clock starts);
  - ProxQP (proxsuite.proxqp.dense): init + solve of each problem;
  - Clarabel at 1e-9 (not timed): the reference objective each solver's is compared with.

It reports microseconds per problem, the ratios, how many problems each solved, the
largest relative objective error against Clarabel, and how many of impulse's lane solves
the interior point finished after an ADMM stall; a table (Markdown) and, where matplotlib
is installed, a figure of time per problem against n (log scales).

  python3 bench/solver_sizes.py --impulse build/impulse --out bench/results/solver_sizes_DATE.md
"""
import argparse
import os
import platform
import subprocess
import sys
import tempfile
import time

import numpy as np

import impulse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from report_util import write_markdown  # noqa: E402


def generated(cli, n, kind, count, seed):
    args = ["--kind", "random", "--n", str(n), "--count", str(count), "--seed", str(seed)]
    if kind == "sparse":
        args += ["--density", "0.1", "--equalities", str(max(1, n // 4))]
    with tempfile.TemporaryDirectory() as d:
        f = os.path.join(d, "b.npz")
        subprocess.run([cli, "generate", *args, "--out", f], check=True, stdout=subprocess.DEVNULL)
        z = np.load(f)
        return z["P"], z["q"], z["A"], z["b"], tuple(int(c) for c in z["cones"])


def timed(fn, repeats):
    best = None
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        dt = time.perf_counter() - t0
        best = dt if best is None or dt < best else best
    return best, out


def run_impulse(P, q, A, b, cones, eps, lanes, repeats):
    t, res = timed(lambda: impulse.solve_qp_batch(P, q, A, b, cones, eps=eps, max_iter=20000, threads=1,
                                                  lanes=lanes), repeats)
    return t, res.objective, res.solved, int((res.ipm_iterations > 0).sum())


def run_osqp(P, q, A, b, cones, eps):
    import osqp
    from scipy import sparse
    nz = cones[0]
    B, m = b.shape
    lo = np.full(m, -np.inf)
    total, obj, ok = 0.0, np.zeros(B), np.zeros(B, bool)
    # the matrices in OSQP's form before the clock starts: its setup and solve are timed
    Ps = [sparse.triu(sparse.csc_matrix(P[k])).tocsc() for k in range(B)]
    As = [sparse.csc_matrix(A[k]) for k in range(B)]
    for k in range(B):
        lk = lo.copy()
        lk[:nz] = b[k, :nz]
        t0 = time.perf_counter()
        s = osqp.OSQP()
        s.setup(Ps[k], q[k], As[k], lk, b[k], eps_abs=eps, eps_rel=eps, verbose=False, max_iter=20000)
        r = s.solve()
        total += time.perf_counter() - t0
        ok[k] = r.info.status_val == 1
        obj[k] = r.info.obj_val
    return total, obj, ok


def run_proxqp(P, q, A, b, cones, eps):
    from proxsuite import proxqp
    nz = cones[0]
    B, m = b.shape
    n = P.shape[1]
    total, obj, ok = 0.0, np.zeros(B), np.zeros(B, bool)
    for k in range(B):
        t0 = time.perf_counter()
        qp = proxqp.dense.QP(n, nz, m - nz)
        qp.settings.eps_abs = eps
        qp.settings.eps_rel = eps
        qp.settings.max_iter = 20000
        qp.init(P[k], q[k], A[k, :nz], b[k, :nz], A[k, nz:], np.full(m - nz, -1e20), b[k, nz:])
        qp.solve()
        total += time.perf_counter() - t0
        ok[k] = qp.results.info.status == proxqp.QPSolverOutput.PROXQP_SOLVED
        x = qp.results.x
        obj[k] = 0.5 * x @ P[k] @ x + q[k] @ x
    return total, obj, ok


def reference(P, q, A, b, cones):
    import clarabel
    from scipy import sparse
    nz = cones[0]
    B, m = b.shape
    out = np.zeros(B)
    st = clarabel.DefaultSettings()
    st.verbose = False
    st.tol_gap_abs = st.tol_gap_rel = st.tol_feas = 1e-9
    for k in range(B):
        cs = ([clarabel.ZeroConeT(nz)] if nz else []) + [clarabel.NonnegativeConeT(m - nz)]
        s = clarabel.DefaultSolver(sparse.triu(sparse.csc_matrix(P[k])).tocsc(), q[k], sparse.csc_matrix(A[k]),
                                   b[k], cs, st)
        out[k] = s.solve().obj_val
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--impulse", required=True, help="the impulse CLI (generates the problems)")
    ap.add_argument("--out", required=True, help="the Markdown table to write (the figure beside it)")
    ap.add_argument("--sizes", default="2,4,8,16,32,64,128,256")
    ap.add_argument("--kinds", default="dense,sparse")
    ap.add_argument("--count", type=int, default=256, help="problems per size (halved above n = 64)")
    ap.add_argument("--eps", type=float, default=1e-6)
    ap.add_argument("--repeats", type=int, default=3, help="impulse's batch solves timed (the best)")
    args = ap.parse_args()
    rows, points = [], {}
    for kind in args.kinds.split(","):
        for n in (int(v) for v in args.sizes.split(",")):
            count = args.count if n <= 64 else max(16, args.count // 2)
            P, q, A, b, cones = generated(args.impulse, n, kind, count, seed=n)
            ref = reference(P, q, A, b, cones)
            cells = {}
            for name, fn in (("impulse lanes", lambda: run_impulse(P, q, A, b, cones, args.eps, True, args.repeats)),
                             ("impulse one at a time",
                              lambda: run_impulse(P, q, A, b, cones, args.eps, False, args.repeats)),
                             ("OSQP", lambda: run_osqp(P, q, A, b, cones, args.eps)),
                             ("ProxQP", lambda: run_proxqp(P, q, A, b, cones, args.eps))):
                r = fn()
                t, obj, ok = r[:3]
                err = np.max(np.abs(obj - ref) / np.maximum(1.0, np.abs(ref)))
                cells[name] = (1e6 * t / count, int(ok.sum()), err, r[3] if len(r) > 3 else None)
                points.setdefault((kind, name), []).append((n, 1e6 * t / count))
            lanes = cells["impulse lanes"][0]
            rows.append(f"| {kind} | {n} | {count} | " + " | ".join(
                f"{cells[k][0]:.1f}" for k in ("impulse lanes", "impulse one at a time", "OSQP", "ProxQP")) +
                f" | {cells['OSQP'][0] / lanes:.2f}x | {cells['ProxQP'][0] / lanes:.2f}x | "
                f"{cells['impulse one at a time'][0] and cells['OSQP'][0] / cells['impulse one at a time'][0]:.2f}x | "
                + " / ".join(str(cells[k][1]) for k in ("impulse lanes", "OSQP", "ProxQP")) +
                f" | {cells['impulse lanes'][2]:.1e} / {cells['OSQP'][2]:.1e} / {cells['ProxQP'][2]:.1e} | "
                f"{cells['impulse lanes'][3]} |")
            print(rows[-1], flush=True)
    lines = [
        "# impulse against OSQP and ProxQP on random QPs of every size",
        "",
        f"`python3 bench/solver_sizes.py --impulse ... --sizes {args.sizes} --count {args.count}`; "
        f"{platform.machine()}, {os.cpu_count()} cores, one thread for every solver, eps {args.eps:g}; "
        f"impulse {impulse.__version__}. Microseconds per problem (impulse: the batch's best of "
        f"{args.repeats} / count; OSQP and ProxQP: setup + solve of each, summed / count).",
        "",
        "| kind | n | problems | impulse lanes µs | impulse one at a time µs | OSQP µs | ProxQP µs | "
        "OSQP / lanes | ProxQP / lanes | OSQP / one at a time | solved (lanes / OSQP / ProxQP) | "
        "largest objective error vs Clarabel 1e-9 (lanes / OSQP / ProxQP) | interior-point finishes (lanes) |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
        *rows,
    ]
    write_markdown(args.out, lines)
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("no matplotlib: the figure is not drawn")
        return
    fig, axes = plt.subplots(1, len(args.kinds.split(",")), figsize=(11, 4.2), squeeze=False)
    for ax, kind in zip(axes[0], args.kinds.split(",")):
        for (k, name), pts in sorted(points.items()):
            if k == kind:
                ax.plot(*zip(*pts), marker="o", label=name)
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("n (variables)")
        ax.set_ylabel("µs per problem")
        ax.set_title(f"{kind} random QPs, eps {args.eps:g}")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend()
    fig.tight_layout()
    fig.savefig(os.path.splitext(args.out)[0] + ".png", dpi=120)


if __name__ == "__main__":
    main()
