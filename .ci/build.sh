#!/usr/bin/env bash
# Configures and builds impulse into $1 (default build/) with extra cmake args.
set -euo pipefail
cd "$(dirname "$0")/.."
bash .ci/deps.sh
dir="${1:-build}"
shift || true
export CCACHE_DIR="${CCACHE_DIR:-$PWD/.ccache}"
cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=Release "$@" >/dev/null
cmake --build "$dir" -j "$(nproc)"
