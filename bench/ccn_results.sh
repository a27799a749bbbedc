#!/usr/bin/env bash
# Reproduces every number in bench/results/ccn_2026-11-24.md (the CCN paper's
# Fig. 4/5 comparisons on this project's `impulse` CLI).
#
#   bench/ccn_results.sh [full|quick] [STAGES]
#
#   full   the runs of the results file (about 50 min on 2 busy cores, 2 jobs at once);
#          EXTRA=1 adds the runs that were cut for time on 2026-11-24
#   quick  a smoke test: the same queue with 3 epochs (patience 2), seed 1 where seeds are a list
#   STAGES comma list of: timing,elbow,cube,vortex,gravity,init (default: all)
#
# Environment:
#   IMPULSE   the CLI (default: a copy of build/impulse in /tmp/impulse_bench)
#   CCN_WORK  run directories, synthetic data, logs (default /tmp/ccn_runs);
#             nothing is written into the repo
#   JOBS      parallel training jobs (default 2, each --threads 1)
#
# Every method uses its defaults (lr, weights, batch); all methods of an
# experiment get the same --epochs/--patience. Nothing is tuned to the test split.
# A finished run (metrics.json present) is skipped, so the script resumes.
# Aggregate with:  python3 bench/ccn_report.py "$CCN_WORK"
set -u
MODE=${1:-full}
STAGES=${2:-timing,elbow,cube,vortex,gravity,init}
HERE=$(cd "$(dirname "$0")/.." && pwd)
if [ -z "${IMPULSE:-}" ]; then
  cp "$HERE/build/impulse" /tmp/impulse_bench
  IMPULSE=/tmp/impulse_bench
fi
W=${CCN_WORK:-/tmp/ccn_runs}
JOBS=${JOBS:-2}
SHARED=${IMPULSE_DATA:-$(cd "$HERE/.." && pwd)/shared/data}  # docs/data.md
[ -n "${IMPULSE_DATA:-}" ] || [ -d "$SHARED" ] || SHARED=$HERE/data/external  # bash data/fetch.sh
ELBOW=${ELBOW:-$SHARED/articulated_elbow}
CUBE=${CUBE:-$SHARED/cube_toss/contact-nets/data/tosses_processed}
mkdir -p "$W/runs" "$W/data" "$W/logs"
export IMPULSE W

case "$MODE" in
  full)  EP=15; PA=5; SEEDS="1 2 3"; SEEDS2="1 2"; SEED1="1"
         ELBOW_N="32 0"; VORTEX_N="16 64 256"; GRAV_F="0 0.5 1 1.5 2" ;;
  quick) EP=3;  PA=2; SEEDS="1"; SEEDS2="1"; SEED1="1"
         ELBOW_N="32"; VORTEX_N="16"; GRAV_F="1" ;;
  *) echo "mode: full | quick" >&2; exit 2 ;;
esac
has() { case ",$STAGES," in *",$1,"*) return 0 ;; esac; return 1; }

# one training run + its test-split evaluation; a job line is
#   NAME SYSTEM METHOD DATA TOSSES SEED EPOCHS PATIENCE
run_one() {
  local name=$1 sys=$2 m=$3 data=$4 n=$5 s=$6 ep=$7 pa=$8
  local d=$W/runs/$name
  [ -f "$d/metrics.json" ] && return 0
  # a run that crashed (exit != 0, nothing to evaluate) is not retried
  [ -f "$W/logs/$name.train.rc" ] && [ ! -f "$d/params.json" ] && return 0
  nice -n 5 "$IMPULSE" train --system "$sys" --method "$m" --data "$data" --out "$d" \
    --tosses "$n" --seed "$s" --epochs "$ep" --patience "$pa" --threads 1 \
    > "$W/logs/$name.train.log" 2>&1
  echo $? > "$W/logs/$name.train.rc"
  if [ -f "$d/params.json" ]; then
    nice -n 5 "$IMPULSE" eval --run "$d" --threads 1 --out "$d/metrics.json" \
      > "$W/logs/$name.eval.log" 2>&1
  fi
}
export -f run_one
run_jobs() {  # job lines on stdin, JOBS at a time
  xargs -P "$JOBS" -L 1 bash -c 'run_one "$@"' _
}

# 1. epoch time on 256 real cube tosses, 2 threads, one run at a time
if has timing; then
  for s in 1 2; do
    for m in ccn ccn-r diffsim diffsim-r end-to-end; do
      d=$W/runs/timing_${m}_s$s
      [ -f "$d/history.csv" ] && continue
      nice -n 5 "$IMPULSE" train --system cube --method "$m" --data "$CUBE" --out "$d" \
        --tosses 256 --epochs 2 --threads 2 --seed "$s" > "$W/logs/timing_${m}_s$s.log" 2>&1
      echo $? > "$W/logs/timing_${m}_s$s.rc"
    done
  done
fi

# Jobs 2-5 go through one queue in this order: the cheap runs of the higher
# priorities first, then the expensive DiffSim(-R) runs (25-100 s per epoch on
# one thread here, against 0.5-5 s for CCN), then (EXTRA=1 only) the runs that
# did not fit in the 75-minute budget of 2026-11-24.
V=$W/data/vortex_512_seed7.npz
if has vortex; then
  [ -f "$V" ] || nice -n 5 "$IMPULSE" generate-tosses --system asymmetric --model-gap vortex \
    --count 512 --seed 7 --threads 2 --out "$V" > "$W/logs/gen_vortex.log" 2>&1
fi
if has gravity; then
  for f in $GRAV_F; do
    G=$W/data/gravity_f${f}_128_seed7.npz
    [ -f "$G" ] || nice -n 5 "$IMPULSE" generate-tosses --system elbow --model-gap gravity \
      --gravity-factor "$f" --count 128 --seed 7 --threads 2 --out "$G" > "$W/logs/gen_gravity_$f.log" 2>&1
  done
fi
elbow() {  # METHODS SIZES SEEDS
  has elbow || return 0
  for n in $2; do for s in $3; do for m in $1; do
    echo "elbow_${m}_n${n}_s$s elbow $m $ELBOW $n $s $EP $PA"; done; done; done
}
cube() {
  has cube || return 0
  for s in $2; do for m in $1; do echo "cube_${m}_n256_s$s cube $m $CUBE 256 $s $EP $PA"; done; done
}
vortex() {
  has vortex || return 0
  for n in $2; do for s in $3; do for m in $1; do
    echo "vortex_${m}_n${n}_s$s asymmetric $m $V $n $s $EP $PA"; done; done; done
}
gravity() {
  has gravity || return 0
  for f in $2; do for s in $3; do for m in $1; do
    echo "gravity_${m}_f${f}_n64_s$s elbow $m $W/data/gravity_f${f}_128_seed7.npz 64 $s $EP $PA"
  done; done; done
}
{
  # 2. real elbow: CCN, CCN-R, End-to-end at N = 32 and the whole split (0)
  elbow "ccn ccn-r end-to-end" 32 "$SEEDS"
  elbow "ccn ccn-r" 0 "$SEEDS"
  # 3. real cube at N = 256
  cube end-to-end 1
  cube ccn "$SEEDS"
  cube diffsim "1 3"                 # (both stop in epoch 1: mu < 0)
  elbow diffsim 32 "1 2"
  # 4./5. vortex at its largest size, gravity sweep at N = 64
  vortex "ccn ccn-r" 256 1
  gravity "ccn-r ccn" "1 0 2" 1
  cube diffsim 2
  elbow diffsim 32 3
  vortex "ccn ccn-r" "16 64" 1
  gravity "ccn-r ccn" "0.5 1.5" 1
  elbow diffsim-r 32 1               # (stops after epoch 1: mu < 0)
  vortex end-to-end 256 1
  if [ "${EXTRA:-0}" = 1 ]; then  # did not fit in the budget of 2026-11-24
    elbow diffsim-r 32 "2 3"
    cube end-to-end "2 3"
    gravity end-to-end "$GRAV_F" 1
    elbow end-to-end 0 "$SEEDS"
    vortex end-to-end "16 64" 1
    vortex "ccn ccn-r end-to-end" "$VORTEX_N" 2
    vortex "diffsim diffsim-r" "$VORTEX_N" "$SEEDS2"
    gravity diffsim-r "$GRAV_F" "$SEED1"
    elbow diffsim 0 "$SEEDS"
    elbow diffsim-r 0 "$SEEDS"
  fi
} | run_jobs
# the seed's random initial model (before training) on the same test split, for reference
has init && for r in "$W"/runs/elbow_ccn_n32_s* "$W"/runs/cube_ccn_n256_s*; do
  [ -f "$r/init_params.json" ] && [ ! -f "$r/metrics_init.json" ] &&
    nice -n 5 "$IMPULSE" eval --run "$r" --params init_params.json --threads 1 \
      --out "$r/metrics_init.json" > "$W/logs/$(basename "$r").eval_init.log" 2>&1
done
echo "done: python3 $HERE/bench/ccn_report.py $W"
