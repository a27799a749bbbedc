#!/usr/bin/env python3
"""Figures of an `impulse impact` study folder (host/impact/impact_report.h).

    python3 impact_figures.py STUDY_DIR

fig_table1          identified (mu, eps) per model, mean and std over resamples, with
                    the paper's Table 1 beside them
fig_errors          Fig. 5: normalized post-impact velocity error per analytical model,
                    best post hoc and the IRB bound, on the test impacts
fig_params_each     Fig. 6: AP Newton's best (mu, eps) for each training impact alone,
                    coloured by the error of the impulse they predict, and their
                    distributions beside the resampled fit (Table 1)
fig_learned         Fig. 7: error distributions of the learned models against best post
                    hoc, the best analytical model and the IRB bound
fig_learning_curve  Fig. 8: mean error against training impacts (mean and range over seeds)
fig_ellipse_<i>     the impulse-space picture of a test impact: the Energy Ellipse, the
                    models' impulses, the IRB impulse and the outcome's least-squares impulse
"""
import csv
import glob
import json
import math
import os
import sys

sys.dont_write_bytecode = True  # no __pycache__ beside the sources
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "io"))
import figure_files  # noqa: E402  (each figure whole or not at all)

import matplotlib  # noqa: E402

matplotlib.use("Agg")
import matplotlib.colors  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402

PAPER = {  # Table 1 of Fazeli et al. 2017: mu, mu std, eps, eps std
    "drumwright-shell": (0.081, 0.008, 0.516, 0.009),
    "ap-poisson": (0.101, 0.007, 0.526, 0.008),
    "ap-newton": (0.084, 0.007, 0.547, 0.009),
    "mirtich": (0.062, 0.009, 0.558, 0.010),
    "wang-mason": (0.120, 0.008, 0.537, 0.010),
    "whittaker": (0.111, 0.008, 0.484, 0.011),
}


def save(fig, out, stem):
    fig.tight_layout()
    for ext in ("png", "svg"):
        figure_files.save(fig, os.path.join(out, f"{stem}.{ext}"), dpi=130)
    plt.close(fig)
    print(f"wrote {os.path.join(out, stem)}.png/.svg")


def rows(path):
    with open(path) as f:
        return list(csv.DictReader(f))


def table1(out):
    p = os.path.join(out, "table1.csv")
    if not os.path.exists(p):
        return
    r = rows(p)
    fig, axes = plt.subplots(1, 2, figsize=(11, 3.8))
    names = [x["model"] for x in r]
    y = range(len(names))
    for ax, key, pk, label in ((axes[0], "mu", 0, "friction mu"), (axes[1], "eps", 2, "restitution eps")):
        ax.errorbar([float(x[f"{key}_mean"]) for x in r], [v + 0.12 for v in y],
                    xerr=[float(x[f"{key}_std"]) for x in r], fmt="o", capsize=3, label="impulse (this data, k = %s)" % r[0]["k"])
        ax.errorbar([PAPER[n][pk] for n in names], [v - 0.12 for v in y], xerr=[PAPER[n][pk + 1] for n in names],
                    fmt="s", color="gray", capsize=3, label="paper, Table 1")
        ax.set_yticks(list(y))
        ax.set_yticklabels(names)
        ax.set_xlabel(label + " (mean ± std over resamples)")
        ax.grid(True, alpha=0.3)
    axes[0].legend(fontsize=8)
    save(fig, out, "fig_table1")


def params_each(out):
    p = os.path.join(out, "params_each.csv")
    if not os.path.exists(p):
        return
    r = rows(p)
    mu = [float(x["mu"]) for x in r]
    eps = [float(x["eps"]) for x in r]
    err = [float(x["relative_impulse_error"]) for x in r]
    fit = None  # the resampled fit of Table 1, when fit has written it
    t1 = os.path.join(out, "table1.csv")
    if os.path.exists(t1):
        fit = next((x for x in rows(t1) if x["model"] == "ap-newton"), None)
    fig, axes = plt.subplots(1, 3, figsize=(13, 4.2), gridspec_kw={"width_ratios": [1.35, 1, 1]})
    ax = axes[0]
    order = sorted(range(len(r)), key=lambda i: err[i])  # the worst on top
    lo = max(min(e for e in err if e > 0), 1e-6) if any(e > 0 for e in err) else 1e-6
    sc = ax.scatter([mu[i] for i in order], [eps[i] for i in order], c=[max(err[i], lo) for i in order], s=9,
                    cmap="viridis", norm=matplotlib.colors.LogNorm(vmin=lo, vmax=max(max(err), lo * 10)))
    fig.colorbar(sc, ax=ax, label="impulse error ‖P̂ − P‖ / ‖P‖ (per impact)")
    if fit is not None:
        ax.errorbar(float(fit["mu_mean"]), float(fit["eps_mean"]), xerr=float(fit["mu_std"]),
                    yerr=float(fit["eps_std"]), fmt="P", color="red", markersize=9, capsize=3,
                    label="resampled fit (Table 1, k = %s)" % fit["k"])
    ax.plot(PAPER["ap-newton"][0], PAPER["ap-newton"][2], "s", color="gray", label="paper, Table 1")
    ax.set_xlabel("friction mu")
    ax.set_ylabel("restitution eps")
    ax.set_title(f"a) AP Newton's best (mu, eps) per training impact ({len(r)})", fontsize=10)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7, loc="lower right")
    for ax, v, key, pk, label, tag in ((axes[1], mu, "mu", 0, "friction mu", "b"),
                                       (axes[2], eps, "eps", 2, "restitution eps", "c")):
        ax.hist(v, bins=40, color="C0", alpha=0.8)
        if fit is not None:
            ax.axvline(float(fit[f"{key}_mean"]), color="red", linewidth=1.5, label="resampled fit (Table 1)")
        ax.axvline(PAPER["ap-newton"][pk], color="gray", linestyle="--", linewidth=1.5, label="paper, Table 1")
        m = sum(v) / len(v)
        sd = math.sqrt(sum((x - m) ** 2 for x in v) / max(1, len(v) - 1))
        ax.set_title(f"{tag}) {key} per impact: mean {m:.3f}, std {sd:.3f}", fontsize=10)
        ax.set_xlabel(label)
        ax.set_ylabel("impacts")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=7)
    save(fig, out, "fig_params_each")


def boxes(ax, cols, data, title):
    vals = [[float(r[c]) for r in data if not math.isnan(float(r[c]))] for c in cols]
    try:  # matplotlib >= 3.10 names it orientation; Debian's 3.6 has only vert
        ax.boxplot(vals, orientation="horizontal", whis=(5, 95), showfliers=False)
    except TypeError:
        ax.boxplot(vals, vert=False, whis=(5, 95), showfliers=False)
    ax.set_yticks(range(1, len(cols) + 1))
    ax.set_yticklabels(cols)
    ax.set_xscale("log")
    ax.set_xlabel("normalized post-impact velocity error ‖v̂ − v‖ / ‖v‖ (box: quartiles, whiskers: 5-95%)")
    ax.set_title(title, fontsize=10)
    ax.grid(True, which="both", alpha=0.3)


def box_figure(out, name, title, stem, height):
    p = os.path.join(out, name)
    if not os.path.exists(p):
        return
    r = rows(p)
    cols = [c for c in r[0].keys() if c != "impact"]
    fig, ax = plt.subplots(figsize=(8, height))
    boxes(ax, cols, r, title.format(n=len(r)))
    save(fig, out, stem)


def curve(out):
    p = os.path.join(out, "learning_curve.csv")
    if not os.path.exists(p):
        return
    r = rows(p)
    fig, ax = plt.subplots(figsize=(7.5, 4.6))
    models = []
    for x in r:
        if x["size"] != "0" and x["model"] not in models:
            models.append(x["model"])
    for m in models:
        pts = {}
        for x in r:
            if x["model"] == m:
                pts.setdefault(int(x["size"]), []).append(float(x["mean_normalized_error"]))
        s = sorted(pts)
        mean = [sum(pts[k]) / len(pts[k]) for k in s]
        (line,) = ax.plot(s, mean, marker="o", label=m)
        ax.fill_between(s, [min(pts[k]) for k in s], [max(pts[k]) for k in s], color=line.get_color(), alpha=0.15)
    styles = iter(["--", ":", "-."])
    for x in r:
        if x["size"] == "0":
            ax.axhline(float(x["mean_normalized_error"]), color="k", linestyle=next(styles, "--"), linewidth=1, label=x["model"])
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("training impacts")
    ax.set_ylabel("mean normalized velocity error (test impacts)")
    ax.set_title("learning curves (Fig. 8): mean and range over seeds", fontsize=10)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)
    save(fig, out, "fig_learning_curve")


def ellipses(out):
    for p in sorted(glob.glob(os.path.join(out, "ellipse_*.csv"))):
        r = rows(p)
        fig, ax = plt.subplots(figsize=(8.2, 5.2))
        e = [(float(x["P_t"]), float(x["P_n"])) for x in r if x["kind"] == "ellipse"]
        ax.plot([a for a, _ in e] + [e[0][0]], [b for _, b in e] + [e[0][1]], color="k", linewidth=1,
                label="Energy Ellipse (alpha = 1)")
        markers = iter("ov^<>sD")
        for x in r:
            if x["kind"] == "model":
                ax.plot(float(x["P_t"]), float(x["P_n"]), next(markers), label=x["label"])
        for x in r:
            if x["kind"] == "irb":
                ax.plot(float(x["P_t"]), float(x["P_n"]), "*", markersize=14, color="gold", markeredgecolor="k", label="IRB bound")
            if x["kind"] == "observed":
                ax.plot(float(x["P_t"]), float(x["P_n"]), "x", markersize=10, color="k", label=x["label"])
        ax.axhline(0, color="gray", linewidth=0.5)
        ax.set_xlabel("P_t (N s)")
        ax.set_ylabel("P_n (N s)")
        i = os.path.basename(p)[len("ellipse_"):-4]
        ax.set_title(f"impulse space, test impact {i}", fontsize=10)
        ax.set_aspect("equal", adjustable="datalim")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.02, 0.5))
        save(fig, out, f"fig_ellipse_{i}")


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: impact_figures.py STUDY_DIR")
    out = sys.argv[1]
    if not os.path.exists(os.path.join(out, "study.json")):
        sys.exit(f"{out}: not a study folder (no study.json)")
    table1(out)
    box_figure(out, "errors_test.csv", "analytical models on {n} test impacts (Fig. 5)", "fig_errors", 4.2)
    params_each(out)
    box_figure(out, "errors_learned.csv", "learned models on {n} test impacts (Fig. 7)", "fig_learned", 4.4)
    curve(out)
    ellipses(out)


if __name__ == "__main__":
    figure_files.run(main)
