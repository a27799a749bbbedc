#!/usr/bin/env python3
"""Draws the figures of `impulse report` from its figures.json (host/sweep/report.h).

    python3 report_figures.py OUT/figures.json

- fig_<metric>.png/.svg: the metric against training tosses (log scales), one line
  (geometric mean) and band (95% interval) per series (method, system, ...),
  from table.csv;
- training_curves.png/.svg: one axes per loss (each method's own; a run that picks
  its best epoch by validation rollouts adds one for them), training and validation
  on the same axes, each run's best epoch (params.json's best_epoch) marked, the
  method in the title and legend; a run without a validation curve says so;
- <rollout>.png/.svg: a rollout's base position (x, y, z) beside its rotation (the
  angle turned since the first state), true against predicted, and both errors over
  time below.

Every PNG and SVG carries what it shows in its Description (io/figure_files.py).

Each file is written whole or not at all (io/figure_files.py): a full disk or a
folder that cannot be written ends the script with one line naming the file and
the reason, and status 1.
"""
import csv
import json
import math
import os
import re
import sys

sys.dont_write_bytecode = True  # no __pycache__ beside the sources
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "io"))
import figure_files  # noqa: E402

import matplotlib  # noqa: E402

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import matplotlib.ticker  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402

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


def history_rows(h):
    if not os.path.exists(h["csv"]):
        return []
    with open(h["csv"], newline="") as f:
        return list(csv.DictReader(f))


def selection_key(h):
    """the history column that picks the run's best epoch (trainer.cc)"""
    return "valid_position_error_m" if h.get("select") == "rollout" else "valid_loss"


def best_epoch(h, rows):
    """the epoch the run kept (params.json's best_epoch, from figures.json); without it
    the trainer's rule: the first epoch with the lowest validation figure"""
    b = h.get("best_epoch")
    if isinstance(b, int) and any(int(r["epoch"]) == b for r in rows):
        return b
    key = selection_key(h)
    best = None
    for r in rows:
        v = num(r.get(key))
        if not math.isnan(v) and (best is None or v < best[1]):
            best = (int(r["epoch"]), v)
    return best[0] if best else None


def no_validation(h, rows):
    """why the run has no validation curve, or None"""
    if h.get("valid_tosses") == 0:
        return "no validation curve: the run has no validation tosses"
    if not rows or "valid_loss" not in rows[0] or all(math.isnan(num(r["valid_loss"])) for r in rows):
        return "no validation curve: history.csv has no validation loss"
    return None


def curve_panel(ax, method, runs, kind):
    """one loss (kind "loss": the method's own; "rollout": the validation rollouts' position
    error, what --select rollout picks by): train and validation on the same axes, the
    best epoch of each run marked. Every line is labelled (figure_files.describe() lists
    them); the legend shows the styles, the method and, for a few runs, their colours."""
    single = len(runs) == 1
    name = method or "the run"
    cycle = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    cmap = plt.get_cmap("viridis")
    per_run_legend = not single and len(runs) <= 8
    legend = []  # (handle, text)
    notes = []
    for i, (h, rows) in enumerate(runs):
        if single:
            c_train, c_valid = "tab:blue", "tab:orange"
        elif len(runs) <= len(cycle):
            c_train = c_valid = cycle[i]
        else:
            c_train = c_valid = cmap(i / max(1, len(runs) - 1))
        who = name if single else h["label"]
        width, alpha = (1.5, 1) if single else (1, 0.8)
        run_handle = None
        if kind == "loss":
            # epoch 0 is the initial guess: validated, not trained
            pts = [(int(r["epoch"]), num(r["train_loss"])) for r in rows if int(r["epoch"]) > 0]
            pts = [p for p in pts if not math.isnan(p[1])]
            if pts:
                (run_handle,) = ax.plot([p[0] for p in pts], [p[1] for p in pts], color=c_train, linewidth=width,
                                        alpha=alpha, marker="." if len(pts) < 15 else None, label=f"{who}: train")
                if single:
                    legend.append((run_handle, f"{name}: train"))
        vkey = "valid_loss" if kind == "loss" else "valid_position_error_m"
        why = no_validation(h, rows) if kind == "loss" else None
        vpts = [] if why else [(int(r["epoch"]), num(r.get(vkey))) for r in rows]
        vpts = [p for p in vpts if not math.isnan(p[1])]
        vname = "validation" if kind == "loss" else "validation rollouts"
        if why:
            notes.append(why if single else f"{h['label']}: {why}")
        elif vpts:
            (vh,) = ax.plot([p[0] for p in vpts], [p[1] for p in vpts], color=c_valid, linestyle="--",
                            linewidth=width, alpha=alpha, marker="." if len(vpts) < 15 else None,
                            label=f"{who}: {vname}")
            run_handle = run_handle or vh
            if single:
                legend.append((vh, f"{name}: {vname}"))
        if per_run_legend and run_handle is not None:
            # the run's name less its method (the axes' own): "tosses-8_seed-0"
            legend.append((run_handle, re.sub(r"(^|_)method-[^_]*", "", h["label"]).strip("_") or h["label"]))
        b = best_epoch(h, rows)
        if b is None:
            continue
        by = "validation rollouts" if h.get("select") == "rollout" else "validation loss"
        if single:
            vl = ax.axvline(b, color="grey", linestyle=":", linewidth=1.2,
                            label=f"best epoch {b} (lowest {by})" if not why
                            else f"best epoch {b} (kept: no validation to choose by)")
            legend.append((vl, vl.get_label()))
            epochs = [int(r["epoch"]) for r in rows]
            right = b > (min(epochs) + max(epochs)) / 2  # the label on the side with room
            ax.annotate(f"best epoch {b}", xy=(b, 1.0), xycoords=("data", "axes fraction"),
                        xytext=(-3 if right else 3, -12), textcoords="offset points", fontsize=8,
                        color="dimgrey", ha="right" if right else "left")
        at = [v for e, v in vpts if e == b]
        if at:
            ax.plot([b], [at[0]], linestyle="none", marker="*", markersize=13 if single else 9, color=c_valid,
                    markeredgecolor="k", markeredgewidth=0.6, zorder=5, label=f"best epoch {b}: {h['label']}")
    if not single:
        # the line styles, the marker and the method, once
        proxies = []
        if kind == "loss":
            proxies.append(Line2D([], [], color="k", label=f"{name}: train"))
        proxies.append(Line2D([], [], color="k", linestyle="--", label=f"{name}: {'validation' if kind == 'loss' else 'validation rollouts'}"))
        proxies.append(Line2D([], [], color="k", linestyle="none", marker="*", markersize=9,
                              label="best epoch (each run's)"))
        legend = [(p, p.get_label()) for p in proxies] + legend
    # below the axes: clear of the curves and of the best epoch's label at the top
    ax.legend([hd for hd, _ in legend], [t for _, t in legend], fontsize=8 if single else 7, loc="upper center",
              bbox_to_anchor=(0.5, -0.14), ncol=2 if single or len(legend) <= 8 else 3, frameon=False)
    for i, note in enumerate(notes[:6]):
        ax.text(0.5, 0.5 - 0.07 * i, note, transform=ax.transAxes, ha="center", va="center", fontsize=8,
                color="tab:red", bbox=dict(facecolor="white", alpha=0.85, edgecolor="none"))
    if len(notes) > 6:
        ax.text(0.5, 0.5 - 0.07 * 6, f"and {len(notes) - 6} more runs without validation", transform=ax.transAxes,
                ha="center", fontsize=8, color="tab:red")
    ax.set_xlabel("epoch")
    ax.xaxis.set_major_locator(matplotlib.ticker.MaxNLocator(integer=True))
    if kind == "loss":
        ax.set_ylabel(f"{name} loss (per transition)" if method else "loss (the method's own)")
        what = "training and validation loss"
    else:
        ax.set_ylabel("validation rollouts' position error (m)")
        what = "validation rollouts (--select rollout)"
    ax.set_title(f"{name}: {what}" + ("" if single else f", {len(runs)} runs"), fontsize=10)
    ax.grid(True, alpha=0.3)
    ys = [v for line in ax.get_lines() if not line.get_label().startswith("best epoch ")
          for v in figure_files.finite(line.get_ydata())]
    if ys and min(ys) > 0:
        ax.set_yscale("log")
        plain = matplotlib.ticker.FuncFormatter(lambda v, _: f"{v:g}")
        ax.yaxis.set_major_formatter(plain)
        # minor labels only within a decade (beyond it they crowd the axis)
        ax.yaxis.set_minor_formatter(plain if max(ys) <= 10 * min(ys) else matplotlib.ticker.NullFormatter())
        ax.tick_params(axis="y", which="both", labelsize=8)


def training_curves(man):
    """training_curves.png/.svg: one axes per loss (each method's own; runs selected by
    rollouts get a second one for the validation rollouts), train and validation on it,
    every run's best epoch marked"""
    runs = []
    for h in man.get("histories") or []:
        rows = history_rows(h)
        if rows:
            runs.append((h, rows))
    if not runs:
        return
    methods = []
    for h, _ in runs:
        if h.get("method", "") not in methods:
            methods.append(h.get("method", ""))
    panels = []
    for m in methods:
        mine = [(h, rows) for h, rows in runs if h.get("method", "") == m]
        panels.append((m, mine, "loss"))
        by_rollout = [(h, rows) for h, rows in mine
                      if h.get("select") == "rollout" and rows and "valid_position_error_m" in rows[0]]
        if by_rollout:
            panels.append((m, by_rollout, "rollout"))
    ncols = min(len(panels), 3)
    nrows = (len(panels) + ncols - 1) // ncols
    w, hgt = (7.0, 4.6) if len(runs) == 1 else (6.4, 5.4)
    fig, axes = plt.subplots(nrows, ncols, figsize=(w * ncols, hgt * nrows), squeeze=False)
    flat = [ax for row in axes for ax in row]
    for ax, (m, mine, kind) in zip(flat, panels):
        curve_panel(ax, m, mine, kind)
    for ax in flat[len(panels):]:
        fig.delaxes(ax)
    if len(runs) == 1:
        fig.suptitle(f"training curves: {runs[0][0]['label']}", fontsize=11)
    else:
        fig.suptitle(f"training curves: {len(runs)} runs, one axes per loss", fontsize=11)
    save(fig, os.path.join(man["out"], "training_curves"))


def column(rows, *names):
    for n in names:
        if n in rows[0]:
            return [num(r[n]) for r in rows]
    return None


def quaternions(rows, true):
    names = [(f"q{c}_true", f"true_q{c}") if true else (f"q{c}",) for c in "wxyz"]
    cols = [column(rows, *n) for n in names]
    if any(c is None for c in cols):
        return None
    return list(zip(*cols))


def angle_deg(a, b):
    """the rotation between two unit quaternions, degrees (q and -q the same)"""
    na = math.sqrt(sum(x * x for x in a))
    nb = math.sqrt(sum(x * x for x in b))
    if not (na > 0 and nb > 0):
        return math.nan
    d = abs(sum(x * y for x, y in zip(a, b))) / (na * nb)
    return math.degrees(2 * math.acos(min(1.0, d)))


def rollout_figure(ro):
    """<rollout>.png/.svg: position (left) and rotation (right), true against predicted
    (top) and their errors over time (bottom)"""
    rows = list(csv.DictReader(open(ro["csv"])))
    if not rows:
        return
    t = column(rows, "t")
    fig, axes = plt.subplots(2, 2, figsize=(11, 6.6), sharex=True)
    (ax_p, ax_r), (ax_pe, ax_re) = axes
    for i, c in enumerate("xyz"):
        pred = column(rows, f"p{c}")
        true = column(rows, f"p{c}_true", f"true_p{c}")
        ax_p.plot(t, true, color=f"C{i}", linewidth=1.6, label=c)
        ax_p.plot(t, pred, color=f"C{i}", linestyle="--", linewidth=1.6)
    ax_p.set_ylabel("base position (m)")
    ax_p.set_title("position: true (solid) and predicted (dashed)", fontsize=10)
    styles = [Line2D([], [], color="k", label="true (data)"), Line2D([], [], color="k", linestyle="--", label="predicted")]
    h, lbl = ax_p.get_legend_handles_labels()
    ax_p.legend(h + styles, lbl + [s.get_label() for s in styles], fontsize=8, ncol=2)

    qp, qt = quaternions(rows, False), quaternions(rows, True)
    if qp and qt:
        ax_r.plot(t, [angle_deg(q, qt[0]) for q in qt], color="k", linewidth=1.6, label="true (data)")
        ax_r.plot(t, [angle_deg(q, qp[0]) for q in qp], color="tab:red", linestyle="--", linewidth=1.6,
                  label="predicted")
        ax_r.legend(fontsize=8)
    else:
        ax_r.text(0.5, 0.5, "no orientations in the rollout CSV", transform=ax_r.transAxes, ha="center")
    ax_r.set_ylabel("rotation from the first state (deg)")
    ax_r.set_title("rotation: angle turned since the first state", fontsize=10)

    err = column(rows, "position_error_m")
    if err is None:
        px, py, pz = (column(rows, f"p{c}") for c in "xyz")
        tx, ty, tz = (column(rows, f"p{c}_true", f"true_p{c}") for c in "xyz")
        err = [math.sqrt((a - d) ** 2 + (b - e) ** 2 + (c - f) ** 2)
               for a, b, c, d, e, f in zip(px, py, pz, tx, ty, tz)]
    ax_pe.plot(t, err, color="tab:blue", label="position error")
    ax_pe.set_ylabel("position error (m)")
    ax_pe.set_title("position error", fontsize=10)
    rerr = column(rows, "angle_error_deg", "rotation_error_deg")
    if rerr is None and qp and qt:
        rerr = [angle_deg(a, b) for a, b in zip(qp, qt)]
    if rerr is not None:
        ax_re.plot(t, rerr, color="tab:purple", label="rotation error")
    ax_re.set_ylabel("rotation error (deg)")
    ax_re.set_title("rotation error", fontsize=10)
    for ax in (ax_p, ax_r, ax_pe, ax_re):
        ax.grid(True, alpha=0.3)
    for ax in (ax_pe, ax_re):
        ax.set_xlabel("t (s)")
    tail = ""
    if err and rerr:
        pe, re_ = figure_files.finite(err), figure_files.finite(rerr)
        if pe and re_:
            tail = f" (mean over the steps: position {sum(pe) / len(pe):.3g} m, rotation {sum(re_) / len(re_):.3g} deg)"
    fig.suptitle(f"rollout from the first state: {ro['label']}{tail}", fontsize=10)
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
