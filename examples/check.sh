#!/usr/bin/env bash
# Installs a built impulse into a temporary prefix, then configures, builds and runs
# each example (examples/*/, standalone CMake projects: find_package(impulse)) against
# that prefix alone, and runs the installed CLI away from the source tree. Exits
# non-zero when any step fails. A test of the suite (ctest -R examples) runs it.
#   bash examples/check.sh [BUILD_DIR]   (default: build)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
build="$(cd "${1:-$here/../build}" && pwd)"
prefix="$(mktemp -d)"
trap 'rm -rf "$prefix"' EXIT
cmake --install "$build" --prefix "$prefix/install" >/dev/null
echo "== the installed libraries are position-independent =="
found=0
for lib in "$prefix"/install/lib*/libimpulse_*; do
  found=1
  case "$lib" in
    *.a) # every object of the archive linked into a shared object: a non-PIC one fails
         # ("relocation R_X86_64_PC32 ... recompile with -fPIC")
      if ! c++ -shared -o "$prefix/whole.so" -Wl,--whole-archive "$lib" -Wl,--no-whole-archive 2>"$prefix/link.txt"; then
        echo "$lib: does not link into a shared object:" >&2; head -5 "$prefix/link.txt" >&2; exit 1
      fi ;;
    *.so*) if readelf -dW "$lib" | grep -q TEXTREL; then echo "$lib: has text relocations" >&2; exit 1; fi ;;
  esac
  echo "$(basename "$lib"): ok"
done
[ "$found" = 1 ] || { echo "no impulse libraries were installed under $prefix/install/lib*" >&2; exit 1; }
launcher=()
if command -v ccache >/dev/null; then launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache); fi
for ex in "$here"/*/; do
  name="$(basename "$ex")"
  echo "== example $name =="
  cmake -S "$ex" -B "$prefix/build-$name" -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$prefix/install" \
    "${launcher[@]}" >/dev/null
  cmake --build "$prefix/build-$name" -j 2 >/dev/null
  (cd "$prefix/build-$name" && "./$name")  # each example's program is named after its folder
done
echo "== a program built with pkg-config alone =="
cat > "$prefix/pc.cc" <<'CC'
#include <impulse/batch/qp_batch.h>
#include <impulse/version.h>
#include <cstdio>
int main() {
  std::printf("impulse %s through pkg-config; backend %s\n", impulse::version(), impulse::to_string(impulse::parse_backend("cpu")));
}
CC
PKG_CONFIG_PATH="$prefix/install/lib/pkgconfig:$prefix/install/lib/$(gcc -print-multiarch 2>/dev/null)/pkgconfig" \
  bash -c 'c++ -std=c++17 -O1 "$1/pc.cc" -o "$1/pc" $(pkg-config --cflags --libs --static impulse)' _ "$prefix"
# (a shared impulse in a prefix outside the loader's path is found as any such library is)
LD_LIBRARY_PATH="$prefix/install/lib:$prefix/install/lib/$(gcc -print-multiarch 2>/dev/null)${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$prefix/pc"
echo "== the installed CLI, run from an empty folder =="
mkdir "$prefix/empty"
cd "$prefix/empty"
"$prefix/install/bin/impulse" --version
# the default data set comes from the prefix's share/impulse, not the source tree
"$prefix/install/bin/impulse" train --method contactnets-polytope --epochs 1 --threads 1 --out run >/dev/null
grep -q "\"$prefix/install/share/impulse/data/synthetic_cube.npz\"" run/config.json ||
  { echo "the installed CLI did not read its data from $prefix/install/share/impulse" >&2; grep '"data"' run/config.json >&2; exit 1; }
echo "installed CLI: trained one epoch on $prefix/install/share/impulse/data/synthetic_cube.npz"
