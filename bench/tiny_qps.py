#!/usr/bin/env python3
"""Fixed costs on tiny QPs: impulse one problem at a time against OSQP (set-up + solve),
side by side in one run.

For each n in 2..10: `--count` random feasible, bounded QPs with n variables, one
equality row and 2n inequality rows (P = GᵀG + 0.1·I, A and q Gaussian, b = A x0 + s
with s ≥ 0 on the inequality rows), solved at eps 1e-5 by
- impulse: `solve-batch --lanes off --threads 1 --time-each` (the whole solve, set-up
  and factorization included), best of `--repeat` runs per problem;
- OSQP: one fresh solver per problem, set-up + solve time, best of `--repeat`.
Reported per n: median µs of each, their ratio (OSQP / impulse: > 1 means impulse is
faster), median iterations, and the problems each solved.

  python3 bench/tiny_qps.py --impulse build/impulse [--count 200] [--repeat 3]
"""

import argparse
import datetime
import os
import platform
import statistics
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from anchor_osqp import (REPO, ensure_packages, shown_path, solve_impulse,  # noqa: E402
                         solve_osqp)


def tiny_batch(n, count, seed):
    import numpy as np
    rng = np.random.default_rng(seed)
    nz, nn = 1, 2 * n
    m = nz + nn
    P = np.empty((count, n, n))
    q = rng.standard_normal((count, n))
    A = rng.standard_normal((count, m, n))
    b = np.empty((count, m))
    for k in range(count):
        G = rng.standard_normal((n, n))
        P[k] = G.T @ G + 0.1 * np.eye(n)
        x0 = rng.standard_normal(n)
        s = np.concatenate([np.zeros(nz), np.abs(rng.standard_normal(nn))])
        b[k] = A[k] @ x0 + s
    return dict(cones=np.array([nz, nn, 0], dtype=np.int64), P=P, q=q, A=A, b=b)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--impulse", required=True)
    ap.add_argument("--count", type=int, default=200)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--eps", type=float, default=1e-5)
    ap.add_argument("--no-install", action="store_true")
    ap.add_argument("--out", default=os.path.join(
        REPO, "bench", "results", "tiny_qps_%s.md" % datetime.date.today().isoformat()))
    a = ap.parse_args()
    ensure_packages(not a.no_install)
    import numpy as np
    import osqp
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for n in range(2, 11):
            batch = tiny_batch(n, a.count, 100 + n)
            path = os.path.join(tmp, "tiny%d.npz" % n)
            np.savez(path, **batch)
            imp = solve_impulse(a.impulse, path, os.path.join(tmp, "sol.npz"), a.eps, 4000, a.repeat,
                                lanes=False)
            o = solve_osqp(batch, a.eps, 4000, a.repeat)
            t_i = statistics.median(imp["t_total"])
            t_o = statistics.median(o["t_total"])
            ratio = statistics.median(np.asarray(o["t_total"]) / np.asarray(imp["t_total"]))
            rows.append((n, t_i, t_o, ratio, statistics.median(imp["iters"]),
                         statistics.median(o["iters"]), int(np.sum(imp["solved"])),
                         sum(1 for s in o["status"] if s == "solved")))
            print("n %2d: impulse %.1f us, OSQP %.1f us, median ratio %.2f" % (n, t_i, t_o, ratio), flush=True)
    lines = ["# Tiny QPs: fixed costs, impulse one at a time against OSQP (set-up + solve)\n",
             "Made by `python3 bench/tiny_qps.py --impulse %s --count %d --repeat %d` on %s (%s, "
             "Python %s, OSQP %s); one thread; eps %g; per n, %d random QPs with one equality "
             "and 2n inequality rows. Times are per problem, best of %d runs; the ratio is the "
             "median over problems of OSQP's time / impulse's (> 1: impulse faster)."
             % (shown_path(a.impulse), a.count, a.repeat, platform.machine(), platform.system(),
                platform.python_version(), osqp.__version__, a.eps, a.count, a.repeat), "",
             "| n | impulse µs | OSQP µs (set-up + solve) | OSQP / impulse | impulse it | OSQP it | "
             "impulse solved | OSQP solved |", "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append("| %d | %.1f | %.1f | %.2f | %.0f | %.0f | %d | %d |" % r)
    open(a.out, "w").write("\n".join(lines) + "\n")
    print("wrote %s" % shown_path(a.out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
