#!/usr/bin/env bash
# CCN's gravity scenario (issue 16) over the whole factor range: synthetic elbow tosses
# simulated with gravity f * 9.81 while every model assumes 9.81, f in [0, 2]; CCN, CCN-R,
# DiffSim-R and End-to-end trained on N = 64 tosses, 3 seeds each (the runs of
# bench/results/ccn_gravity_2026-11-27.md: 108, about 15 min on 2 cores).
#
#   bench/ccn_gravity_sweep.sh                                   # every run, resumable
#   python3 bench/ccn_report.py "$CCN_WORK" --tag ccn_gravity_DATE  # tables and figure
#
# Environment:
#   IMPULSE   the CLI (default: a copy of build/impulse, made once per CCN_WORK and kept
#             with its commit in bin/impulse.commit, so a resumed sweep keeps its binary)
#   CCN_WORK  runs, logs and data (default /tmp/ccn_gravity; no whitespace in it); nothing
#             goes into the repo
#   FACTORS   the gravity factors (default "0 0.25 0.5 0.75 1 1.25 1.5 1.75 2")
#   METHODS   default "ccn ccn-r diffsim-r end-to-end"
#   SEEDS     default "1 2 3"
#   JOBS      training jobs at once (default 1; each --threads 1)
# Protocol as bench/results/ccn_loss_form_2026-11-25.md: one generated set of 128 tosses
# per factor (generate-tosses --seed 7), --tosses 64 --epochs 15 --patience 5; every
# number the report prints is the run's own test split, and nothing is chosen on it.
# A run with metrics.json is skipped; each run's train and eval exit codes are kept in
# logs/NAME.train.rc and logs/NAME.eval.rc, and every run of the sweep without a
# metrics.json is named at the end (exit status 1).
set -uo pipefail
HERE=$(cd "$(dirname "$0")/.." && pwd)
W=${CCN_WORK:-/tmp/ccn_gravity}
mkdir -p "$W/runs" "$W/data" "$W/logs" "$W/bin"
if [ -z "${IMPULSE:-}" ]; then
  if [ ! -x "$W/bin/impulse" ]; then
    cp "$HERE/build/impulse" "$W/bin/impulse" || { echo "no build/impulse to copy: build the project first" >&2; exit 1; }
    git -C "$HERE" rev-parse HEAD > "$W/bin/impulse.commit" 2>/dev/null || true
  fi
  IMPULSE=$W/bin/impulse
fi
FACTORS=${FACTORS:-0 0.25 0.5 0.75 1 1.25 1.5 1.75 2}
METHODS=${METHODS:-ccn ccn-r diffsim-r end-to-end}
SEEDS=${SEEDS:-1 2 3}
case "$W" in *[[:space:]]*) echo "CCN_WORK must not contain whitespace: '$W'" >&2; exit 2 ;; esac
JOBS=${JOBS:-1}
export W IMPULSE
for f in $FACTORS; do
  G=$W/data/gravity_f${f}_128_seed7.npz
  [ -f "$G" ] || "$IMPULSE" generate-tosses --system elbow --model-gap gravity --gravity-factor "$f" \
    --count 128 --seed 7 --threads 2 --out "$G" > "$W/logs/gen_gravity_$f.log" 2>&1 ||
    { echo "generate-tosses failed for f = $f: $W/logs/gen_gravity_$f.log" >&2; exit 1; }
done
run_one() {  # NAME METHOD DATA SEED
  local name=$1 m=$2 data=$3 s=$4 d=$W/runs/$1
  [ -f "$d/metrics.json" ] && return 0
  echo "ccn_gravity_sweep: $name started $(date -u +%H:%M:%S)"
  nice -n 5 "$IMPULSE" train --system elbow --method "$m" --data "$data" --out "$d" --tosses 64 \
    --seed "$s" --epochs 15 --patience 5 --threads 1 > "$W/logs/$name.train.log" 2>&1
  echo $? > "$W/logs/$name.train.rc"
  [ -f "$d/params.json" ] || return 0
  nice -n 5 "$IMPULSE" eval --run "$d" --threads 1 --out "$d/metrics.json" > "$W/logs/$name.eval.log" 2>&1
  echo $? > "$W/logs/$name.eval.rc"
}
export -f run_one
runs() {  # NAME METHOD DATA SEED, one line a run
  for f in $FACTORS; do
    for s in $SEEDS; do
      for m in $METHODS; do echo "gravity_${m}_f${f}_n64_s$s $m $W/data/gravity_f${f}_128_seed7.npz $s"; done
    done
  done
}
runs | xargs -P "$JOBS" -L 1 bash -c 'run_one "$@"' _
failed=0
while read -r name _; do
  [ -f "$W/runs/$name/metrics.json" ] && continue
  echo "not finished: $name (train exit $(cat "$W/logs/$name.train.rc" 2>/dev/null || echo '?'), eval exit" \
    "$(cat "$W/logs/$name.eval.rc" 2>/dev/null || echo '?'); logs: $W/logs/$name.*.log)" >&2
  failed=1
done < <(runs)
echo "done: python3 $HERE/bench/ccn_report.py $W --tag ccn_gravity_DATE"
exit $failed
