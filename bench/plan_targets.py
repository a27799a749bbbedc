#!/usr/bin/env python3
"""The planner over its target range (issue 48): `impulse plan --targets` for a grid of targets
(8 directions, 3 distances, 3 heights over the supported range) and each hand size, then a
table (validity per hand size, distance and height; times; starts used) and the validity map
as a figure: per hand size, the targets seen from above, filled when valid. Then capsule-turn
for a spread of turns (--turns) and each hand size, as a table.

    python3 bench/plan_targets.py --impulse build/impulse --out bench/results/plan_targets_DATE

Writes OUT/targets.csv (the grid), OUT/N<n>/ (the plans), OUT/turn_<deg>_N<n>/ (the turns),
OUT/plan_targets.md, OUT/plan_targets.png.
"""
import argparse
import csv
import json
import math
from concurrent.futures import ThreadPoolExecutor
import os
import subprocess
import sys


def write_atomic(path, text):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, path)


def grid():
    rows = []
    for d in (0.08, 0.16, 0.24):
        for k in range(8):
            a = math.radians(22.5 + 45 * k)
            for h in (0.045, 0.08, 0.115):
                rows.append((round(d * math.cos(a), 6), round(d * math.sin(a), 6), h))
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--impulse", default="build/impulse")
    ap.add_argument("--out", required=True)
    ap.add_argument("--fingers", default="3,4,5")
    ap.add_argument("--threads", default="0")
    ap.add_argument("--turns", default="45,-45,90,-90,135,180", help="capsule-turn's turns, degrees ('' for none)")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    targets = grid()
    tfile = os.path.join(a.out, "targets.csv")
    write_atomic(tfile, "x,y,z\n" + "".join("%g,%g,%g\n" % t for t in targets))
    results = {}
    for n in [int(x) for x in a.fingers.split(",")]:
        folder = os.path.join(a.out, "N%d" % n)
        summary = os.path.join(folder, "targets.csv")
        if not os.path.exists(summary):  # resumes: a finished hand size is not planned again
            print("plan_targets: N = %d, %d targets" % (n, len(targets)), flush=True)
            p = subprocess.run([a.impulse, "plan", "--targets", tfile, "--fingers", str(n), "--threads", a.threads,
                                "--out", folder, "--no-figures"])
            if p.returncode not in (0, 5):
                sys.exit("plan_targets: impulse plan failed (%d)" % p.returncode)
        results[n] = list(csv.DictReader(open(summary)))
    lines = ["# The planner over its target range", "",
             "`python3 bench/plan_targets.py` (`impulse plan --targets`, default options: 4 starts).",
             "Targets: 8 directions, horizontal distances 0.08/0.16/0.24 m, heights 0.045/0.08/0.115 m.", "",
             "| fingers | valid | first start valid | mean s | max s | worst plan / replay 1 / replay 2 final error (mm) |",
             "|---|---|---|---|---|---|"]
    for n, rows in results.items():
        v = sum(int(r["valid"]) for r in rows)
        first = sum(int(r["valid"]) and r["start"] == "1" for r in rows)
        secs = [float(r["seconds"]) for r in rows]
        worst = [max(float(r[k]) for r in rows) * 1e3 for k in
                 ("plan_final_error_m", "replay_forces_final_error_m", "replay_hand_final_error_m")]
        lines.append("| %d | %d/%d (%.0f%%) | %d | %.1f | %.1f | %.1f / %.1f / %.1f |" % (
            n, v, len(rows), 100.0 * v / len(rows), first, sum(secs) / len(secs), max(secs), *worst))
    lines += ["", "Per distance and height (valid of 8 directions, fingers %s):" % ",".join(map(str, results)), "",
              "| distance m | height m | " + " | ".join("N=%d" % n for n in results) + " |",
              "|---|---|" + "---|" * len(results)]
    for d in (0.08, 0.16, 0.24):
        for h in (0.045, 0.08, 0.115):
            cells = []
            for n, rows in results.items():
                sel = [r for r in rows if abs(math.hypot(float(r["x"]), float(r["y"])) - d) < 1e-3
                       and abs(float(r["z"]) - h) < 1e-6]
                cells.append("%d/%d" % (sum(int(r["valid"]) for r in sel), len(sel)))
            lines.append("| %.2f | %.3f | %s |" % (d, h, " | ".join(cells)))
    invalid = [(n, r) for n, rows in results.items() for r in rows if r["valid"] != "1"]
    if invalid:
        lines += ["", "Not valid:", ""]
        for n, r in invalid:
            lines.append("- N = %d, target (%s, %s, %s): final errors plan %.1f, replay 1 %.1f, replay 2 %.1f mm; gaps %.2f / %.2f mm" % (
                n, r["x"], r["y"], r["z"], 1e3 * float(r["plan_final_error_m"]), 1e3 * float(r["replay_forces_final_error_m"]),
                1e3 * float(r["replay_hand_final_error_m"]), 1e3 * float(r["worst_object_gap_m"]), 1e3 * float(r["worst_hand_gap_m"])))
    turns = [float(t) for t in a.turns.split(",") if t]
    if turns:
        def turn(job):
            deg, n = job
            folder = os.path.join(a.out, "turn_%g_N%d" % (deg, n))
            if not os.path.exists(os.path.join(folder, "summary.json")):  # resumes (run_plan writes it last)
                p = subprocess.run([a.impulse, "plan", "--task", "capsule-turn", "--turn=%g" % deg, "--fingers", str(n),
                                    "--out", folder, "--no-figures"], stdout=subprocess.DEVNULL)
                if p.returncode not in (0, 5):
                    sys.exit("plan_targets: impulse plan --task capsule-turn --turn %g failed (%d)" % (deg, p.returncode))
            return deg, n, json.load(open(os.path.join(folder, "summary.json")))
        jobs = [(deg, n) for n in results for deg in turns]
        with ThreadPoolExecutor(2) as ex:
            done = list(ex.map(turn, jobs))
        lines += ["", "## capsule-turn", "",
                  "`impulse plan --task capsule-turn --turn DEG --fingers N` (lifted 5 cm above the start, turned; "
                  "valid: both ends of the axis within 1 cm of the target's in the plan and both replays, contacts, cones).", "",
                  "| turn ° | " + " | ".join("N=%d" % n for n in results) + " |", "|---|" + "---|" * len(results)]
        for deg in turns:
            cells = []
            for d, n, sm in done:
                if d != deg:
                    continue
                e = sm["criteria"]["final_ends_error_m"]
                cells.append("%s (ends %.1f / %.1f mm, start %d, %.1f s)" % (
                    "valid" if sm["success"] else "**not**", 1e3 * e["replay_forces"], 1e3 * e["replay_hand"], sm["start"], sm["seconds"]))
            lines.append("| %g | %s |" % (deg, " | ".join(cells)))
        v = sum(sm["success"] for _, _, sm in done)
        lines += ["", "capsule-turn: %d of %d valid." % (v, len(done))]
    write_atomic(os.path.join(a.out, "plan_targets.md"), "\n".join(lines) + "\n")
    print("\n".join(lines))
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("plan_targets: figure skipped (matplotlib not found)")
        return
    fig, axes = plt.subplots(1, len(results), figsize=(4.2 * len(results), 4.4), squeeze=False)
    for ax, (n, rows) in zip(axes[0], results.items()):
        for r in rows:
            x, y, z = float(r["x"]), float(r["y"]), float(r["z"])
            ang = math.atan2(y, x)
            # the three heights side by side, turned a little about the direction
            off = {0.045: -1, 0.08: 0, 0.115: 1}[round(z, 3)] * 0.12
            rad = math.hypot(x, y)
            px, py = rad * math.cos(ang + off), rad * math.sin(ang + off)
            ok = r["valid"] == "1"
            ax.scatter([px], [py], s=30 + 500 * (z - 0.03), facecolors="tab:green" if ok else "none",
                       edgecolors="tab:green" if ok else "tab:red", linewidths=1.5)
        ax.scatter([0], [0], marker="s", color="k", s=30)
        for d in (0.05, 0.25):
            ax.add_patch(plt.Circle((0, 0), d, fill=False, ls="--", color="0.6"))
        v = sum(int(r["valid"]) for r in rows)
        ax.set_title("N = %d fingers: %d/%d valid" % (n, v, len(rows)))
        ax.set_aspect("equal")
        ax.set_xlim(-0.28, 0.28)
        ax.set_ylim(-0.28, 0.28)
        ax.set_xlabel("target x (m)")
        ax.set_ylabel("target y (m)")
    fig.suptitle("impulse plan over the target range (start: black square; dashed: 0.05 and 0.25 m;\n"
                 "filled = valid, hollow red = not; marker size = height 0.045/0.08/0.115 m, left to right)", fontsize=9)
    fig.tight_layout()
    fig.savefig(os.path.join(a.out, "plan_targets.png"), dpi=110)
    print("plan_targets: wrote", os.path.join(a.out, "plan_targets.png"))


if __name__ == "__main__":
    main()
