#!/usr/bin/env bash
# Reproduces the runs of bench/results/ccn_loss_form_2026-11-25.md (issue 16): CCN with
# the loss in the form its weights were tuned for, against DiffSim, End-to-end and the
# published model, on the real cube and elbow and the synthetic vortex and gravity sets.
#
#   bench/ccn_loss_form.sh            # every run (about 25 min on 2 cores, 2 jobs at once)
#   python3 bench/ccn_loss_form_report.py "$CCN_WORK"   # the tables (needs numpy)
#
# Environment:
#   IMPULSE          the CLI (default: a copy of build/impulse, made once per CCN_WORK and
#                    kept with its commit in bin/impulse.commit, so a resumed queue keeps
#                    the binary it started with)
#   IMPULSE_PRINTED  optional: a build of the printed-form loss (commit c4caa0b) for the
#                    "printed" rows; skipped when unset
#   CCN_WORK         run directories and synthetic data (default /tmp/ccn_form); nothing
#                    is written into the repo
#   JOBS             parallel training jobs (default 2, each --threads 1)
#   CUBE, ELBOW      the real data folders (default: $IMPULSE_DATA/..., else ../shared/data/...); no path here may
#                    contain whitespace (the job lines are split on it)
# A finished run (metrics.json present) is skipped, so the script resumes. Every number
# the report prints is the run's own test split; nothing is chosen on it.
set -uo pipefail
HERE=$(cd "$(dirname "$0")/.." && pwd)
W=${CCN_WORK:-/tmp/ccn_form}
mkdir -p "$W/runs" "$W/data" "$W/bin"
if [ -z "${IMPULSE:-}" ]; then
  if [ ! -x "$W/bin/impulse" ]; then
    cp "$HERE/build/impulse" "$W/bin/impulse" || { echo "no build/impulse to copy: build the project first" >&2; exit 1; }
    git -C "$HERE" rev-parse HEAD > "$W/bin/impulse.commit" 2>/dev/null || true
  fi
  IMPULSE=$W/bin/impulse
fi
JOBS=${JOBS:-2}
SHARED=${IMPULSE_DATA:-$(cd "$HERE/.." && pwd)/shared/data}  # docs/data.md
[ -n "${IMPULSE_DATA:-}" ] || [ -d "$SHARED" ] || SHARED=$HERE/data/external  # bash data/fetch.sh
CUBE=${CUBE:-$SHARED/cube_toss/contact-nets/data/tosses_processed}
ELBOW=${ELBOW:-$SHARED/articulated_elbow}
export W
run_one() {  # BIN TAG NAME SYSTEM METHOD DATA N EPOCHS PATIENCE SEED [extra train args]
  local bin=$1 tag=$2 name=$3 sys=$4 m=$5 data=$6 n=$7 ep=$8 pa=$9 s=${10}
  shift 10
  local d=$W/runs/${tag}_${name}
  [ -f "$d/metrics.json" ] && return 0
  nice -n 5 "$bin" train --system "$sys" --method "$m" --data "$data" --out "$d" --tosses "$n" \
    --seed "$s" --epochs "$ep" --patience "$pa" --threads 1 "$@" > "$d.train.log" 2>&1 &&
    nice -n 5 "$bin" eval --run "$d" --threads 1 --out "$d/metrics.json" > "$d.eval.log" 2>&1
}
export -f run_one
V=$W/data/vortex_512_seed7.npz
[ -f "$V" ] || "$IMPULSE" generate-tosses --system asymmetric --model-gap vortex --count 512 --seed 7 \
  --threads 2 --out "$V" > /dev/null
for f in 0 1 2; do
  G=$W/data/gravity_f${f}_128_seed7.npz
  [ -f "$G" ] || "$IMPULSE" generate-tosses --system elbow --model-gap gravity --gravity-factor "$f" \
    --count 128 --seed 7 --threads 2 --out "$G" > /dev/null
done
jobs_for() {  # BIN TAG: the comparison's runs
  local b=$1 t=$2
  for s in 1 2 3; do
    echo "$b $t cube_n256_s$s cube ccn $CUBE 256 100 12 $s"
    echo "$b $t elbow_n32_s$s elbow ccn $ELBOW 32 15 5 $s"
    echo "$b $t elbowr_ccn-r_n32_s$s elbow ccn-r $ELBOW 32 15 5 $s"
  done
  for s in 1 2; do
    for m in ccn ccn-r; do
      echo "$b $t vortex_${m}_n256_s$s asymmetric $m $V 256 15 5 $s"
      for f in 0 1 2; do echo "$b $t gravity_${m}_f${f}_n64_s$s elbow $m $W/data/gravity_f${f}_128_seed7.npz 64 15 5 $s"; done
    done
  done
}
{
  jobs_for "$IMPULSE" new
  for s in 1 2 3; do
    for m in ccn diffsim end-to-end; do echo "$IMPULSE all elbow_${m}_nall_s$s elbow $m $ELBOW 0 15 5 $s"; done
    echo "$IMPULSE all cube_end-to-end_n256_s$s cube end-to-end $CUBE 256 100 12 $s"
    # the published model: every group given, nothing trained
    echo "$IMPULSE nominal cube_n256_s$s cube ccn $CUBE 256 1 1 $s --known geometry,friction,inertia"
    echo "$IMPULSE nominal elbow_n32_s$s elbow ccn $ELBOW 32 1 1 $s --known geometry,friction,inertia"
  done
  for s in 1 2; do
    for m in diffsim diffsim-r end-to-end; do echo "$IMPULSE new vortex_${m}_n256_s$s asymmetric $m $V 256 15 5 $s"; done
    for f in 0 1 2; do echo "$IMPULSE new gravity_diffsim-r_f${f}_n64_s$s elbow diffsim-r $W/data/gravity_f${f}_128_seed7.npz 64 15 5 $s"; done
  done
  [ -n "${IMPULSE_PRINTED:-}" ] && jobs_for "$IMPULSE_PRINTED" old
} | xargs -P "$JOBS" -L 1 bash -c 'run_one "$@"' _
# a run that failed has no metrics.json: name them (their logs are RUN.train.log / RUN.eval.log)
failed=0
for d in "$W"/runs/*/; do
  [ -d "$d" ] || continue
  [ -f "$d/metrics.json" ] || { echo "not finished: $d (see ${d%/}.train.log)" >&2; failed=1; }
done
echo "done: python3 $HERE/bench/ccn_loss_form_report.py $W"
exit $failed
