#!/usr/bin/env bash
# run_lane_set.sh SET CLI TESTS [gtest args...]: the lane tests again with the
# lane kernels of SET (IMPULSE_LANES=SET, host/batch/lane_kernels.h); exit 77
# (ctest: skipped) when this CPU or build does not have SET.
set -euo pipefail
set_name=$1 cli=$2 tests=$3
shift 3
if ! "$cli" --version | grep -q "^cpu lanes: .*this CPU and build: .*\b${set_name}\b"; then
  echo "skipped: this CPU or build has no ${set_name} lanes ($("$cli" --version | grep '^cpu lanes' || true))"
  exit 77
fi
IMPULSE_LANES=$set_name exec "$tests" "$@"
