#!/usr/bin/env bash
# Measured inputs of the GPU throughput model (bench/gpu_model.py): each kernel runs
# under the GPU simulator (GPGPU-Sim, functional mode, instruction classification on)
# on a small batch, and ptxas reports its registers, spills and stack for sm_90.
#
#   bash bench/gpu_counts.sh          # needs ../shared/tools/gpgpu-sim and nvcc
#   python3 bench/gpu_model.py        # the prediction, from what this left in build-sim/counts
#
# Cases (the problems of the issue): the cube loss QP in float32 at eps 1e-5, cold and
# warm-started (from the solution of the same batch with q 0.1% off, as consecutive
# Adam steps change it little); the Anitescu step QP in float32 at eps 1e-5; the PGS
# LCP with the friction-cone block (double; 4 contacts); the ContactNets loss (double:
# what the device trainer runs) in the thread layout (assembly, the thread QP kernel,
# gradient) and the warp layout (assembly, the warp QP kernel, gradient). Logs go to build-sim/counts/<case>/sim.log.
# The warp-per-problem QP kernel (kernels/qp_warp_kernels.cu) runs on the same batches
# through bench/gpu_warp_variant.cu (cases *_warp; that driver checks every answer against
# the CPU and fails the run on a disagreement).
#
#   GPU_COUNTS_CASES="qp_cube_float_cold qp_cube_float_cold_warp" bash bench/gpu_counts.sh
# runs only the named cases (the others' results are kept); GPU_COUNTS_NO_BUILD=1 skips
# the build (.ci/build.sh builds every target, the tests included, on all cores).
set -euo pipefail
cd "$(dirname "$0")/.."
# GPU_COUNTS_NO_BUILD=1: use build-sim/ as it is (impulse and impulse_gpu_warp_variant built)
# shellcheck source=bench/gpu_sim_env.sh
source bench/gpu_sim_env.sh
gpu_sim_setup gpu_counts "$([ -n "${GPU_COUNTS_NO_BUILD:-}" ] || echo build)"
out=build-sim/counts
only="${GPU_COUNTS_CASES:-}"
want() { [ -z "$only" ] || [[ " $only " == *" $1 "* ]]; }
[ -n "$only" ] || rm -rf "$out"
mkdir -p "$out"
bin="$PWD/build-sim"
B=64

workdir() {  # a directory with the simulator's configuration, classification on
  mkdir -p "$out/$1"
  cp "$GPGPUSIM_CONFIG_DIR"/* "$out/$1/"
  sed -i '/^-gpgpu_ptx_instruction_classification/d' "$out/$1/gpgpusim.config"
  echo "-gpgpu_ptx_instruction_classification 1" >> "$out/$1/gpgpusim.config"
}
run() {  # run CASE PROBLEMS COMMAND...: COMMAND in the case's directory under the simulator
  local name=$1 problems=$2
  shift 2
  want "$name" || return 0
  rm -rf "${out:?}/$name"
  workdir "$name"
  echo "$problems" > "$out/$name/problems"
  echo "gpu_counts: $name ($problems problems)"
  (cd "$out/$name" && "$@" > sim.log 2>&1) || { tail -n 20 "$out/$name/sim.log"; exit 1; }
}

# CPU steps without the simulator's runtime (it needs its configuration in the cwd)
cpu() { env -u LD_LIBRARY_PATH "$@"; }
cpu "$bin/impulse" generate --kind cube-loss --count $B --seed 11 --out "$out/cube.npz" > /dev/null
cpu "$bin/impulse" generate --kind anitescu --count $B --seed 12 --out "$out/anitescu.npz" > /dev/null
# the warm start: the CPU's answer to the batch, then the batch with q 0.1% off
cpu "$bin/impulse" solve-batch --in "$out/cube.npz" --out "$out/cube_sol.npz" \
  --eps 1e-7 --lanes off > /dev/null
python3 bench/gpu_counts_warm.py "$out/cube.npz" "$out/cube_sol.npz" 1.001 "$out/cube_warm.npz"

run qp_cube_float_cold $B "$bin/impulse" solve-batch --in ../cube.npz --out sol.npz --backend cuda \
  --precision float --eps 1e-5 --layout thread
run qp_cube_float_warm $B "$bin/impulse" solve-batch --in ../cube_warm.npz --out sol.npz --backend cuda \
  --precision float --eps 1e-5 --layout thread
run qp_anitescu_float_cold $B "$bin/impulse" solve-batch --in ../anitescu.npz --out sol.npz \
  --backend cuda --precision float --eps 1e-5 --layout thread
# (--thread: on these QPs the thread kernel itself differs from the CPU beyond the cube's
# limits (x by up to 1.5e-2, a stop 10 iterations apart), so the warp kernel is judged
# against the thread kernel there: no worse than it)
run qp_anitescu_float_cold_warp $B "$bin/impulse_gpu_warp_variant" --in ../anitescu.npz --eps 1e-5 --thread
run qp_cube_float_cold_warp $B "$bin/impulse_gpu_warp_variant" --in ../cube.npz --eps 1e-5
run qp_cube_float_warm_warp $B "$bin/impulse_gpu_warp_variant" --in ../cube_warm.npz --eps 1e-5
# the warm re-solve keeping the factorization (OSQP's update of q and b): the batch solved
# cold keeping its factorizations, then the warm batch's q and b re-solved from them
run qp_cube_float_kept_warp $B "$bin/impulse_gpu_warp_variant" --in ../cube_warm.npz --eps 1e-5 \
  --kept-from ../cube.npz
# the set-up's share: the same batch stopped after one iteration (set-up, one iteration,
# one check, finish)
run qp_cube_float_setup $B "$bin/impulse" solve-batch --in ../cube.npz --out sol.npz --backend cuda \
  --precision float --eps 1e-5 --max-iter 1 --layout thread
run qp_cube_float_setup_warp $B "$bin/impulse_gpu_warp_variant" --in ../cube.npz --eps 1e-5 --max-iter 1
# the warp kernel's set-up by part: without the input check (finite, symmetric, PSD),
# and without Ruiz equilibration (the CPU reference runs the same settings)
run qp_cube_float_setup_warp_nocheck $B "$bin/impulse_gpu_warp_variant" --in ../cube.npz --eps 1e-5 \
  --max-iter 1 --no-check-input
run qp_cube_float_setup_warp_noruiz $B "$bin/impulse_gpu_warp_variant" --in ../cube.npz --eps 1e-5 \
  --max-iter 1 --no-check-input --scaling-iters 0
run lcp_pgs_cone_double 64 "$bin/impulse_tests" --gtest_filter=GpuLcp.FrictionConeBlockMatchesCpu
# the ContactNets loss in both layouts (each test evaluates several times, cold first: the model
# takes the first launch of each kernel)
run contactnets_loss_double 16 "$bin/impulse_tests" --gtest_filter=GpuContactNets.DeviceLossThreadLayoutMatchesCpu
run contactnets_warp_double 32 "$bin/impulse_tests" --gtest_filter=GpuContactNets.DeviceLossAndGradientMatchCpu
# training itself at its defaults (eps 1e-4, mini-batches of 64, warm starts from the
# previous epoch): three epochs on 4 synthetic tosses (2 train, 1 validation, 1 test);
# the model takes the launches of the last epoch (all warm), their problems from the grid
{ want contactnets_train_double || want contactnets_train_thread_double; } && cpu "$bin/impulse" generate-tosses --count 4 --seed 5 --threads 1 \
  --out "$out/tosses4.npz" > /dev/null
run contactnets_train_double 0 "$bin/impulse" train --method contactnets-polytope --data ../tosses4.npz \
  --epochs 3 --seed 0 --threads 1 --backend cuda --out run
run contactnets_train_thread_double 0 "$bin/impulse" train --method contactnets-polytope --data ../tosses4.npz \
  --epochs 3 --seed 0 --threads 1 --backend cuda --layout thread --out run

# registers, spills and stack per kernel for sm_90 (the release architecture)
nvcc="${CUDA_HOME:-/usr/local/cuda}/bin/nvcc"
[ -x "$nvcc" ] || nvcc=nvcc
for src in kernels/qp_kernels.cu kernels/qp_warp_kernels.cu kernels/lcp_kernels.cu kernels/contactnets_kernels.cu; do
  f=$(basename "$src" .cu)
  "$nvcc" -std=c++17 -O3 -arch=sm_90 --expt-relaxed-constexpr -Xptxas -v -I. -DIMPULSE_WITH_CUDA=1 \
    -c "$src" -o "$out/$f.sm_90.o" > "$out/$f.ptxas_sm_90.txt" 2>&1
done
# the PTX the simulator ran (sm_80), for the kernels' static instruction mix
ls "$out"/*/*.sm_80.ptx > /dev/null || { echo "gpu_counts: the simulator left no PTX" >&2; exit 1; }
echo "gpu_counts: done; now: python3 bench/gpu_model.py"
