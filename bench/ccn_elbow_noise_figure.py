#!/usr/bin/env python3
"""Figure of bench/results/ccn_elbow_noise_2026-11-25.md: the real elbow's test tosses
rolled out by trained runs, error against time (mean over the run's test tosses), and
how far the base travels after landing, recorded against predicted.

Usage: python3 bench/ccn_elbow_noise_figure.py OUT.png IMPULSE RUN:LABEL [RUN:LABEL ...]
IMPULSE is the CLI; each RUN's test tosses (its config.json split) are rolled out with
`impulse rollout` into a temporary folder. Needs numpy and matplotlib (Debian's python3).
"""
import csv
import json
import os
import subprocess
import sys
import tempfile

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402


def rollouts(impulse, run, tmp):
    test = json.load(open(os.path.join(run, "config.json")))["split"]["test"]
    out = []
    for t in test:
        path = os.path.join(tmp, "%s_%d.csv" % (os.path.basename(run.rstrip("/")), t))
        subprocess.run([impulse, "rollout", "--run", run, "--toss", str(t), "--out", path], check=True,
                       stdout=subprocess.DEVNULL)
        with open(path) as f:
            rows = list(csv.DictReader(f))
        out.append({k: np.array([float(r[k]) for r in rows]) for k in rows[0]})
    return out


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    png, impulse, specs = sys.argv[1], sys.argv[2], sys.argv[3:]
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    with tempfile.TemporaryDirectory() as tmp:
        for spec in specs:
            run, label = spec.rsplit(":", 1)
            rs = rollouts(impulse, run, tmp)
            T = min(len(r["step"]) for r in rs)
            t = rs[0]["t"][:T]
            pos = np.mean([r["position_error_m"][:T] for r in rs], axis=0)
            rot = np.mean([r["rotation_error_deg"][:T] for r in rs], axis=0)
            axes[0].plot(t, 100 * pos, label=label)
            axes[1].plot(t, rot, label=label)
            k = 20  # after landing (the tosses reach the table by about row 20)
            trav = lambda r, p: np.hypot(r[p + "x"][-1] - r[p + "x"][k], r[p + "y"][-1] - r[p + "y"][k])
            true = np.median([trav(r, "true_p") for r in rs])
            pred = np.median([trav(r, "p") for r in rs])
            print("%-40s %d tosses: mean position error %.4f m, rotation %.1f deg; base travel after row %d: "
                  "recorded %.0f mm, predicted %.0f mm (medians)" % (label, len(rs), pos[1:].mean(), rot[1:].mean(),
                                                                    k, 1e3 * true, 1e3 * pred))
    axes[0].set_xlabel("time (s)")
    axes[0].set_ylabel("base position error (cm)")
    axes[1].set_xlabel("time (s)")
    axes[1].set_ylabel("base rotation error (deg)")
    for a in axes:
        a.grid(alpha=0.3)
    axes[0].legend(fontsize=8)
    fig.suptitle("Real elbow, test tosses rolled out from their first state (mean over tosses)")
    fig.tight_layout()
    fig.savefig(png, dpi=110)
    print("wrote " + png)


if __name__ == "__main__":
    main()
