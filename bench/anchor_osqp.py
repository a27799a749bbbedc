#!/usr/bin/env python3
"""Anchor comparison: impulse (one CPU thread) against OSQP (and ProxQP dense when
it installs) on the same QPs.

Problem sets:
  real-train, real-gt   ContactNets loss QPs recorded from the original training
                        loop (shared data; skipped with a message when absent)
  cube-loss-octagon     generated, polyhedral friction (OSQP and ProxQP solve it)
  cube-loss             generated, exact second-order friction cones (impulse only:
                        neither OSQP nor ProxQP handles second-order cones)

For each set and each tolerance the script solves every problem with
`impulse solve-batch --backend cpu --threads 1 --precision double --time-each`,
once in lane groups (`--lanes on`, the default CPU path: 8 doubles or 16 floats
per AVX-512 vector, each problem's time its share of its group's) and once one
problem at a time (`--lanes off`, the latency of a single solve), and with OSQP (one fresh solver per problem: sparse upper-triangular P and sparse
A holding only the true non-zeros, eps_abs = eps_rel = eps, no polishing,
max_iter as for impulse, default adaptive rho), and writes a markdown report.

Timing: impulse's `solve_us` is the per-problem wall time of the whole solve,
INCLUDING its own matrix set-up and factorization. OSQP's `info.solve_time`
EXCLUDES set-up (scaling, KKT factorization), which is in `info.setup_time`; both
ratios are reported. ProxQP: `info.solve_time` / `info.run_time` (µs).

Usage:
  python3 bench/anchor_osqp.py --impulse /path/to/impulse [--count 500] [--eps 1e-3 1e-5]
"""

import argparse
import datetime
import os
import platform
import shlex
import shutil
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from report_util import data_root  # noqa: E402


def shown_path(path):
    """A path as a report shows it: relative to the repository when inside it,
    else only its last component (reports name no directories of this machine)."""
    path = os.path.abspath(path)
    if path.startswith(REPO + os.sep):
        return os.path.relpath(path, REPO)
    return ".../" + os.path.basename(path)


# --------------------------------------------------------------------------- deps

def ensure_packages(allow_install):
    """numpy, scipy and osqp are required; proxsuite is optional."""
    needed = []
    for mod, pkg in (("numpy", "numpy"), ("scipy", "scipy"), ("osqp", "osqp")):
        try:
            __import__(mod)
        except ImportError:
            needed.append(pkg)
    if needed:
        if not allow_install:
            sys.exit("missing Python packages: %s (run without --no-install)" % " ".join(needed))
        print("installing %s ..." % " ".join(needed), flush=True)
        subprocess.check_call([sys.executable, "-m", "pip", "install", "--quiet"] + needed)
    have_prox = True
    try:
        import proxsuite  # noqa: F401
    except ImportError:
        have_prox = False
        if allow_install:
            print("installing proxsuite (optional) ...", flush=True)
            try:
                subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "proxsuite"],
                               check=True, timeout=600)
                import proxsuite  # noqa: F401,F811
                have_prox = True
            except Exception as e:  # noqa: BLE001 - optional, any failure means skip
                print("proxsuite not available (%s); skipping ProxQP" % e.__class__.__name__,
                      flush=True)
    return have_prox


# --------------------------------------------------------------------------- data

def load_real(shared_dir, prefix):
    """OSQP-form set (l <= Ax <= u) -> batch dict in impulse's cone form."""
    import numpy as np
    d = os.path.join(shared_dir, "contactnets_qps")
    names = ["P", "q", "A", "l", "u", "ref_obj"]
    paths = {k: os.path.join(d, "%s_%s.npy" % (prefix, k)) for k in names}
    missing = [p for p in paths.values() if not os.path.exists(p)]
    if missing:
        return None, "missing %s" % ", ".join(os.path.basename(p) for p in missing)
    P, q, A, l, u, ref = (np.load(paths[k]) for k in names)
    B, m, n = A.shape
    if np.all(np.isneginf(l)):
        # the recorded form: every row is a_i x <= u_i  ->  nonneg cone, b = u
        batch = dict(cones=np.array([0, m, 0], np.int32), P=P, q=q, A=A, b=u)
        note = "l = -inf everywhere: cones [0, %d, 0], b = u" % m
    else:
        # general case (not met in the recorded data): equality rows where l == u
        # (same rows in every problem required), the others split into the finite
        # sides Ax <= u and -Ax <= -l.
        eq = np.all(l == u, axis=0)
        up = ~eq & np.all(np.isfinite(u), axis=0)
        lo = ~eq & np.all(np.isfinite(l), axis=0)
        Ab = np.concatenate([A[:, eq], A[:, up], -A[:, lo]], axis=1)
        bb = np.concatenate([u[:, eq], u[:, up], -l[:, lo]], axis=1)
        batch = dict(cones=np.array([eq.sum(), up.sum() + lo.sum(), 0], np.int32),
                     P=P, q=q, A=Ab, b=bb)
        note = "two-sided rows split: cones %s" % batch["cones"].tolist()
    batch["ref_obj"] = ref
    return batch, note


def run_cmd(cmd):
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if r.returncode != 0:
        sys.exit("command failed (%d): %s\n%s" % (r.returncode, shlex.join(cmd), r.stdout))
    return r.stdout


def generate(impulse, kind, count, seed, path):
    import numpy as np
    run_cmd([impulse, "generate", "--kind", kind, "--count", str(count), "--seed", str(seed),
             "--out", path])
    with np.load(path) as z:
        return {k: z[k] for k in z.files}


def write_batch(batch, path):
    import numpy as np
    np.savez(path, cones=np.asarray(batch["cones"], np.int32),
             P=np.ascontiguousarray(batch["P"], np.float64),
             q=np.ascontiguousarray(batch["q"], np.float64),
             A=np.ascontiguousarray(batch["A"], np.float64),
             b=np.ascontiguousarray(batch["b"], np.float64))


def objectives(batch, X):
    import numpy as np
    P, q = batch["P"], batch["q"]
    return 0.5 * np.einsum("bi,bij,bj->b", X, P, X) + np.einsum("bi,bi->b", q, X)


# --------------------------------------------------------------------------- solvers

IMPULSE_STATUS = {0: "not_run", 1: "solved", 2: "inaccurate", 3: "max_iter",
                  4: "prim_infeas", 5: "dual_infeas", 6: "numerical", 7: "invalid"}


def solve_impulse(impulse, in_path, out_path, eps, max_iter, repeat, precision="double",
                  lanes=True):
    """Per-problem time: minimum over `repeat` runs of solve_us (µs)."""
    import numpy as np
    best = None
    for _ in range(repeat):
        run_cmd([impulse, "solve-batch", "--in", in_path, "--out", out_path,
                 "--backend", "cpu", "--threads", "1", "--precision", precision,
                 "--eps", repr(eps), "--max-iter", str(max_iter), "--time-each",
                 "--lanes", "on" if lanes else "off"])
        with np.load(out_path) as z:
            sol = {k: z[k] for k in z.files}
        best = sol if best is None else dict(best, solve_us=np.minimum(best["solve_us"],
                                                                      sol["solve_us"]))
    status = best["status"].astype(int)
    return dict(x=best["x"], t_solve=best["solve_us"].astype(float),
                t_total=best["solve_us"].astype(float), iters=best["iterations"].astype(int),
                value=best.get("value"), solved=status == 1,
                ipm=best["ipm_iterations"].astype(int) if "ipm_iterations" in best
                else np.zeros(len(status), dtype=int),
                status=[IMPULSE_STATUS.get(int(s), str(s)) for s in status])


def osqp_rows(batch):
    """Cone form -> OSQP bounds (same for every problem)."""
    import numpy as np
    nz, nn, ns = (int(c) for c in batch["cones"])
    if ns:
        raise ValueError("second-order cones")
    b = batch["b"]
    l = np.concatenate([b[:, :nz], np.full((b.shape[0], nn), -np.inf)], axis=1)
    return l, b


def osqp_settings(osqp_mod, eps, max_iter):
    major = int(osqp_mod.__version__.split(".")[0])
    s = dict(eps_abs=eps, eps_rel=eps, max_iter=max_iter, verbose=False)
    s["polishing" if major >= 1 else "polish"] = False
    return s


def solve_osqp(batch, eps, max_iter, repeat):
    import numpy as np
    import scipy.sparse as sp
    import osqp
    l, u = osqp_rows(batch)
    settings = osqp_settings(osqp, eps, max_iter)
    B, n = batch["q"].shape
    X = np.full((B, n), np.nan)
    t_solve = np.full(B, np.inf)
    t_setup = np.full(B, np.inf)
    iters = np.zeros(B, int)
    status = []
    solved = np.zeros(B, bool)
    for i in range(B):
        P = sp.csc_matrix(np.triu(batch["P"][i]))
        P.eliminate_zeros()
        A = sp.csc_matrix(batch["A"][i])
        A.eliminate_zeros()
        for _ in range(repeat):
            solver = osqp.OSQP()
            solver.setup(P, batch["q"][i].copy(), A, l[i].copy(), u[i].copy(), **settings)
            res = solver.solve()
            t_solve[i] = min(t_solve[i], res.info.solve_time * 1e6)
            t_setup[i] = min(t_setup[i], res.info.setup_time * 1e6)
        X[i] = res.x
        iters[i] = res.info.iter
        status.append(str(res.info.status).replace(" ", "_"))
        solved[i] = res.info.status_val == 1  # OSQP_SOLVED
    return dict(x=X, t_solve=t_solve, t_setup=t_setup, t_total=t_solve + t_setup,
                iters=iters, solved=solved, status=status)


def solve_proxqp(batch, eps, max_iter, repeat):
    import numpy as np
    from proxsuite import proxqp
    nz, nn, ns = (int(c) for c in batch["cones"])
    if ns:
        raise ValueError("second-order cones")
    B, n = batch["q"].shape
    X = np.full((B, n), np.nan)
    t_solve = np.full(B, np.inf)
    t_total = np.full(B, np.inf)
    iters = np.zeros(B, int)
    status = []
    for i in range(B):
        A, b = batch["A"][i], batch["b"][i]
        Aeq, beq = (A[:nz], b[:nz]) if nz else (None, None)
        C, u = A[nz:nz + nn], b[nz:nz + nn]
        lo = np.full(nn, -np.inf)
        for _ in range(repeat):
            qp = proxqp.dense.QP(n, nz, nn)
            qp.settings.eps_abs = eps
            qp.settings.eps_rel = eps
            qp.settings.max_iter = max_iter
            qp.settings.verbose = False
            qp.settings.compute_timings = True
            qp.init(batch["P"][i], batch["q"][i], Aeq, beq, C, lo, u)
            qp.solve()
            info = qp.results.info
            t_solve[i] = min(t_solve[i], info.solve_time)
            t_total[i] = min(t_total[i], info.run_time)
        X[i] = qp.results.x
        iters[i] = info.iter
        status.append(str(info.status).split(".")[-1].replace("PROXQP_", "").lower())
    solved = np.array([s == "solved" for s in status])
    return dict(x=X, t_solve=t_solve, t_total=t_total, iters=iters, solved=solved,
                status=status)


# --------------------------------------------------------------------------- report

def fmt_t(v):
    return "%.0f" % v if v >= 10 else "%.1f" % v


def fmt_e(v):
    return "—" if v is None else "%.1e" % v


def unsolved(res):
    import collections
    c = collections.Counter(s for s, ok in zip(res["status"], res["solved"]) if not ok)
    if not c:
        return "0"
    return "%d (%s)" % (sum(c.values()), ", ".join("%s %d" % kv for kv in sorted(c.items())))


def max_absdiff(a, b, mask):
    import numpy as np
    if not mask.any():
        return None
    return float(np.max(np.abs(a[mask] - b[mask])))


def section(name, eps, batch, results, note):
    """Markdown for one set and tolerance; returns (text, summary row)."""
    import numpy as np
    imp = results["impulse"]
    B = len(imp["t_solve"])
    objs = {k: objectives(batch, r["x"]) for k, r in results.items()}
    ref = batch.get("ref_obj")
    lines = ["### %s, eps = %g (%d problems)" % (name, eps, B), ""]
    if note:
        lines += [note, ""]
    lines += ["| solver | time median µs | time p90 µs | setup+solve median µs | "
              "setup+solve p90 µs | iterations median | not solved | "
              "max abs Δobj vs impulse | max abs Δobj vs ref_obj |",
              "|---|---|---|---|---|---|---|---|---|"]
    summary = {"set": name, "eps": eps}
    for key, label in (("impulse", "impulse, lanes (1 thread)"),
                       ("impulse_1", "impulse, one at a time (1 thread)"),
                       ("impulse_f", "impulse in float, lanes (1 thread)"), ("osqp", "OSQP"),
                       ("proxqp", "ProxQP dense")):
        if key not in results:
            continue
        r = results[key]
        both = imp["solved"] & r["solved"]
        d_imp = None if key == "impulse" else max_absdiff(objs[key], objs["impulse"], both)
        d_ref = None if ref is None else max_absdiff(objs[key], ref, r["solved"])
        lines.append("| %s | %s | %s | %s | %s | %d | %s | %s | %s |" % (
            label, fmt_t(np.median(r["t_solve"])), fmt_t(np.percentile(r["t_solve"], 90)),
            fmt_t(np.median(r["t_total"])), fmt_t(np.percentile(r["t_total"], 90)),
            int(np.median(r["iters"])), unsolved(r),
            "—" if key == "impulse" else fmt_e(d_imp), fmt_e(d_ref)))
        if key not in ("impulse", "impulse_1", "impulse_f"):
            rs = float(np.median(r["t_solve"] / imp["t_solve"]))
            rt = float(np.median(r["t_total"] / imp["t_solve"]))
            summary[key] = (rs, rt)
    lines.append("")
    if "impulse_1" in results:
        summary["imp_1_med"] = float(np.median(results["impulse_1"]["t_solve"]))
        if "osqp" in results:
            summary["osqp_1"] = float(np.median(results["osqp"]["t_total"] /
                                                results["impulse_1"]["t_solve"]))
            lines.append("- median per-problem ratio OSQP (set-up + solve) / impulse one at "
                         "a time: **%.2f**" % summary["osqp_1"])
    if "impulse_f" in results and "osqp" in results:
        summary["osqp_f"] = float(np.median(results["osqp"]["t_total"] /
                                            results["impulse_f"]["t_solve"]))
        summary["imp_f_med"] = float(np.median(results["impulse_f"]["t_solve"]))
        lines.append("- median per-problem ratio OSQP (set-up + solve) / impulse in float: "
                     "**%.2f**" % summary["osqp_f"])
    elif "impulse_f" in results:
        summary["imp_f_med"] = float(np.median(results["impulse_f"]["t_solve"]))
    for key, label, sl in (("osqp", "OSQP", "solve_time (set-up excluded)"),
                           ("proxqp", "ProxQP", "solve_time")):
        if key in summary:
            rs, rt = summary[key]
            lines.append("- median per-problem ratio %s %s / impulse solve_us: **%.2f**; "
                         "(set-up + solve) / impulse: **%.2f**" % (label, sl, rs, rt))
    if ref is not None and imp.get("value") is not None:
        lines.append("- impulse's optimal-value estimate (`value` = ½xᵀPx + qᵀx + yᵀ(Ax − b), "
                     "the Lagrangian): max abs Δ vs ref_obj **%s** (its objective's: %s)" % (
                         fmt_e(max_absdiff(imp["value"], ref, imp["solved"])),
                         fmt_e(max_absdiff(objs["impulse"], ref, imp["solved"]))))
    scale = np.median(np.abs(ref if ref is not None else objs["impulse"]))
    lines.append("- objective scale: median |obj| = %.2e (objectives recomputed as "
                 "½xᵀPx + qᵀx from each solver's x; Δ over problems both solved)" % scale)
    lines.append("")
    summary["imp_med"] = float(np.median(imp["t_solve"]))
    if "osqp" in results:
        summary["osqp_med"] = float(np.median(results["osqp"]["t_solve"]))
        summary["osqp_tot_med"] = float(np.median(results["osqp"]["t_total"]))
    return "\n".join(lines), summary


def machine_info(impulse, argv):
    import numpy
    import scipy
    import osqp
    cpu = "unknown"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    try:
        prox = __import__("proxsuite").__version__
    except ImportError:
        prox = "not installed"
    try:
        rev = subprocess.run(["git", "-C", REPO, "rev-parse", "--short", "HEAD"],
                             capture_output=True, text=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", REPO, "status", "--porcelain"],
                               capture_output=True, text=True).stdout.strip()
        rev = rev + (" (working tree modified)" if dirty else "")
    except OSError:
        rev = "unknown"
    ver = run_cmd([impulse, "--version"]).strip().splitlines()
    return [
        "- date: %s" % datetime.datetime.now().strftime("%Y-%m-%d %H:%M %Z").strip(),
        "- command: `%s`" % shlex.join(["python3"] + argv),
        "- CPU: %s, %d logical cores (all solvers run on one thread)" % (cpu, os.cpu_count()),
        "- OS: %s; Python %s" % (platform.platform(), platform.python_version()),
        "- osqp %s, proxsuite %s, numpy %s, scipy %s" % (osqp.__version__, prox,
                                                        numpy.__version__, scipy.__version__),
        "- impulse binary: `%s` (%s); repo at %s" % (shown_path(impulse), ver[0] if ver else "?", rev),
    ]


# --------------------------------------------------------------------------- main

def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--impulse", default=os.path.join(REPO, "build", "impulse"),
                    help="impulse binary (default build/impulse)")
    ap.add_argument("--shared-data", default=data_root(),
                    help="data directory holding contactnets_qps/ (default $IMPULSE_DATA, "
                         "else ../shared/data relative to the repo; docs/data.md)")
    ap.add_argument("--count", type=int, default=500, help="generated problems per set")
    ap.add_argument("--seed", type=int, default=1, help="generator seed")
    ap.add_argument("--eps", type=float, nargs="+", default=[1e-3, 1e-5])
    ap.add_argument("--max-iter", type=int, default=4000)
    ap.add_argument("--repeat", type=int, default=1,
                    help="solve each problem this many times, keep the per-problem "
                         "minimum time (same for every solver)")
    ap.add_argument("--sets", nargs="+",
                    default=["real-train", "real-gt", "cube-loss-octagon", "cube-loss"],
                    choices=["real-train", "real-gt", "cube-loss-octagon", "cube-loss"])
    ap.add_argument("--no-proxsuite", action="store_true", help="skip ProxQP")
    ap.add_argument("--float", action="store_true",
                    help="also time impulse in single precision (same eps)")
    ap.add_argument("--no-install", action="store_true", help="never pip-install")
    ap.add_argument("--lanes-only", action="store_true",
                    help="skip impulse's one-problem-at-a-time run")
    ap.add_argument("--out", default=None, help="markdown report (default "
                    "bench/results/anchor_osqp_<date>.md)")
    args = ap.parse_args()

    impulse = os.path.abspath(args.impulse)
    if not (os.path.isfile(impulse) and os.access(impulse, os.X_OK)):
        sys.exit("impulse binary not found or not executable: %s (pass --impulse)" % impulse)
    have_prox = ensure_packages(not args.no_install) and not args.no_proxsuite
    import numpy as np  # noqa: F401 - after the install check

    out = args.out or os.path.join(REPO, "bench", "results", "anchor_osqp_%s.md"
                                   % datetime.date.today().isoformat())
    work = tempfile.mkdtemp(prefix="impulse_anchor_")
    t_start = time.time()
    sections, summaries, skipped = [], [], []
    try:
        sets = []
        for name in args.sets:
            if name.startswith("real-"):
                prefix = name.split("-", 1)[1]
                batch, note = load_real(args.shared_data, prefix)
                if batch is None:
                    msg = ("%s: skipped, recorded ContactNets QPs not found in %s (%s; "
                           "recorded, not published: bash data/fetch.sh contactnets_qps)") % (
                        name, args.shared_data, note)
                    print(msg, flush=True)
                    skipped.append(msg)
                    continue
                note = "Recorded ContactNets QPs (`%s_*`), %s." % (prefix, note)
            else:
                batch = generate(impulse, name, args.count, args.seed,
                                 os.path.join(work, name + "_gen.npz"))
                note = "Generated: `impulse generate --kind %s --count %d --seed %d`." % (
                    name, args.count, args.seed)
            path = os.path.join(work, name + ".npz")
            write_batch(batch, path)
            nz, nn, ns = (int(c) for c in batch["cones"])
            B, m, n = batch["A"].shape
            note += " n = %d, m = %d, cones [zero %d, nonneg %d, soc %d]." % (n, m, nz, nn, ns)
            if ns:
                note += (" Exact second-order cones: OSQP and ProxQP cannot solve these, "
                         "impulse only.")
            sets.append((name, batch, path, note))

        for name, batch, path, note in sets:
            polyhedral = int(batch["cones"][2]) == 0
            for eps in args.eps:
                print("%s eps=%g: impulse ..." % (name, eps), end="", flush=True)
                results = {"impulse": solve_impulse(impulse, path,
                                                    os.path.join(work, name + "_sol.npz"),
                                                    eps, args.max_iter, args.repeat)}
                if not args.lanes_only:
                    print(" impulse one at a time ...", end="", flush=True)
                    results["impulse_1"] = solve_impulse(
                        impulse, path, os.path.join(work, name + "_sol1.npz"), eps,
                        args.max_iter, args.repeat, lanes=False)
                if args.float:
                    print(" impulse float ...", end="", flush=True)
                    results["impulse_f"] = solve_impulse(
                        impulse, path, os.path.join(work, name + "_solf.npz"), eps,
                        args.max_iter, args.repeat, "float")
                if polyhedral:
                    print(" osqp ...", end="", flush=True)
                    results["osqp"] = solve_osqp(batch, eps, args.max_iter, args.repeat)
                    if have_prox:
                        print(" proxqp ...", end="", flush=True)
                        results["proxqp"] = solve_proxqp(batch, eps, args.max_iter,
                                                         args.repeat)
                print(" done", flush=True)
                text, summ = section(name, eps, batch, results, note)
                print(text, flush=True)
                sections.append(text)
                summaries.append(summ)
    finally:
        shutil.rmtree(work, ignore_errors=True)

    # ---- report
    md = ["# Anchor: impulse vs OSQP%s" % (" and ProxQP" if have_prox else ""), ""]
    md += machine_info(impulse, sys.argv)
    md += ["- wall time of the whole run: %.0f s" % (time.time() - t_start), ""]
    md += ["## How it is measured", "",
           "- Every solver sees the same problems (the batch file impulse reads). impulse: "
           "`solve-batch --backend cpu --threads 1 --precision double --eps E "
           "--max-iter %d --time-each --lanes on|off`; time = `solve_us`. With lanes "
           "(the default CPU path) a problem's time is its share of its group's "
           "(8 doubles or 16 floats solved together in one AVX-512 vector): the "
           "throughput per problem on one core. One at a time it is the latency of "
           "one solve.%s" % (
               args.max_iter, " With --float, also `--precision float` (same eps), "
               "a second impulse row." if args.float else ""),
           "- **impulse's `solve_us` includes its own set-up (forming and factorizing "
           "P + σI + AᵀρA).** OSQP's `info.solve_time` excludes set-up (scaling, KKT "
           "factorization: `info.setup_time`), so two ratios are given: OSQP solve only, "
           "and OSQP set-up + solve (the like-for-like one).",
           "- OSQP: one `osqp.OSQP()` per problem; P = `csc_matrix(triu(P))` and A = "
           "`csc_matrix(A)` with explicit zeros eliminated (true non-zeros only); "
           "l = -inf on nonnegative rows, l = u = b on zero rows; eps_abs = eps_rel = eps, "
           "polishing off, verbose off, max_iter %d, adaptive rho at its default. OSQP "
           "checks termination every 25 iterations by default, so its iteration counts "
           "are multiples of 25." % args.max_iter,
           "- ProxQP (if present): `proxsuite.proxqp.dense.QP`, eps_abs = eps_rel = eps, "
           "same max_iter; time = `info.solve_time`, set-up + solve = `info.run_time` (µs). "
           "Its iterations are proximal/Newton iterations, not ADMM ones.",
           "- Ratios are medians over problems of the per-problem ratio "
           "(solver time / impulse time), over all problems whatever their status. "
           "Times are the minimum over %d run(s) per problem." % args.repeat,
           "- ADMM stopping criteria differ in detail between impulse and OSQP (both "
           "eps_abs + eps_rel · scale on primal and dual residuals), so equal eps does "
           "not mean exactly equal accuracy; the objective columns show the agreement.",
           ""]
    if skipped:
        md += ["Skipped: " + "; ".join(skipped), ""]
    md += ["## Summary", "",
           "| set | eps | impulse lanes median µs | OSQP solve median µs | OSQP setup+solve "
           "median µs | median OSQP solve / impulse lanes | median OSQP (setup+solve) / "
           "impulse lanes | impulse one at a time median µs | median OSQP (setup+solve) / "
           "impulse one at a time |"
           + (" median ProxQP solve / impulse | median ProxQP run / impulse |"
              if have_prox else "")
           + (" impulse float median µs | median OSQP (setup+solve) / impulse float |"
              if args.float else ""),
           "|---|---|---|---|---|---|---|---|---|" + ("---|---|" if have_prox else "")
           + ("---|---|" if args.float else "")]
    for s in summaries:
        row = "| %s | %g | %s |" % (s["set"], s["eps"], fmt_t(s["imp_med"]))
        if "osqp" in s:
            row += " %s | %s | %.2f | %.2f |" % (fmt_t(s["osqp_med"]), fmt_t(s["osqp_tot_med"]),
                                                s["osqp"][0], s["osqp"][1])
        else:
            row += " n/a (SOC) | n/a | n/a | n/a |"
        row += " %s | %s |" % (fmt_t(s["imp_1_med"]) if "imp_1_med" in s else "—",
                               "%.2f" % s["osqp_1"] if "osqp_1" in s else "n/a")
        if have_prox:
            row += (" %.2f | %.2f |" % s["proxqp"] if "proxqp" in s else " n/a | n/a |")
        if args.float:
            row += " %s | %s |" % (fmt_t(s["imp_f_med"]) if "imp_f_med" in s else "—",
                                   "%.2f" % s["osqp_f"] if "osqp_f" in s else "n/a")
        md.append(row)
    md += ["", "## Per set and tolerance", ""] + sections
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    with open(out, "w") as f:
        f.write("\n".join(md).rstrip() + "\n")
    print("\n".join(md[md.index("## Summary"):md.index("## Per set and tolerance")]))
    print("wrote %s" % out)


if __name__ == "__main__":
    main()
