#!/usr/bin/env bash
# ContactNets Polytope and End-to-end on the real cube tosses for N = 16, 64, 256
# training tosses (seed 0, the 50/30/20 split, early stopping with patience 12),
# each evaluated on the same 114 test tosses; prints a markdown table.
#   bash bench/contactnets_real.sh [BUILD_DIR] [OUT_DIR] [MAX_SECONDS_PER_RUN]
set -euo pipefail
cd "$(dirname "$0")/.."
build="${1:-build}"
out="${2:-runs/real}"
limit="${3:-600}"
data="${IMPULSE_CUBE_DATA:-${IMPULSE_DATA:-../shared/data}/cube_toss/contact-nets/data/tosses_processed}"
if [ ! -d "$data" ]; then echo "real cube tosses absent (looked in $data): bash data/fetch.sh cube" >&2; exit 1; fi
mkdir -p "$out"
for n in 16 64 256; do
  for method in contactnets-polytope end-to-end; do
    run="$out/$method-$n"
    "$build/impulse" train --method "$method" --data "$data" --tosses "$n" --seed 0 \
      --out "$run" --epochs 200 --patience 12 --max-seconds "$limit" --threads 0 | tail -n 3
    "$build/impulse" eval --run "$run" --out "$run/metrics.json" --threads 0
  done
done
python3 - "$out" <<'PY'
import json, sys, os, csv
out = sys.argv[1]
print("| N | method | position error (m) | (% width) | rotation error (deg) | penetration (% width) | epochs | best epoch | s/epoch (training) |")
print("|---|---|---|---|---|---|---|---|---|")
for n in (16, 64, 256):
    for m in ("contactnets-polytope", "end-to-end"):
        run = os.path.join(out, f"{m}-{n}")
        mt = json.load(open(os.path.join(run, "metrics.json")))
        rows = list(csv.DictReader(open(os.path.join(run, "history.csv"))))[1:]
        best = json.load(open(os.path.join(run, "params.json")))["best_epoch"]
        ts = sorted(float(r["train_seconds"]) for r in rows)
        med = ts[len(ts) // 2] if ts else float("nan")
        print(f"| {n} | {m} | {mt['position_error_m']:.4f} | {mt['position_error_pct_width']:.1f} | "
              f"{mt['rotation_error_deg']:.2f} | {mt['penetration_pct_width']:.2f} | {len(rows)} | {best} | {med:.2f} |")
PY
