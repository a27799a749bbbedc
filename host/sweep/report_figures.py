#!/usr/bin/env python3
"""Draws the figures of `impulse report` from its figures.json (host/sweep/report.h).

    python3 report_figures.py OUT/figures.json

- fig_<metric>.png/.svg: the metric against training tosses (log scales), one line
  (geometric mean) and band (95% interval) per series (method, system, ...),
  from table.csv;
- training_curves.png/.svg: training and validation loss per epoch, every run,
  coloured by series;
- <rollout>.png/.svg: a rollout's base position (x, y, z) and its error over time,
  true against predicted.

Each file is written whole or not at all (io/figure_files.py): a full disk or a
folder that cannot be written ends the script with one line naming the file and
the reason, and status 1.
"""
import csv
import json
import math
import os
import sys

sys.dont_write_bytecode = True  # no __pycache__ beside the sources
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "io"))
import figure_files  # noqa: E402

import matplotlib  # noqa: E402

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import matplotlib.ticker  # noqa: E402

LABELS = {
    "position_error_m": "position error (m)",
    "rotation_error_deg": "rotation error (deg)",
    "penetration_m": "penetration (m)",
    "position_error_pct_width": "position error (% of width)",
    "penetration_pct_width": "penetration (% of width)",
    "volume_error": "volume error (fraction of true volume)",
    "friction_error": "friction error |mu - mu_true|",
    "inertia_error": "inertia error (normalized)",
}


def save(fig, stem):
    fig.tight_layout()
    for ext in ("png", "svg"):
        figure_files.save(fig, f"{stem}.{ext}", dpi=130)
    plt.close(fig)
    print(f"wrote {stem}.png, {stem}.svg")


def num(s):
    try:
        return float(s)
    except (TypeError, ValueError):
        return math.nan


def metric_figures(man):
    rows = list(csv.DictReader(open(man["table"])))
    xk = man.get("x_key") or ""
    sk = man.get("series_keys") or []
    for metric in man["metrics"]:
        mrows = [r for r in rows if r["metric"] == metric and int(r["n"]) > 0]
        if not mrows:
            continue
        series = {}
        for r in mrows:
            label = ", ".join(r[k] for k in sk) if sk else "runs"
            series.setdefault(label, []).append(r)
        fig, ax = plt.subplots(figsize=(6.4, 4.4))
        positive = all(num(r["mean"]) > 0 for r in mrows)
        for label, rs in series.items():
            if xk:
                rs = sorted(rs, key=lambda r: num(r[xk]))
                x = [num(r[xk]) for r in rs]
            else:
                x = list(range(len(rs)))
            y = [num(r["mean"]) for r in rs]
            lo = [num(r["ci_low"]) for r in rs]
            hi = [num(r["ci_high"]) for r in rs]
            (line,) = ax.plot(x, y, marker="o", label=label)
            band = [(a, b, c) for a, b, c in zip(x, lo, hi) if not (math.isnan(b) or math.isnan(c))]
            if band:
                bx, bl, bh = zip(*band)
                if positive:
                    bl = [max(v, 1e-12) for v in bl]
                ax.fill_between(bx, bl, bh, color=line.get_color(), alpha=0.2, linewidth=0)
        if xk:
            ax.set_xscale("log", base=2)
            xs = sorted({num(r[xk]) for r in mrows})
            ax.set_xticks(xs)
            ax.set_xticklabels([f"{v:g}" for v in xs])
            ax.minorticks_off()
            ax.set_xlabel("training tosses" if xk == "tosses" else xk)
        if positive:
            ax.set_yscale("log")
            plain = matplotlib.ticker.FuncFormatter(lambda v, _: f"{v:g}")
            ax.yaxis.set_major_formatter(plain)
            ax.yaxis.set_minor_formatter(plain)
            ax.tick_params(axis="y", which="minor", labelsize=7)
        ax.set_ylabel(LABELS.get(metric, metric))
        n = max(int(r["n"]) for r in mrows)
        ax.set_title(f"{LABELS.get(metric, metric)}: geometric mean, 95% interval (up to {n} seeds)", fontsize=9)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
        save(fig, os.path.join(man["out"], f"fig_{metric}"))


def training_curves(man):
    hs = man.get("histories") or []
    if not hs:
        return
    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    colours = {}
    cycle = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    labelled = set()
    for h in hs:
        if not os.path.exists(h["csv"]):
            continue
        rows = list(csv.DictReader(open(h["csv"])))
        if not rows:
            continue
        s = h.get("series", h["label"])
        c = colours.setdefault(s, cycle[len(colours) % len(cycle)])
        for ax, key in zip(axes, ("train_loss", "valid_loss")):
            # epoch 0 is the initial guess: validated, not trained
            pts = [(int(r["epoch"]), num(r[key])) for r in rows if key == "valid_loss" or int(r["epoch"]) > 0]
            if not pts:
                continue
            ax.plot([p[0] for p in pts], [p[1] for p in pts], color=c, alpha=0.7, linewidth=1,
                    marker="." if len(pts) < 15 else None, label=s if (s, key) not in labelled else None)
            labelled.add((s, key))
    for ax, title in zip(axes, ("training loss", "validation loss")):
        ax.set_xlabel("epoch")
        ax.xaxis.set_major_locator(matplotlib.ticker.MaxNLocator(integer=True))
        ax.set_ylabel("loss (the method's own)")
        ax.set_title(title)
        ax.grid(True, alpha=0.3)
        ys = [v for line in ax.get_lines() for v in line.get_ydata() if not math.isnan(v)]
        if ys and min(ys) > 0:
            ax.set_yscale("log")
        ax.legend(fontsize=7)
    save(fig, os.path.join(man["out"], "training_curves"))


def column(rows, *names):
    for n in names:
        if n in rows[0]:
            return [num(r[n]) for r in rows]
    return None


def rollout_figure(ro):
    rows = list(csv.DictReader(open(ro["csv"])))
    if not rows:
        return
    t = column(rows, "t")
    fig, axes = plt.subplots(1, 4, figsize=(14, 3.4))
    for ax, c in zip(axes[:3], "xyz"):
        pred = column(rows, f"p{c}")
        true = column(rows, f"p{c}_true", f"true_p{c}")
        ax.plot(t, true, color="k", linewidth=1.5, label="true (data)")
        ax.plot(t, pred, color="tab:red", linestyle="--", linewidth=1.5, label="predicted")
        ax.set_xlabel("t (s)")
        ax.set_ylabel(f"base {c} (m)")
        ax.grid(True, alpha=0.3)
    axes[0].legend(fontsize=8)
    err = column(rows, "position_error_m")
    if err is None:
        px, py, pz = (column(rows, f"p{c}") for c in "xyz")
        tx, ty, tz = (column(rows, f"p{c}_true", f"true_p{c}") for c in "xyz")
        err = [math.sqrt((a - d) ** 2 + (b - e) ** 2 + (c - f) ** 2)
               for a, b, c, d, e, f in zip(px, py, pz, tx, ty, tz)]
    axes[3].plot(t, err, color="tab:blue")
    axes[3].set_xlabel("t (s)")
    axes[3].set_ylabel("position error (m)")
    axes[3].grid(True, alpha=0.3)
    fig.suptitle(f"rollout from the first state: {ro['label']}", fontsize=10)
    save(fig, ro["png"])


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: report_figures.py FIGURES.json")
    man = json.load(open(sys.argv[1]))
    if man.get("table"):
        metric_figures(man)
    training_curves(man)
    for ro in man.get("rollouts") or []:
        rollout_figure(ro)


if __name__ == "__main__":
    figure_files.run(main)
