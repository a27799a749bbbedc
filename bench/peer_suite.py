#!/usr/bin/env python3
"""The peer suite: small Maros-Meszaros QPs, impulse against OSQP (and ProxQP dense when
it installs), side by side in one run.

The 13 problems of maros_meszaros_small/ under $IMPULSE_DATA, else ../shared/data (impulse
batch files with verified references, README there) are badly scaled and need hundreds to
thousands of ADMM iterations. For each, at one tolerance eps (absolute = relative):
- impulse one problem at a time: `solve-batch --lanes off --threads 1 --time-each`;
- impulse in lane groups: a batch of W copies of the problem (one full group) with
  `--lanes on`, each copy's time its share of the group's;
- OSQP (PyPI): a fresh solver per problem, the same eps and iteration limit, no
  polishing, its defaults otherwise (OSQP >= 1.0 also checks the duality gap);
- ProxQP dense (PyPI proxsuite), when it installs.
Reported per problem: status, iterations (impulse: "(IPM k)" when ADMM stalled and the
interior-point finish took k of them), time (impulse: the whole solve; OSQP set-up +
solve), and the objective's relative error |f - f*| / max(1, |f*|) against the
reference (f includes the problem's constant term). Then the counts within 1e-4 and
the median ratios. Times are measured in this one run, one thread, nothing else
running; compare ratios, not absolute times from different runs.

Usage:
  python3 bench/peer_suite.py --impulse build/impulse [--eps 1e-6] [--repeat 3]
"""
import argparse
import datetime
import json
import os
import platform
import statistics
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from anchor_osqp import (REPO, ensure_packages, run_cmd, shown_path, solve_impulse,  # noqa: E402
                         solve_osqp, solve_proxqp, write_batch)
from report_util import data_root  # noqa: E402

SUITE = os.path.join(data_root(), "maros_meszaros_small")


def lane_width(impulse):
    for line in run_cmd([impulse, "--version"]).splitlines():
        if line.startswith("cpu lanes:"):
            return int(line.split()[2])
    return 8


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--impulse", required=True, help="the impulse binary")
    ap.add_argument("--suite", default=SUITE, help="the folder of the suite")
    ap.add_argument("--eps", type=float, default=1e-6)
    ap.add_argument("--max-iter", type=int, default=4000, help="impulse's default")
    ap.add_argument("--repeat", type=int, default=3, help="best of this many timings")
    ap.add_argument("--no-install", action="store_true", help="do not pip-install the anchors")
    ap.add_argument("--out", default=os.path.join(
        REPO, "bench", "results", "peer_suite_%s.md" % datetime.date.today().isoformat()))
    a = ap.parse_args()
    if not os.path.isdir(a.suite):
        print("peer_suite: skipped: the suite is absent (%s)" % shown_path(a.suite))
        return 0
    have_prox = ensure_packages(not a.no_install)
    import numpy as np
    import osqp

    refs = json.load(open(os.path.join(a.suite, "refs.json")))
    W = lane_width(a.impulse)
    tmp = tempfile.mkdtemp(prefix="peer_suite_")
    rows, summary = [], {"impulse one": [], "impulse lanes": [], "OSQP": [], "ProxQP": []}
    for name in sorted(refs):
        ref = refs[name]
        path = os.path.join(a.suite, name + ".npz")
        with np.load(path) as z:
            batch = {k: z[k] for k in z.files}
        copies = {k: (np.repeat(v, W, axis=0) if k != "cones" else v) for k, v in batch.items()}
        cpath = os.path.join(tmp, name + "_lanes.npz")
        write_batch(copies, cpath)
        P, q = batch["P"][0], batch["q"][0]
        fstar = ref["objective"]
        const = ref.get("constant_r", 0.0)

        def err(x):
            if x is None or not np.all(np.isfinite(x)):
                return float("nan")
            f = 0.5 * x @ P @ x + q @ x + const
            return abs(f - fstar) / max(1.0, abs(fstar))

        res = {}
        one = solve_impulse(a.impulse, path, os.path.join(tmp, "one.npz"), a.eps, a.max_iter,
                            a.repeat, lanes=False)
        res["impulse one"] = (one["status"][0], int(one["iters"][0]), float(one["t_total"][0]),
                              err(one["x"][0]))
        lanes = solve_impulse(a.impulse, cpath, os.path.join(tmp, "lanes.npz"), a.eps, a.max_iter,
                              a.repeat, lanes=True)
        res["impulse lanes"] = (lanes["status"][0], int(lanes["iters"][0]),
                                float(np.median(lanes["t_total"])), err(lanes["x"][0]))
        o = solve_osqp(batch, a.eps, a.max_iter, a.repeat)
        res["OSQP"] = (o["status"][0], int(o["iters"][0]), float(o["t_total"][0]), err(o["x"][0]))
        if have_prox:
            p = solve_proxqp(batch, a.eps, a.max_iter, a.repeat)
            res["ProxQP"] = (p["status"][0], int(p["iters"][0]), float(p["t_total"][0]),
                             err(p["x"][0]))
        n, m = batch["q"].shape[1], batch["b"].shape[1]
        ipm = {"impulse one": int(one["ipm"][0]), "impulse lanes": int(lanes["ipm"][0])}
        rows.append((name, n, m, res, ipm))
        for k, v in res.items():
            summary[k].append(v)
        print("%-9s n %3d m %3d  " % (name, n, m) + "  ".join(
            "%s: %s %d it %.0f us err %.1e" % (k, *v) for k, v in res.items()), flush=True)

    solvers = [k for k in summary if summary[k]]
    lines = ["# Peer suite: small Maros-Meszaros QPs, impulse and its anchors side by side\n",
             "Made by `python3 bench/peer_suite.py --impulse %s --eps %g --repeat %d` on %s "
             "(%s, Python %s, OSQP %s%s); one thread, one run. eps %g (absolute = relative), "
             "iteration limit %d for every solver; impulse lanes: a group of %d copies."
             % (shown_path(a.impulse), a.eps, a.repeat, platform.machine(), platform.system(),
                platform.python_version(), osqp.__version__,
                ", ProxQP dense" if have_prox else "", a.eps, a.max_iter, W), ""]
    head = "| problem | n | m | " + " | ".join(
        "%s status | it | µs | obj. err" % s for s in solvers) + " |"
    lines += [head, "|" + "---|" * (3 + 4 * len(solvers))]
    for name, n, m, res, ipm in rows:
        cells = []
        for s in solvers:
            st, it, t, e = res[s]
            its = "%d (IPM %d)" % (it, ipm[s]) if ipm.get(s, 0) > 0 else "%d" % it
            cells.append("%s | %s | %.0f | %.1e" % (st, its, t, e))
        lines.append("| %s | %d | %d | %s |" % (name, n, m, " | ".join(cells)))
    lines += ["", "| solver | objective within 1e-4 | solved and within 1e-4 | median iterations | median µs | "
              "median iterations / OSQP's | median time / OSQP's |",
              "|---|---|---|---|---|---|---|"]
    osqp_it = [v[1] for v in summary["OSQP"]]
    osqp_t = [v[2] for v in summary["OSQP"]]
    for s in solvers:
        v = summary[s]
        ok = sum(1 for x in v if x[3] == x[3] and x[3] <= 1e-4)
        ok_solved = sum(1 for x in v if x[0] == "solved" and x[3] == x[3] and x[3] <= 1e-4)
        it_ratio = statistics.median(x[1] / max(1, o) for x, o in zip(v, osqp_it))
        t_ratio = statistics.median(x[2] / o for x, o in zip(v, osqp_t))
        lines.append("| %s | %d of %d | %d | %.0f | %.0f | %.2f | %.2f |" % (
            s, ok, len(v), ok_solved, statistics.median(x[1] for x in v), statistics.median(x[2] for x in v),
            it_ratio, t_ratio))
    open(a.out, "w").write("\n".join(lines) + "\n")
    print("\n".join(lines[-len(solvers) - 2:]))
    print("wrote %s" % shown_path(a.out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
