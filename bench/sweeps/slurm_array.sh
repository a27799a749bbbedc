#!/usr/bin/env bash
# A sweep as a SLURM job array: each array task runs one shard of the grid
# (`impulse sweep --shard i/N`) into the same sweep directory on a shared file
# system; every run's directory has its own lock, so nothing is done twice, and a
# task that is preempted or killed continues where it stopped when it is resubmitted.
#
#   sbatch --array=0-7 bench/sweeps/slurm_array.sh bench/sweeps/contactnets_fig5.json /shared/sweeps/fig5
#   # when all tasks are done (any task may be rerun to finish what a killed one left):
#   impulse report --sweep /shared/sweeps/fig5 --out /shared/sweeps/fig5/report
#
# The array's size is the number of shards; --cpus-per-task runs that many runs of the
# shard at once, one thread each.
#SBATCH --job-name=impulse-sweep
#SBATCH --cpus-per-task=4
#SBATCH --time=08:00:00
#SBATCH --output=impulse-sweep-%A_%a.out
set -euo pipefail
config="${1:?usage: sbatch --array=0-(N-1) slurm_array.sh SWEEP.json SWEEP_DIR}"
out="${2:?usage: sbatch --array=0-(N-1) slurm_array.sh SWEEP.json SWEEP_DIR}"
IMPULSE="${IMPULSE:-impulse}"
task="${SLURM_ARRAY_TASK_ID:?not inside a SLURM job array (sbatch --array=0-(N-1))}"
count="${SLURM_ARRAY_TASK_COUNT:-$(( ${SLURM_ARRAY_TASK_MAX:?} - ${SLURM_ARRAY_TASK_MIN:-0} + 1 ))}"
first="${SLURM_ARRAY_TASK_MIN:-0}"
exec "$IMPULSE" sweep --config "$config" --out "$out" --shard "$(( task - first ))/$count" \
  --jobs "${SLURM_CPUS_PER_TASK:-1}" --threads-per-run 1
