#!/usr/bin/env bash
# Cycles, not only instructions: the GPU simulator's performance (timing) model runs the
# kernels whose throughput bench/gpu_model.py predicts, so the prediction can count
# latency the issue limit assumes hidden. Inputs of gpu_model.py's "cycles" section.
#
#   bash bench/gpu_timing.sh          # needs ../shared/tools/gpgpu-sim, nvcc, build-sim/ built by
#                                     # bench/gpu_counts.sh (GPU_TIMING_BUILD=1 builds it here)
#   GPU_TIMING_CASES="qp_cube_float_cold_1sm" bash bench/gpu_timing.sh   # some cases only
#   GPU_TIMING_LINE_STATS=1 GPU_TIMING_CASES=qp_cube_float_cold_alone bash bench/gpu_timing.sh
#   python3 bench/gpu_line_stats.py build-sim/timing/qp_cube_float_cold_alone   # where a warp waits
#
# The simulated SM is the simulator's RTX 3070 (Ampere, sm_86) SM, with these changes
# (each written into the case's gpgpusim.config). Its issue width (4 schedulers, one warp
# instruction each per cycle) and register file (64K) are the H100's, so is the kernels'
# register-limited occupancy; its thread (1,536) and shared-memory limits are lower than
# the H100's but bind none of the kernels here:
# - the SM count: 1 (throughput: a full SM, its resident problems replaced as they finish)
#   or 132 (the H100's: a small launch, one problem a warp, each warp on its own SM);
# - the shuffle's latency (the sixth integer entry, which the simulator reads and the
#   shipped config lacks: without it the timing model reads garbage and crashes on any
#   kernel with shfl.sync): 29 cycles, the config's shared-memory latency (assumed; a
#   shuffle crosses the same network, and no public figure for it was found);
# - FP64 add/mul/fma: a warp instruction every 2 cycles per partition (the H100's
#   published 64 FP64 lanes per SM; the RTX 3070 has 2), latency 8 cycles (assumed:
#   twice this config's FP32); FP64 divide (a short subroutine in SASS): latency 64, one
#   every 16 cycles (assumed). (The simulator sends sqrt, rsqrt and rcp of either width to
#   the SFU: the config's 21 cycles, one every 8.)
# - no kernel launch latency (the model adds launch overheads itself, stated there);
# - the L1's write policy for local memory: write-back (the simulator's 'L': local
#   write-back, global write-through), as NVIDIA's L1 caches local memory (CUDA C++
#   Programming Guide, compute capability 7.x-9.0 memory sections); the shipped config
#   writes local memory through to L2, so every spill and stack read after a write
#   missed L1 and waited on L2.
# Caches, shared memory and DRAM timing stay the RTX 3070's (its L1 is 128 KB, the
# H100's 256 KB; the 1-SM runs have the whole memory system to themselves, which the
# kernels measured here, far from every memory bound, hardly use).
#
# Cases (logs in build-sim/timing/<case>/sim.log):
#   qp_cube_float_{cold,warm,kept}_1sm: the cube loss QP (float32, eps 1e-5) on one SM,
#     128 problems (8 waves of the 16 warps an SM holds), cold, warm (q 0.1% off) and
#     warm keeping the factorization (the second launch);
#   qp_cube_float_{cold,warm}_alone: one problem on one SM, a warp alone (latency);
#   contactnets_loss_132sm: the ContactNets loss and gradient in the warp layout (double;
#     the GPU test GpuContactNets.DeviceLossAndGradientMatchCpu: 32 transitions, cold
#     first) on 132 SMs, so each QP warp has an SM to itself as in a training step's
#     mini-batch on an H100; stopped once its first evaluation's four launches (assembly,
#     QP, gradient, gradient sum) are done: gpu_model.py takes those. (A training
#     run itself, whose last epoch would be warm, simulates for hours here: its first
#     epoch alone is ~10^9 instructions.)
#   contactnets_loss_16sm: the same test's four launches on 16 SMs: two QP warps an SM, as a
#     mini-batch of more than 132 transitions has on an H100 (does a second warp slow the
#     first?).
#   contactnets_clocks_132sm: contactnets_loss_132sm's first two launches from the clocks
#     build (below): the QP's cycles by phase, per problem.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=bench/gpu_sim_env.sh
source bench/gpu_sim_env.sh
gpu_sim_setup gpu_timing "${GPU_TIMING_BUILD:-}"
bin="$PWD/build-sim"
for b in impulse impulse_gpu_warp_variant impulse_tests; do
  [ -x "$bin/$b" ] || { echo "gpu_timing: build-sim/$b is needed (GPU_TIMING_BUILD=1 builds it)" >&2; exit 1; }
done
export PTX_SIM_MODE_FUNC=0  # the performance (timing) model
out=build-sim/timing
only="${GPU_TIMING_CASES:-}"
want() { [ -z "$only" ] || [[ " $only " == *" $1 "* ]]; }
mkdir -p "$out"
workdir() {  # workdir CASE SMS: the simulator's configuration, changed as said above
  local dir="$out/$1"
  rm -rf "$dir"
  mkdir -p "$dir"
  cp "$GPGPUSIM_CONFIG_DIR"/* "$dir/"
  sed -i -e '/^-gpgpu_n_clusters /d' -e '/^-ptx_opcode_latency_int /d' -e '/^-ptx_opcode_initiation_int /d' \
    -e '/^-ptx_opcode_latency_dp /d' -e '/^-ptx_opcode_initiation_dp /d' -e '/^-gpgpu_kernel_launch_latency /d' \
    -e 's/^\(-gpgpu_cache:dl1 [^,]*,L:\)T:/\1L:/' "$dir/gpgpusim.config"
  grep -q '^-gpgpu_cache:dl1 [^,]*,L:L:' "$dir/gpgpusim.config" || { echo "gpu_timing: the L1 line changed" >&2; exit 1; }
  cat >> "$dir/gpgpusim.config" <<EOF
# bench/gpu_timing.sh
-gpgpu_n_clusters $2
-ptx_opcode_latency_int 4,4,4,4,21,29
-ptx_opcode_initiation_int 2,2,2,2,2,2
-ptx_opcode_latency_dp 8,8,8,8,64
-ptx_opcode_initiation_dp 2,2,2,2,16
-gpgpu_kernel_launch_latency 0
EOF
  if [ -n "${GPU_TIMING_LINE_STATS:-}" ]; then  # per-PTX-line latency (bench/gpu_line_stats.py reads it)
    printf '%s\n' '-enable_ptx_file_line_stats 1' '-ptx_line_stats_filename line_stats.txt' >> "$dir/gpgpusim.config"
  fi
}
finished() {  # the launches a log has finished: each prints its statistics, its warp instruction count among them
  local n
  n=$(grep -ac '^gpgpu_n_tot_w_icount' "$1" 2>/dev/null) || true
  echo "${n:-0}"
}
run() {  # run CASE SMS PROBLEMS LAUNCHES COMMAND...: LAUNCHES > 0 stops it after that many launches
  local name=$1 sms=$2 problems=$3 launches=$4
  shift 4
  want "$name" || return 0
  workdir "$name" "$sms"
  echo "$problems" > "$out/$name/problems"
  echo "$sms" > "$out/$name/sms"
  echo "gpu_timing: $name ($problems problems, $sms SMs) started $(date -u +%H:%M:%S)"
  local t0=$SECONDS
  if [ "$launches" -gt 0 ]; then
    (cd "$out/$name" && exec "$@" > sim.log 2>&1) &
    local pid=$!
    while kill -0 "$pid" 2>/dev/null && [ "$(finished "$out/$name/sim.log")" -lt "$launches" ]; do sleep 5; done
    kill "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
    [ "$(finished "$out/$name/sim.log")" -ge "$launches" ] ||
      { tail -n 20 "$out/$name/sim.log"; echo "gpu_timing: $name ended before $launches launches" >&2; exit 1; }
  else
    (cd "$out/$name" && "$@" > sim.log 2>&1) || { tail -n 20 "$out/$name/sim.log"; exit 1; }
  fi
  touch "$out/$name/done"  # gpu_model.py reads finished runs only
  echo "gpu_timing: $name done in $((SECONDS - t0)) s"
}
cpu() { env -u LD_LIBRARY_PATH "$@"; }  # CPU steps without the simulator's runtime
B=128
if want qp_cube_float_cold_1sm || want qp_cube_float_warm_1sm || want qp_cube_float_kept_1sm; then
  cpu "$bin/impulse" generate --kind cube-loss --count $B --seed 11 --out "$out/cube.npz" > /dev/null
  cpu "$bin/impulse" solve-batch --in "$out/cube.npz" --out "$out/cube_sol.npz" --eps 1e-7 --lanes off > /dev/null
  python3 bench/gpu_counts_warm.py "$out/cube.npz" "$out/cube_sol.npz" 1.001 "$out/cube_warm.npz"
fi
run qp_cube_float_cold_1sm 1 $B 0 "$bin/impulse_gpu_warp_variant" --in ../cube.npz --eps 1e-5
run qp_cube_float_warm_1sm 1 $B 0 "$bin/impulse_gpu_warp_variant" --in ../cube_warm.npz --eps 1e-5
run qp_cube_float_kept_1sm 1 $B 0 "$bin/impulse_gpu_warp_variant" --in ../cube_warm.npz --eps 1e-5 \
  --kept-from ../cube.npz
if want qp_cube_float_cold_alone || want qp_cube_float_warm_alone; then
  cpu "$bin/impulse" generate --kind cube-loss --count 1 --seed 11 --out "$out/cube1.npz" > /dev/null
  cpu "$bin/impulse" solve-batch --in "$out/cube1.npz" --out "$out/cube1_sol.npz" --eps 1e-7 --lanes off > /dev/null
  python3 bench/gpu_counts_warm.py "$out/cube1.npz" "$out/cube1_sol.npz" 1.001 "$out/cube1_warm.npz"
fi
run qp_cube_float_cold_alone 1 1 0 "$bin/impulse_gpu_warp_variant" --in ../cube1.npz --eps 1e-5
run qp_cube_float_warm_alone 1 1 0 "$bin/impulse_gpu_warp_variant" --in ../cube1_warm.npz --eps 1e-5
run contactnets_loss_132sm 132 32 4 "$bin/impulse_tests" --gtest_filter=GpuContactNets.DeviceLossAndGradientMatchCpu
# the same on 16 SMs, two QP warps an SM (a mini-batch above 132 transitions shares SMs so)
run contactnets_loss_16sm 16 32 4 "$bin/impulse_tests" --gtest_filter=GpuContactNets.DeviceLossAndGradientMatchCpu
# the same QP launch from a build whose warp kernel reads %clock at its phase boundaries
# (build-sim-clocks/, CMake's IMPULSE_WARP_CLOCKS, made here when absent or with
# GPU_TIMING_BUILD): each problem's cycles by phase, printed as "impulse_clocks" lines,
# which gpu_model.py costs a solve from (summed latencies overlap, these do not)
if want contactnets_clocks_132sm; then
  if [ -n "${GPU_TIMING_BUILD:-}" ] || [ ! -x build-sim-clocks/impulse_tests ]; then
    cpu bash .ci/build.sh build-sim-clocks -DIMPULSE_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=80 \
      -DIMPULSE_BUILD_BENCH=OFF -DIMPULSE_WARP_CLOCKS=ON > /dev/null
  fi
  run contactnets_clocks_132sm 132 32 2 "$PWD/build-sim-clocks/impulse_tests" \
    --gtest_filter=GpuContactNets.DeviceLossAndGradientMatchCpu
fi
echo "gpu_timing: done; now: python3 bench/gpu_model.py"
