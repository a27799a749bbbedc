#!/usr/bin/env bash
# Installs the Debian packages impulse builds with (only those missing).
# The CUDA toolkit is optional: the build uses it when nvcc is found.
set -euo pipefail
pkgs=(cmake make g++ ccache zlib1g-dev libeigen3-dev libgtest-dev libbenchmark-dev
      nlohmann-json3-dev libcli11-dev libqhull-dev libopenmpi-dev openmpi-bin python3-matplotlib
      liblbfgspp-dev liburdfdom-dev libassimp-dev pkgconf python3-venv)
missing=()
for p in "${pkgs[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "installing: ${missing[*]}"
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi
