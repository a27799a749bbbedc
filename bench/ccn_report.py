#!/usr/bin/env python3
"""Aggregate the runs of bench/ccn_results.sh into markdown tables and figures.

    python3 bench/ccn_report.py [CCN_WORK] [--fig-dir bench/results] [--tag ccn_2026-11-24]

CCN_WORK (default /tmp/ccn_runs) holds runs/<name>/{history.csv,metrics.json} and
logs/<name>.train.rc. Run names: timing_<m>_s<seed>, elbow_<m>_n<N>_s<seed>,
cube_<m>_n<N>_s<seed>, vortex_<m>_n<N>_s<seed>, gravity_<m>_f<f>_n<N>_s<seed>.
Prints the tables (mean +- sample std over the seeds that produced metrics; the
count column says how many of the seeds ran to the end) and writes one PNG per
experiment. Failed runs are counted, never silently dropped.
"""
import csv
import json
import math
import os
import re
import sys

METHODS = ["ccn", "ccn-r", "diffsim", "diffsim-r", "end-to-end"]
LABEL = {"ccn": "CCN", "ccn-r": "CCN-R", "diffsim": "DiffSim", "diffsim-r": "DiffSim-R",
         "end-to-end": "End-to-end"}
COLOR = {"ccn": "tab:blue", "ccn-r": "tab:cyan", "diffsim": "tab:red",
         "diffsim-r": "tab:orange", "end-to-end": "tab:gray"}
METRICS = [("position_error_m", "pos. err (m)", 1.0, "{:.4f}"),
           ("rotation_error_deg", "rot. err (deg)", 1.0, "{:.1f}"),
           ("volume_error", "volume err (%)", 100.0, "{:.1f}"),
           ("penetration_m", "penetration (mm)", 1000.0, "{:.2f}"),
           ("friction_error", "friction err", 1.0, "{:.3f}"),
           ("inertia_error", "inertia err", 1.0, "{:.3f}")]
NAME = re.compile(r"^(timing|elbow|cube|vortex|gravity)_([a-z-]+)_(?:f([0-9.]+)_)?(?:n(\d+)_)?s(\d+)$")


def read_history(d):
    p = os.path.join(d, "history.csv")
    if not os.path.exists(p):
        return []
    with open(p) as f:
        return list(csv.DictReader(f))


def load(work):
    runs = []
    rdir = os.path.join(work, "runs")
    for name in sorted(os.listdir(rdir)):
        m = NAME.match(name)
        if not m:
            continue
        exp, method, f, n, seed = m.groups()
        d = os.path.join(rdir, name)
        rc_path = os.path.join(work, "logs", name + (".rc" if exp == "timing" else ".train.rc"))
        rc = int(open(rc_path).read().strip()) if os.path.exists(rc_path) else None
        hist = read_history(d)
        r = {"name": name, "exp": exp, "method": method, "f": float(f) if f else None,
             "n": int(n) if n is not None else None, "seed": int(seed), "rc": rc, "hist": hist,
             "metrics": None, "error": None}
        mp = os.path.join(d, "metrics.json")
        if os.path.exists(mp):
            with open(mp) as fh:
                r["metrics"] = json.load(fh)
        mi = os.path.join(d, "metrics_init.json")
        r["metrics_init"] = json.load(open(mi)) if os.path.exists(mi) else None
        log = os.path.join(work, "logs", name + (".log" if exp == "timing" else ".train.log"))
        if os.path.exists(log):
            errs = [l.strip() for l in open(log) if "error" in l.lower()]
            r["error"] = errs[-1] if errs else None
        if hist:
            ep = [int(h["epoch"]) for h in hist]
            vl = [float(h["valid_loss"]) for h in hist]
            r["epochs"] = max(ep)
            r["best_epoch"] = ep[vl.index(min(vl))]
            pp = os.path.join(d, "params.json")  # the run's own choice (--select rollout: not the loss's argmin)
            if os.path.exists(pp):
                r["best_epoch"] = json.load(open(pp)).get("best_epoch", r["best_epoch"])
            r["train_s"] = sum(float(h["train_seconds"]) for h in hist)
        runs.append(r)
    return runs


def mean_std(xs):
    xs = [x for x in xs if x is not None and not (isinstance(x, float) and math.isnan(x))]
    if not xs:
        return None, None, 0
    m = sum(xs) / len(xs)
    s = math.sqrt(sum((x - m) ** 2 for x in xs) / (len(xs) - 1)) if len(xs) > 1 else 0.0
    return m, s, len(xs)


def fmt(m, s, k, scale, f):
    if m is None:
        return "n/a"
    if k == 1:
        return f.format(m * scale)
    return (f + " ± " + f).format(m * scale, s * scale)


def timing_table(runs):
    out = ["| method | epoch-2 train_seconds, seed 1 | seed 2 | QP iterations/transition | status |",
           "|---|---|---|---|---|"]
    for m in METHODS:
        rs = {r["seed"]: r for r in runs if r["exp"] == "timing" and r["method"] == m}
        cells, its, st = [], [], []
        for s in (1, 2):
            r = rs.get(s)
            h2 = [h for h in (r["hist"] if r else []) if h["epoch"] == "2"]
            if h2:
                cells.append("{:.2f}".format(float(h2[0]["train_seconds"])))
                its.append("{:.1f}".format(float(h2[0]["mean_qp_iterations"])))
                st.append("s%d ok" % s)
            elif r:
                cells.append("crashed")
                st.append("s%d: %s" % (s, (r["error"] or "rc %s" % r["rc"]).replace("impulse: error: ", "")))
            else:
                cells.append("not run")
        out.append("| %s | %s | %s | %s | %s |" % (LABEL[m], cells[0], cells[1], " / ".join(its) or "-",
                                                  "; ".join(st)))
    return "\n".join(out)


def group_table(runs, exp, key, key_label, metrics):
    rs = [r for r in runs if r["exp"] == exp]
    if not rs:
        return "", {}
    keys = sorted({r[key] for r in rs}, key=lambda v: (v == 0, v) if key == "n" else v)
    agg = {}
    head = "| method | %s | seeds evaluated | " % key_label + " | ".join(lbl for _, lbl, _, _ in metrics) + \
           " | best ep. / ep. run |"
    out = [head, "|" + "---|" * (4 + len(metrics))]
    for m in METHODS:
        for k in keys:
            g = [r for r in rs if r["method"] == m and r[key] == k]
            if not g:
                continue
            ok = [r for r in g if r["metrics"]]
            row = {}
            cells = []
            for mk, _, sc, f in metrics:
                ms = mean_std([r["metrics"].get(mk) for r in ok])
                row[mk] = ms
                cells.append(fmt(ms[0], ms[1], ms[2], sc, f))
            agg[(m, k)] = row
            eps = ", ".join("%s/%s" % (r.get("best_epoch", "-"), r.get("epochs", "-")) for r in ok)
            kl = ("all" if k == 0 else str(k)) if key == "n" else ("%g" % k)
            nfail = len(g) - len(ok)
            seeds = "%d/%d" % (len(ok), len(g))
            notes = [("s%d crashed in ep. %d" % (r["seed"], r.get("epochs", 0) + 1)) if r["rc"] not in (0, None)
                     else ("s%d unfinished" % r["seed"]) for r in g if not r["metrics"]]
            notes += ["s%d crashed after ep. %s" % (r["seed"], r.get("epochs", 0))
                      for r in ok if r["rc"] not in (0, None)]
            if notes:
                seeds += " (" + "; ".join(notes) + ")"
            out.append("| %s | %s | %s | %s | %s |" % (LABEL[m], kl, seeds, " | ".join(cells), eps or "-"))
    for k in keys:
        g = [r for r in rs if r["method"] == "ccn" and r[key] == k and r.get("metrics_init")]
        if g:
            cells = [fmt(*mean_std([r["metrics_init"].get(mk) for r in g]), sc, f) for mk, _, sc, f in metrics]
            kl = ("all" if k == 0 else str(k)) if key == "n" else ("%g" % k)
            out.append("| (initial model, untrained) | %s | %d | %s | - |" % (kl, len(g), " | ".join(cells)))
    return "\n".join(out), agg


def failures(runs):
    out = []
    for r in runs:
        if r["exp"] == "timing":
            continue
        if r["rc"] not in (0, None) or not r["metrics"]:
            ep = r.get("epochs", 0)
            out.append("- %s: train exit %s after %s epoch(s)%s: %s" % (
                r["name"], r["rc"], ep, ", evaluated on its best checkpoint" if r["metrics"] else "",
                (r["error"] or "?").replace("impulse: error: ", "")))
    return "\n".join(out) if out else "- none"


def figure(agg, keys_of, xlab, metrics, title, path, logx=False, allx=None):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, len(metrics), figsize=(4.2 * len(metrics), 3.6))
    for ax, (mk, lbl, sc, _) in zip(axes, metrics):
        if len(keys_of) == 1:  # one size: bars per method
            k = keys_of[0]
            ms = [m for m in METHODS if (m, k) in agg and agg[(m, k)][mk][0] is not None]
            ax.bar(range(len(ms)), [agg[(m, k)][mk][0] * sc for m in ms],
                   yerr=[agg[(m, k)][mk][1] * sc for m in ms], capsize=4, color=[COLOR[m] for m in ms])
            ax.set_xticks(range(len(ms)))
            ax.set_xticklabels(["%s\n(%d seed%s)" % (LABEL[m], agg[(m, k)][mk][2], "s" if agg[(m, k)][mk][2] > 1 else "")
                                for m in ms], fontsize=8)
            ax.set_title(lbl)
            ax.grid(alpha=0.3, axis="y")
            continue
        for mi, m in enumerate(METHODS):
            pts = [(k, agg[(m, k)][mk]) for k in keys_of if (m, k) in agg and agg[(m, k)][mk][0] is not None]
            if not pts:
                continue
            xs = [allx(k) if allx else k for k, _ in pts]
            # small horizontal offsets so error bars do not hide each other
            off = (mi - 2) * (0.03 if logx else 0.02 * (max(xs) - min(xs) + 1e-9))
            xs = [x * (1 + off) if logx else x + off for x in xs]
            ys = [v[0] * sc for _, v in pts]
            es = [v[1] * sc for _, v in pts]
            ax.errorbar(xs, ys, yerr=es, marker="o", capsize=3, color=COLOR[m], label=LABEL[m])
        ax.set_title(lbl)
        ax.set_xlabel(xlab)
        if logx:
            ax.set_xscale("log", base=2)
        ax.grid(alpha=0.3)
    if len(keys_of) > 1:
        axes[0].legend(fontsize=8)
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main():
    args = sys.argv[1:]
    fig_dir, tag = "bench/results", "ccn_2026-11-24"
    if "--fig-dir" in args:
        i = args.index("--fig-dir"); fig_dir = args[i + 1]; del args[i:i + 2]
    if "--tag" in args:
        i = args.index("--tag"); tag = args[i + 1]; del args[i:i + 2]
    work = args[0] if args else "/tmp/ccn_runs"
    runs = load(work)
    try:
        import matplotlib  # noqa: F401
        can_plot = True
    except ImportError:
        can_plot = False
        print("(matplotlib missing: no figures)", file=sys.stderr)

    print("## 1. Epoch time, 256 real cube tosses, --threads 2\n")
    print(timing_table(runs))
    base = METRICS[:4]
    synth = METRICS
    specs = [("elbow", "n", "N tosses", base, "Real elbow (articulated), test split"),
             ("cube", "n", "N tosses", base, "Real cube, test split"),
             ("vortex", "n", "N tosses", synth, "Vortex (synthetic asymmetric), test split"),
             ("gravity", "f", "gravity factor", synth, "Gravity sweep (synthetic elbow, N=64), test split")]
    for i, (exp, key, kl, mets, title) in enumerate(specs, start=2):
        tab, agg = group_table(runs, exp, key, kl, mets)
        if not tab:
            continue
        print("\n## %d. %s\n" % (i, title))
        print(tab)
        if can_plot and agg:
            keys = sorted({k for (_, k) in agg})
            if exp in ("elbow", "cube"):
                ntrain = {"elbow": 136, "cube": 285}[exp]  # whole 50% training split
                allx = lambda k, nt=ntrain: nt if k == 0 else k
                logx = len(keys) > 1
            else:
                allx, logx = None, exp == "vortex"
            if len(keys) > 1 or exp == "cube":
                p = os.path.join(fig_dir, "%s_%s.png" % (tag, exp))
                figure(agg, keys, kl + (" (all = whole split)" if exp == "elbow" else ""), mets[:3] if exp != "gravity" else
                       [mets[0], mets[1], mets[4], mets[5]], title, p, logx=logx, allx=allx)
                print("\n![%s](%s)" % (title, os.path.basename(p)))
    print("\n## Runs that did not finish cleanly\n")
    print(failures(runs))


if __name__ == "__main__":
    main()
