#!/usr/bin/env python3
"""What impulse.torch.ConicQPLayer keeps between calls, measured: a training loop's
re-solves of the same B problems in which q and b move a little each step and P and A
stay (a layer learned through q and b: residuals, targets, bounds).

For each shape, one CPU thread, B problems, `--steps` calls after a first one:
  - ConicQP (cold): every call from scratch;
  - ConicQPLayer(keep_factors=False): warm-started from the last call's x, y and rho;
  - ConicQPLayer (the default, keep_factors=True): warm-started and, since P and A are
    unchanged, on the last call's factorizations (impulse.FactorStore).
Forward alone and forward + backward, median milliseconds per call, and the solves'
mean ADMM iterations; the three give the same x to the tolerance (checked here).

    python3 bench/layer_resolve.py --impulse build/impulse --out bench/results/layer_resolve_<date>.md
"""
import argparse
import os
import platform
import statistics
import sys
import time

import numpy as np
import torch

import impulse.torch as it

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from report_util import write_markdown  # noqa: E402
from torch_layers import generated, random_qps  # noqa: E402 (the same problems)

torch.set_num_threads(1)


def steps_of(q, b, steps, scale, seed=3):
    """the q and b of each step: a small multiplicative random walk from the first (each
    entry moves by `scale` of itself: zeros stay zero, signs stay, as a trained model's
    data moves; an additive walk made the cube QPs' structural zero rows infeasible)"""
    rng = np.random.default_rng(seed)
    out, qs, bs = [], q.copy(), b.copy()
    for _ in range(steps):
        qs = qs * (1 + scale * rng.standard_normal(q.shape))
        bs = bs * (1 + scale * rng.standard_normal(b.shape))
        out.append((qs.copy(), bs.copy()))
    return out


def run(make_layer, P, A, q0, b0, walk, backward):
    """ms per call over the walk (median) after a first call on (q0, b0); the layer's
    iterations per call (mean over problems and calls); the last call's x"""
    layer = make_layer()
    Pt, At = torch.from_numpy(P), torch.from_numpy(A)
    with torch.no_grad():
        layer(Pt, torch.from_numpy(q0), At, torch.from_numpy(b0))
    times, iters, x = [], [], None
    w = torch.linspace(-1, 1, P.shape[1], dtype=torch.float64)
    for q, b in walk:
        T = [torch.from_numpy(v) for v in (P, q, A, b)]
        t0 = time.perf_counter()
        if backward:
            Tg = [t.clone().requires_grad_(True) for t in T]
            xt = layer(*Tg)[0]
            (xt * w).sum().backward()
        else:
            with torch.no_grad():
                xt = layer(*T)[0]
        times.append(time.perf_counter() - t0)
        last = layer.last if hasattr(layer, "last") else layer.qp.last
        iters.append(float(np.mean(last.iterations)))
        x = xt.detach().numpy()
    return 1e3 * statistics.median(times), float(np.mean(iters)), x, getattr(layer, "reused", False)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--impulse", required=True, help="the impulse CLI (problem generation)")
    ap.add_argument("--out", required=True)
    ap.add_argument("--batch", type=int, default=1000)
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--scale", type=float, default=1e-3, help="each step's move of q's and b's entries, relative to themselves")
    ap.add_argument("--eps", type=float, default=1e-6)
    a = ap.parse_args()
    B = a.batch
    shapes = [("cube loss QP, octagon (n 32, m 88)", lambda: generated(a.impulse, "cube-loss-octagon", B)),
              ("cube loss QP, exact cones (n 32, m 48)", lambda: generated(a.impulse, "cube-loss", B)),
              ("random QP (n 8, m 8)", lambda: random_qps(B, 8)),
              ("random QP (n 32, m 32)", lambda: random_qps(B, 32))]
    modes = [("ConicQP, cold", lambda c: it.ConicQP(c, eps=a.eps, threads=1)),
             ("layer, warm start", lambda c: it.ConicQPLayer(c, eps=a.eps, threads=1, keep_factors=False)),
             ("layer, warm + kept factors", lambda c: it.ConicQPLayer(c, eps=a.eps, threads=1))]
    rows = []
    for title, make in shapes:
        print(title, file=sys.stderr, flush=True)
        P, q, A, b, cones = make()
        walk = steps_of(q, b, a.steps, a.scale)
        xs = {}
        for backward in (False, True):
            for mname, build in modes:
                ms, its, x, reused = run(lambda: build(cones), P, A, q, b, walk, backward)
                xs[mname] = x
                rows.append((title, "forward + backward" if backward else "forward", mname, ms, its, reused))
        ref = xs["ConicQP, cold"]
        for mname, x in xs.items():
            gap = float(np.abs(x - ref).max())
            if gap > 1e-3:
                raise SystemExit(f"{title}, {mname}: x differs from the cold solve's by {gap:.2e}")
    lines = [f"# ConicQPLayer's re-solves: warm starts and kept factorizations, B = {B:,}", "",
             f"Machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, one thread used; "
             f"torch {torch.__version__}. `python3 bench/layer_resolve.py --impulse build/impulse` "
             f"(--batch {B} --steps {a.steps} --scale {a.scale} --eps {a.eps}).", "",
             f"Each row: {a.steps} calls after a first one, each entry of q and b moving by {a.scale} of itself per step, P and "
             "A unchanged; median ms per call, mean ADMM iterations per problem. The three modes' x agree within "
             "1e-3 (checked).", "",
             "| QP | pass | mode | ms per call | iterations | vs cold | reused |", "|---|---|---|---:|---:|---:|---|"]
    cold = {(r[0], r[1]): r[3] for r in rows if r[2] == "ConicQP, cold"}
    for title, passname, mname, ms, its, reused in rows:
        lines.append(f"| {title} | {passname} | {mname} | {ms:.1f} | {its:.0f} | {cold[(title, passname)] / ms:.2f}x "
                     f"| {'yes' if reused else ''} |")
    write_markdown(a.out, lines)


if __name__ == "__main__":
    main()
