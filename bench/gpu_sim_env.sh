# Sourced (from the repository root) by bench/gpu_counts.sh and bench/gpu_timing.sh:
#   gpu_sim_setup NAME BUILD
# installs the GPU simulator at $IMPULSE_GPGPUSIM (default /opt/gpgpu-sim; idempotent),
# builds build-sim/ (one architecture, sm_80, with the warp-kernel driver) when BUILD is
# non-empty, and loads the simulator's environment (its libcudart first on the library
# path; the run mode stays the caller's to set). NAME prefixes the error messages.
gpu_sim_setup() {
  local name=$1 build=$2
  prefix="${IMPULSE_GPGPUSIM:-/opt/gpgpu-sim}"
  [ -f ../shared/tools/gpgpu-sim/install.sh ] || { echo "$name: the GPU simulator's sources are absent" >&2; exit 1; }
  bash ../shared/tools/gpgpu-sim/install.sh "$prefix" | tail -n 1
  if [ -n "$build" ]; then
    bash .ci/build.sh build-sim -DIMPULSE_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=80 -DIMPULSE_BUILD_BENCH=OFF \
      -DIMPULSE_GPU_WARP_VARIANT=ON > /dev/null
  fi
  set +eu
  set --  # its setup script reads the positional parameters (one = a build name)
  # shellcheck disable=SC1091
  source "$prefix/env.sh"
  set -eu
}
