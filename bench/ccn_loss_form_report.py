#!/usr/bin/env python3
"""Tables of bench/ccn_loss_form.sh's runs: one row per (run group, binary tag), mean ± sample
std over the seeds found. Tags: new (this loss), old (the printed-form build), all (the whole
elbow split and End-to-end), nominal (the published model, nothing trained).

    python3 bench/ccn_loss_form_report.py CCN_WORK
"""
import glob, json, os, re, sys

import numpy as np


def main(work):
    rows = {}
    for path in sorted(glob.glob(os.path.join(work, "runs", "*", "metrics.json"))):
        run = os.path.dirname(path)
        tag, rest = os.path.basename(run).split("_", 1)
        group = re.sub(r"_s\d+$", "", rest)
        m = json.load(open(path))
        p = json.load(open(os.path.join(run, "params.json")))
        inertia = [np.mean(np.linalg.eigvalsh(np.array(l["inertia_com_kgm2"]))) for l in p.get("links", [])]
        rows.setdefault((group, tag), []).append([
            m["position_error_m"], m["rotation_error_deg"], 100 * m.get("volume_error", np.nan),
            1000 * m["penetration_m"], m.get("mu", np.nan), m.get("friction_error", np.nan),
            m.get("inertia_error", np.nan), np.mean(inertia) if inertia else np.nan])
    print("| runs | tag | seeds | pos. err (m) | rot. err (deg) | volume err (%) | penetration (mm) "
          "| mu | friction err | inertia err | mean principal inertia (kg m^2) |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for (group, tag), v in sorted(rows.items()):
        a = np.array(v)
        cell = lambda i, f: (f % a[:, i].mean()) + ((" ± " + f % a[:, i].std(ddof=1)) if len(a) > 1 else "")
        print("| %s | %s | %d | %s | %s | %s | %s | %s | %s | %s | %.2g |" % (
            group, tag, len(a), cell(0, "%.4f"), cell(1, "%.1f"), cell(2, "%.1f"), cell(3, "%.2f"),
            cell(4, "%.3f"), cell(5, "%.3f"), cell(6, "%.3f"), a[:, 7].mean()))


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
