#!/usr/bin/env python3
"""impulse.torch.ConicQP against the differentiable QP layers users have, side by side.

One process, one CPU thread (torch.set_num_threads(1), impulse threads=1), the same
problems for every layer:

  - the cube's ContactNets loss QP with the octagon friction model (n = 32, m = 88,
    nonnegative rows), from `impulse generate --kind cube-loss-octagon`;
  - the exact-cone one (n = 32, m = 48, 8 second-order cones; only the layers that
    take cones: impulse, cvxpylayers);
  - random strictly convex QPs with inequality rows, n = 8, 32, 64 (m = n).

For each layer and batch size B: the forward pass and forward + backward (the loss
sum(w * x) with fixed weights w), the median of repeats; a cell is skipped once the
layer's previous size took over --cap seconds. The gradient of q from each peer is
compared with impulse's (largest difference relative to the largest entry). The
peers: qpth (QPFunction), proxsuite.torch (QPFunction), cvxpylayers (CvxpyLayer, one
layer per shape, batched parameters); a peer that does not import is named and left
out. Also the binding's own cost: solve_qp_batch against the CLI's in-process solve
(`impulse solve-batch` prints it) at B = 1,000.

  python3 bench/torch_layers.py --impulse build/impulse --out bench/results/torch_layers_DATE.md
"""
import argparse
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np
import torch

import impulse
import impulse.torch as it

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from report_util import write_markdown  # noqa: E402

torch.set_num_threads(1)


def timed(fn, min_total=0.5, max_runs=7):
    """median seconds of fn(): at least 3 runs, or one where a run takes over a second"""
    times = []
    while (len(times) < 3 and sum(times) < 1.0) or (sum(times) < min_total and len(times) < max_runs):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def generated(cli, kind, B, seed=1):
    with tempfile.TemporaryDirectory() as d:
        f = os.path.join(d, "b.qpb")
        subprocess.run([cli, "generate", "--kind", kind, "--count", str(B), "--seed", str(seed), "--out", f],
                       check=True, stdout=subprocess.DEVNULL)
        z = np.load(f)
        return z["P"], z["q"], z["A"], z["b"], tuple(int(c) for c in z["cones"])


def random_qps(B, n, seed=0):
    rng = np.random.default_rng(seed)
    M = rng.standard_normal((B, n, n))
    P = M @ M.transpose(0, 2, 1) / n + 0.1 * np.eye(n)
    q = rng.standard_normal((B, n))
    A = rng.standard_normal((B, n, n))
    b = rng.uniform(0.1, 1.0, (B, n))
    return P, q, A, b, (0, n, 0)


# ---- the layers: each a function (P, q, A, b tensors, cones) -> x, for nonnegative rows A x <= b
def impulse_layer(cones, eps):
    layer = it.ConicQP(cones, eps=eps, threads=1)
    run = lambda P, q, A, b: layer(P, q, A, b)[0]  # noqa: E731
    run.last_of = layer
    return run


def qpth_layer(cones, eps):
    from qpth.qp import QPFunction
    e = torch.empty(0, dtype=torch.float64)
    fn = QPFunction(verbose=-1, eps=eps, maxIter=50)
    return lambda P, q, A, b: fn(P, q, A, b, e, e)


def proxsuite_layer(cones, eps):
    from proxsuite.torch.qplayer import QPFunction
    fn = QPFunction(eps=eps, maxIter=1000)

    def run(P, q, A, b):
        B, m = b.shape
        e = torch.empty(0, dtype=P.dtype)
        lo = torch.full((B, m), -1e20, dtype=P.dtype)
        return fn(P, q, e, e, A, lo, b)[0]
    return run


def cvxpylayers_layer(cones, eps, n, m):
    import cvxpy as cp
    from cvxpylayers.torch import CvxpyLayer
    nz, nn, ns = cones
    L = cp.Parameter((n, n))
    qp, Ap, bp = cp.Parameter(n), cp.Parameter((m, n)), cp.Parameter(m)
    x = cp.Variable(n)
    s = bp - Ap @ x
    cons = []
    if nz:
        cons.append(s[:nz] == 0)
    if nn:
        cons.append(s[nz:nz + nn] >= 0)
    for c in range(ns):
        r = nz + nn + 3 * c
        cons.append(cp.SOC(s[r], s[r + 1:r + 3]))
    prob = cp.Problem(cp.Minimize(0.5 * cp.sum_squares(L.T @ x) + qp @ x), cons)
    layer = CvxpyLayer(prob, parameters=[L, qp, Ap, bp], variables=[x])

    def run(P, q, A, b):
        Lc = torch.linalg.cholesky(P)  # P = L L' (P enters through L: DPP)
        return layer(Lc, q, A, b, solver_args={"eps": eps})[0]
    return run


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--impulse", required=True, help="the impulse CLI (problem generation, the in-process solve)")
    ap.add_argument("--out", required=True)
    ap.add_argument("--cap", type=float, default=5.0, help="seconds a cell may take before larger ones are skipped")
    ap.add_argument("--sizes", default="1,100,1000,10000")
    a = ap.parse_args()
    sizes = [int(s) for s in a.sizes.split(",")]
    peers = {}
    for name, mod in (("qpth", "qpth"), ("proxsuite", "proxsuite.torch.qplayer"), ("cvxpylayers", "cvxpylayers.torch")):
        try:
            __import__(mod)
            peers[name] = True
        except Exception as e:  # noqa: BLE001 (any import failure: not installed here)
            peers[name] = f"{type(e).__name__}: {e}"

    shapes = [("cube loss QP, octagon (n 32, m 88)", lambda B: generated(a.impulse, "cube-loss-octagon", B)),
              ("cube loss QP, exact cones (n 32, m 48)", lambda B: generated(a.impulse, "cube-loss", B))]
    for n in (8, 32, 64):
        shapes.append((f"random QP (n {n}, m {n})", lambda B, n=n: random_qps(B, n)))

    rows, grads = [], []
    for title, make in shapes:
        print(title, file=sys.stderr, flush=True)
        P0, q0, A0, b0, cones = make(max(sizes))
        n, m = P0.shape[1], A0.shape[1]
        cone_only = cones[2] > 0 or cones[0] > 0
        layers = {"impulse": lambda: impulse_layer(cones, 1e-6)}
        if not cone_only and peers["qpth"] is True:
            layers["qpth"] = lambda: qpth_layer(cones, 1e-6)
        if not cone_only and peers["proxsuite"] is True:
            layers["proxsuite.torch"] = lambda: proxsuite_layer(cones, 1e-6)
        if peers["cvxpylayers"] is True:
            layers["cvxpylayers"] = lambda: cvxpylayers_layer(cones, 1e-6, n, m)
        w = torch.linspace(-1, 1, n, dtype=torch.float64)
        ref_grad = None
        for lname, build in layers.items():
            layer = build()
            layer_obj = getattr(layer, "last_of", None)
            slow = False
            for B in sizes:
                if slow:
                    rows.append((title, lname, B, None, None))
                    continue
                T = [torch.from_numpy(np.ascontiguousarray(v[:B])) for v in (P0, q0, A0, b0)]

                def fwd():
                    with torch.no_grad():
                        layer(*T)

                def fwd_bwd():
                    Tg = [t.clone().requires_grad_(True) for t in T]
                    (layer(*Tg) * w).sum().backward()
                    return Tg[1].grad

                try:
                    tf = timed(fwd)
                    tb = timed(fwd_bwd)
                except Exception as e:  # noqa: BLE001 (a peer failing on a shape is a result)
                    rows.append((title, lname, B, f"failed: {type(e).__name__}", None))
                    slow = True
                    continue
                rows.append((title, lname, B, tf, tb))
                slow = tb > a.cap
                if B == min(s for s in sizes if s >= 10 or s == max(sizes)):
                    g = fwd_bwd().detach().numpy()
                    if lname == "impulse":
                        ref_grad = g
                        # rows at a degenerate solution: s = 0 and y = 0 (no derivative there;
                        # each layer picks its own element of the generalized one)
                        r = layer_obj.last
                        s_ = b0[:B] - np.einsum("bmn,bn->bm", A0[:B], r.x)
                        nzr, nnr = cones[0], cones[1]
                        deg = ((np.abs(s_[:, nzr:nzr + nnr]) < 1e-6) & (np.abs(r.y[:, nzr:nzr + nnr]) < 1e-6)).sum(1)
                        degenerate = float(deg.mean())
                    elif ref_grad is not None:
                        grads.append((title, lname, B, float(np.abs(g - ref_grad).max() / np.abs(ref_grad).max()),
                                      degenerate))

    # the binding's own cost against the CLI's in-process solve, B = 1,000
    with tempfile.TemporaryDirectory() as d:
        f = os.path.join(d, "b.qpb")
        subprocess.run([a.impulse, "generate", "--kind", "cube-loss-octagon", "--count", "1000", "--seed", "1",
                        "--out", f], check=True, stdout=subprocess.DEVNULL)
        z = np.load(f)
        arrs = [np.ascontiguousarray(z[k]) for k in ("P", "q", "A", "b")]
        cones = tuple(int(c) for c in z["cones"])
        csr = impulse._pattern_of(arrs[2])  # the CSR form, made once: A's values read in place
        cli_t, py_t, csr_t = [], [], []
        for _ in range(9):
            out = subprocess.run([a.impulse, "solve-batch", "--in", f, "--out", os.path.join(d, "o"), "--threads", "1"],
                                 check=True, capture_output=True, text=True).stdout
            cli_t.append(float(re.search(r" in ([0-9.e+-]+) s:", out).group(1)))
            t0 = time.perf_counter()
            impulse.solve_qp_batch(*arrs, cones=cones, threads=1)
            py_t.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            impulse.solve_qp_batch(arrs[0], arrs[1], csr, arrs[3], cones=cones, threads=1)
            csr_t.append(time.perf_counter() - t0)

    def fmt(t):
        if t is None:
            return "skipped"
        if isinstance(t, str):
            return t
        return f"{t * 1e3:.2f}"

    lines = ["# impulse.torch.ConicQP against the differentiable QP layers, side by side", "",
             f"`python3 bench/torch_layers.py --impulse ... --out ...`; {platform.processor() or platform.machine()}, "
             f"{os.cpu_count()} cores, one thread for every layer; torch {torch.__version__}, impulse "
             f"{impulse.__version__}; eps 1e-6 for every layer (qpth: 50 iterations at most, proxsuite 1,000). "
             "Milliseconds per call (the whole batch), median of 3 or more (one run where a call takes over a second); "
             "'skipped': the previous size took over "
             f"{a.cap:g} s.", ""]
    for name, ok in peers.items():
        if ok is not True:
            lines.append(f"- {name} is not in this run: {ok}")
    lines += ["", "| problems | layer | B | forward ms | forward + backward ms | fwd+bwd vs impulse |",
              "|---|---|---|---|---|---|"]
    base = {(r[0], r[2]): r[4] for r in rows if r[1] == "impulse"}
    for title, lname, B, tf, tb in rows:
        ratio = ""
        if isinstance(tb, float) and lname != "impulse" and isinstance(base.get((title, B)), float):
            ratio = f"{tb / base[(title, B)]:.1f}x slower" if tb >= base[(title, B)] else \
                f"{base[(title, B)] / tb:.1f}x faster"
        lines.append(f"| {title} | {lname} | {B:,} | {fmt(tf)} | {fmt(tb)} | {ratio} |")
    lines += ["", "## The gradients agree", "",
              "d(sum w x)/dq of each peer against impulse's: the largest difference over the largest entry; "
              "and the mean number of nonnegative rows per problem at which impulse's solution is degenerate "
              "(s and y both below 1e-6), where the solution has no derivative and each layer returns its own "
              "element of the generalized one (impulse: the row inactive; proxsuite: active; qpth's interior "
              "point: in between).", "",
              "| problems | layer | B | relative difference | degenerate rows |", "|---|---|---|---|---|"]
    for title, lname, B, d, deg in grads:
        lines.append(f"| {title} | {lname} | {B:,} | {d:.1e} | {deg:.1f} |")
    cm, pm, sm = statistics.median(cli_t), statistics.median(py_t), statistics.median(csr_t)
    lines += ["", "## The binding's own cost", "",
              f"1,000 octagon cube loss QPs, one thread, median of 9: `impulse solve-batch`'s in-process solve "
              f"{cm * 1e3:.1f} ms; `impulse.solve_qp_batch` from Python with A dense (its pattern found and its "
              f"values gathered in the call) {pm * 1e3:.1f} ms, {pm / cm:.3f}x; with A in CSR form (values read in "
              f"place) {sm * 1e3:.1f} ms, {sm / cm:.3f}x."]
    write_markdown(a.out, lines)


if __name__ == "__main__":
    main()
