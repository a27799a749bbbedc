#!/usr/bin/env bash
# The GPU measurements of the foundation and ContactNets issues in one go, for
# a session that is lent a GPU machine which has no package registry (the
# project's Debian dependencies cannot be installed there).
#
#   bash bench/gpu_session.sh prepare   # here: a portable CUDA build (no
#                                       # -march=native, sm_80 + sm_90), its
#                                       # shared libraries and the real cube
#                                       # tosses, copied into .device/ (ignored)
#   bash bench/gpu_session.sh run       # there, with .device carried: GPU tests,
#                                       # kernel-only and end-to-end throughput,
#                                       # a ContactNets epoch on the GPU and on
#                                       # the machine's CPU cores; logs to $OUT
#
# `run` writes $OUT/gpu_tests.log, $OUT/gpu_bench.json, $OUT/bench_solvers.txt,
# $OUT/train_cuda.csv, $OUT/train_cuda_batch256.csv, $OUT/train_cpu.csv and $OUT/device.txt; the figures go
# into bench/results/gpu_<date>.md by hand, with the device and the command.
set -euo pipefail
cd "$(dirname "$0")/.."
dev=.device

case "${1:-}" in
prepare)
  cmake -S . -B build-device -DIMPULSE_CUDA=ON -DIMPULSE_NATIVE_ARCH=OFF \
    -DCMAKE_BUILD_TYPE=Release > /dev/null
  cmake --build build-device -j "$(nproc)" --target impulse impulse_tests impulse_bench
  rm -rf "$dev"
  mkdir -p "$dev/bin" "$dev/lib" "$dev/data"
  for b in impulse impulse_tests impulse_bench; do
    cp "build-device/$b" "$dev/bin/"
    strip -s "$dev/bin/$b"
  done
  # libraries a bare CUDA image may lack (the C and C++ runtimes it has)
  for lib in libcudart libbenchmark libz libgomp; do
    for b in "$dev"/bin/*; do ldd "$b"; done | awk -v l="$lib" '$1 ~ "^"l {print $3}' | sort -u |
      while read -r path; do cp -L "$path" "$dev/lib/"; done
  done
  tosses="${IMPULSE_CUBE_DATA:-${IMPULSE_DATA:-../shared/data}/cube_toss/contact-nets/data/tosses_processed}"
  if [ -d "$tosses" ]; then
    cp -r "$tosses" "$dev/data/tosses_processed"
    if [ -d "$tosses/../params_processed" ]; then cp -r "$tosses/../params_processed" "$dev/data/"; fi
  else
    echo "real cube tosses not found at $tosses: the ContactNets epoch will use the synthetic set" >&2
  fi
  du -sh "$dev"
  echo "carry [\"$dev\"] and run: bash bench/gpu_session.sh run"
  ;;
run)
  out="${OUT:-/tmp/gpu_out}"
  mkdir -p "$out"
  export LD_LIBRARY_PATH="$PWD/$dev/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  bin="$dev/bin"
  {
    date -u
    nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm,clocks.max.mem --format=csv ||
      echo "nvidia-smi failed"
    "$bin/impulse" --version || echo "impulse does not start: see the libraries in $dev/lib"
    nproc
  } > "$out/device.txt" 2>&1
  cat "$out/device.txt"
  "$bin/impulse_tests" --gtest_filter='*Gpu*:*Cuda*:*Device*' > "$out/gpu_tests.log" 2>&1 || true
  tail -n 5 "$out/gpu_tests.log"
  "$bin/impulse_bench" --benchmark_filter='Kernel|gpu_' --benchmark_min_time=0.2 \
    --benchmark_format=console --benchmark_out="$out/gpu_bench.json" --benchmark_out_format=json || true
  "$bin/impulse" bench-solvers --backend cuda --count 100000 > "$out/bench_solvers.txt" 2>&1 || true
  "$bin/impulse" bench-solvers --backend cpu --count 20000 --threads 0 >> "$out/bench_solvers.txt" 2>&1 || true
  cat "$out/bench_solvers.txt"
  data=()
  if [ -d "$dev/data/tosses_processed" ]; then data=(--data "$dev/data/tosses_processed" --tosses 256); fi
  # the default mini-batch on both backends, and the GPU's at 256 (predicted 108 and 24.6 ms
  # an epoch: bench/results/gpu_contactnets_batch_2026-11-27.md)
  for run in cuda:64 cpu:64 cuda:256; do
    backend=${run%:*} batch=${run#*:} name=$backend
    [ "$batch" = 64 ] || name="${backend}_batch$batch"
    rm -rf "/tmp/run_$name"
    "$bin/impulse" train "${data[@]}" --out "/tmp/run_$name" --epochs 4 --backend "$backend" \
      --batch "$batch" --threads 0 2>&1 | tail -n 2 || true
    cp "/tmp/run_$name/history.csv" "$out/train_$name.csv" 2>/dev/null || true
  done
  ;;
*)
  echo "usage: bash bench/gpu_session.sh prepare|run" >&2
  exit 2
  ;;
esac
