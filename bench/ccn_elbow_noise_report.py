#!/usr/bin/env python3
"""Tables of bench/ccn_elbow_noise.sh's runs (issue 16, the real elbow).

Every run RUNS/<method>_h<H>_<select>_n<N>_s<seed> holds valid.json (eval on
its validation tosses) and test.json (its test tosses). For each method the
setting (H, select) is chosen by the mean VALIDATION position error over the
seeds, among the settings with as many finished seeds as the most complete one; the
test figures are printed for every setting, the chosen one marked.
Usage: python3 bench/ccn_elbow_noise_report.py RUNS
"""
import json
import os
import re
import statistics
import sys


def main():
    runs = sys.argv[1] if len(sys.argv) > 1 else "runs"
    pat = re.compile(r"^(ccn-r|ccn|diffsim-r|diffsim|end-to-end)_h(\d+)_(loss|rollout)_n(\d+)_s(\d+)$")
    rows = {}
    missing = []
    for name in sorted(os.listdir(runs)):
        m = pat.match(name)
        if not m or not os.path.isdir(os.path.join(runs, name)):
            continue
        method, h, sel, n, seed = m.group(1), int(m.group(2)), m.group(3), int(m.group(4)), int(m.group(5))
        d = os.path.join(runs, name)
        try:
            v = json.load(open(os.path.join(d, "valid.json")))
            t = json.load(open(os.path.join(d, "test.json")))
            p = json.load(open(os.path.join(d, "params.json")))
        except (OSError, ValueError):
            missing.append(name)
            continue
        rows.setdefault((method, n), {}).setdefault((h, sel), []).append(
            dict(seed=seed, vpos=v["position_error_m"], vrot=v["rotation_error_deg"], pos=t["position_error_m"],
                 rot=t["rotation_error_deg"], vol=t.get("volume_error"), pen=t["penetration_m"],
                 mu=p.get("mu"), best=p.get("best_epoch"), div=t.get("diverged_tosses", 0)))

    def ms(xs, f="%.4f"):
        xs = [x for x in xs if x is not None]
        if not xs:
            return "n/a"
        if len(xs) == 1:
            return f % xs[0]
        return (f + " ± " + f) % (statistics.mean(xs), statistics.stdev(xs))

    for (method, n), settings in sorted(rows.items()):
        # only settings with every seed finished compete (a partial mean is not comparable)
        full = max(len(v) for v in settings.values())
        complete = [k for k in settings if len(settings[k]) == full]
        chosen = min(complete, key=lambda k: statistics.mean(r["vpos"] for r in settings[k]))
        print(f"\n### {method}, N = {n}\n")
        print("| H | select | seeds | valid pos. (m) | test pos. (m) | test rot. (deg) | volume err | pen. (mm) | mu | best epochs | diverged |")
        print("|---|---|---|---|---|---|---|---|---|---|---|")
        for k in sorted(settings):
            rs = sorted(settings[k], key=lambda r: r["seed"])
            mark = " **(chosen)**" if k == chosen else ""
            print(f"| {k[0]} | {k[1]}{mark} | {len(rs)} | {ms([r['vpos'] for r in rs])} | {ms([r['pos'] for r in rs])} | "
                  f"{ms([r['rot'] for r in rs], '%.1f')} | {ms([r['vol'] for r in rs], '%.3f')} | "
                  f"{ms([1e3 * r['pen'] for r in rs], '%.2f')} | {ms([r['mu'] for r in rs], '%.3f')} | "
                  f"{', '.join(str(r['best']) for r in rs)} | {sum(r['div'] for r in rs)} |")
    if missing:
        print("\nunfinished or unreadable runs: " + ", ".join(missing))


if __name__ == "__main__":
    main()
