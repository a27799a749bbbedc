#!/usr/bin/env python3
"""The default build runs on any x86-64 (host/batch/lane_kernels.h).

  check_portable.py BINARY LANE_OBJECT...

1. BINARY (the CLI or a shared library) has no instruction beyond the x86-64
   baseline outside the lane kernels: objdump's disassembly shows no AVX or
   later mnemonic (all begin with 'v': vaddpd, vmovsd, vfmadd...) and no ymm or
   zmm register in any function that is not in a lane set's namespace
   (impulse::isa_avx2, impulse::isa_avx512). A -march=native build fails here.
2. Each LANE_OBJECT (host/batch/lane_solve.cc or qp_ipm.cc compiled for one set) defines no
   global or weak symbol outside its set's namespace but its table function
   impulse_lane_kernels_<set>: an inline function or template instance compiled
   for AVX-512 that took the place of the baseline's at link time would run
   AVX-512 code on every CPU.
Exit 0 when both hold; 1 with the offenders named otherwise.
"""
import re
import subprocess
import sys

WIDE_SETS = ("isa_avx2", "isa_avx512")


def beyond_baseline(binary):
    dis = subprocess.run(["objdump", "-d", "--no-show-raw-insn", "-C", binary], check=True,
                         capture_output=True, text=True).stdout
    func, bad, lane_insns = None, {}, 0
    for line in dis.splitlines():
        m = re.match(r"^[0-9a-f]+ <(.*)>:$", line)
        if m:
            func = m.group(1)
            continue
        parts = line.split("\t")
        if len(parts) < 2 or func is None:
            continue
        insn = parts[1].strip()
        mnemonic = insn.split(" ")[0]
        wide = mnemonic.startswith("v") and mnemonic not in ("verr", "verw") or "%ymm" in insn or "%zmm" in insn
        if not wide:
            continue
        if any(s in func for s in WIDE_SETS):
            lane_insns += 1
        else:
            bad.setdefault(func, insn)
    return bad, lane_insns


def leaked_symbols(obj):
    m = re.search(r"impulse_lanes_(isa_\w+?)\.dir", obj)
    if not m:
        raise SystemExit(f"{obj}: not a lane object (expected .../impulse_lanes_isa_<set>.dir/...)")
    isa = m.group(1)
    out = subprocess.run(["nm", "--defined-only", obj], check=True, capture_output=True, text=True).stdout
    leaks = []
    for line in out.splitlines():
        f = line.split()
        if len(f) < 3:
            continue
        kind, name = f[1], f[2]
        if kind.islower() and kind not in ("u", "v", "w"):
            continue  # local
        if isa in name or name.startswith("DW.ref.") or name == f"impulse_lane_kernels_{isa}":
            continue
        leaks.append(name)
    return isa, leaks


def main():
    if len(sys.argv) < 3:
        raise SystemExit(__doc__)
    ok = True
    bad, lane_insns = beyond_baseline(sys.argv[1])
    if bad:
        ok = False
        print(f"{sys.argv[1]}: {len(bad)} functions outside the lane kernels use AVX or wider, e.g.:")
        for func, insn in list(bad.items())[:15]:
            print(f"  {func}: {insn}")
    else:
        print(f"{sys.argv[1]}: baseline x86-64 outside the lane kernels "
              f"({lane_insns} AVX/AVX-512 instructions, all in impulse::isa_avx2 / isa_avx512)")
    if lane_insns == 0:
        ok = False
        print("no AVX instruction in any lane kernel: the wide sets are not in this binary")
    # a set's object library has more than one object: ctest may pass them as one
    # ';'-joined argument ($<TARGET_OBJECTS:...>)
    objects = [o for arg in sys.argv[2:] for o in arg.split(";") if o]
    for obj in objects:
        isa, leaks = leaked_symbols(obj)
        if leaks:
            ok = False
            print(f"{obj}: {len(leaks)} symbols outside impulse::{isa}:")
            for s in leaks[:15]:
                print("  " + subprocess.run(["c++filt", s], capture_output=True, text=True).stdout.strip())
        else:
            print(f"{isa}: every symbol it defines is its own")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
