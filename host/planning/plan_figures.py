#!/usr/bin/env python3
"""Figures of one `impulse plan` folder (host/planning/plan_report.h): reads plan.csv,
replay.csv, stages.csv and summary.json, writes plan_path.png (the object's path, planned
and replayed, side and top views), plan_weights.png (each contact's c over time) and
plan_stages.png (the cost terms after each continuation stage). Needs matplotlib."""
import csv
import json
import os
import sys

sys.dont_write_bytecode = True  # no __pycache__ beside the sources
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "io"))
import figure_files  # noqa: E402  (each figure whole or not at all)

import matplotlib  # noqa: E402

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def read_csv(path):
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    if not rows:
        sys.exit(f"{path}: no rows")
    return rows


def col(rows, name):
    return [float(r[name]) for r in rows]


def main(folder):
    summary = json.load(open(os.path.join(folder, "summary.json")))
    plan = read_csv(os.path.join(folder, "plan.csv"))
    replay = read_csv(os.path.join(folder, "replay.csv"))
    stages = read_csv(os.path.join(folder, "stages.csv"))
    target = summary["task"]["target"]
    crit = summary["criteria"]
    title = (f"{summary['task']['fingers']} fingers, method {summary['method']}: "
             f"{'valid' if summary['success'] else 'NOT valid'}")

    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
    for ax, (a, b) in zip(axes, [("x", "z"), ("x", "y")]):
        for key, label, style in [("planned", "plan", "k-"),
                                  ("replay_forces", f"replay 1, all planned forces (final {crit['replay_forces']['final_error_m'] * 1e3:.1f} mm)", "C0--"),
                                  ("replay_hand", f"replay 2, kinematic hand (final {crit['replay_hand']['final_error_m'] * 1e3:.1f} mm)", "C1-."),
                                  ("replay_hand_forces_only", f"replay 1 strict, hand forces only (final {crit['replay_forces_strict_hand_only']['final_error_m'] * 1e3:.1f} mm)", "C2:")]:
            ax.plot(col(replay, f"{key}_{a}"), col(replay, f"{key}_{b}"), style, label=label, marker="." if key == "planned" else None)
        ia, ib = "xyz".index(a), "xyz".index(b)
        ax.plot([target[ia]], [target[ib]], "r*", markersize=12, label="target")
        ax.set_xlabel(f"{a} (m)")
        ax.set_ylabel(f"{b} (m)")
        ax.set_aspect("equal", adjustable="datalim")
        ax.locator_params(axis="x", nbins=6)
        ax.grid(alpha=0.3)
    axes[0].set_title("object centre, side view")
    axes[1].set_title("top view")
    axes[0].legend(fontsize=7, loc="best")
    fig.suptitle(title)
    fig.tight_layout()
    figure_files.save(fig, os.path.join(folder, "plan_path.png"), dpi=120)
    plt.close(fig)

    names = [k[:-2] for k in plan[0] if k.endswith("_c")]
    t = col(plan, "t")
    fig, ax = plt.subplots(figsize=(7, 3.8))
    for i, n in enumerate(names):
        ax.step(t, col(plan, f"{n}_c"), where="post", label=n, color=f"C{i}", linestyle="-" if not n.startswith("ground") else "--")
    ax.axhline(0.5, color="grey", linewidth=0.8, linestyle=":")
    ax.set_xlabel("t (s)")
    ax.set_ylabel("contact weight c")
    ax.set_ylim(-0.05, 1.05)
    ax.set_title(f"contact weights ({title}); c > 0.5 counts as active")
    ax.legend(fontsize=7, ncol=2)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    figure_files.save(fig, os.path.join(folder, "plan_weights.png"), dpi=120)
    plt.close(fig)

    fig, ax = plt.subplots(figsize=(7, 3.8))
    st = [int(r["stage"]) for r in stages]
    for term in ["contact_invariance", "physics", "task", "penetration", "reach", "smoothness", "total"]:
        ax.semilogy(st, [max(float(r[term]), 1e-12) for r in stages], marker="o", label=term,
                    linewidth=2 if term == "total" else 1)
    ax.set_xticks(st)
    ax.set_xticklabels([f"{s}\n({float(r['contact_weight']):g}, {float(r['physics_weight']):g})" for s, r in zip(st, stages)], fontsize=7)
    ax.set_xlabel("stage (contact, physics weights)")
    ax.set_ylabel("weighted cost after the stage")
    ax.set_title("cost terms per continuation stage")
    ax.legend(fontsize=7, ncol=2)
    ax.grid(alpha=0.3, which="both")
    fig.tight_layout()
    figure_files.save(fig, os.path.join(folder, "plan_stages.png"), dpi=120)
    plt.close(fig)
    print(f"plan figures: {folder}/plan_path.png, plan_weights.png, plan_stages.png")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: plan_figures.py PLAN_FOLDER")
    figure_files.run(main, sys.argv[1])
