#!/usr/bin/env python3
"""Where a kernel's register spills sit: compiles a kernels/ file for a GPU architecture
(sm_90 by default, as the release build), disassembles the kernel's SASS with nvdisasm and
lists each local-memory spill instruction (STL / LDL) with the kernel source line it belongs
to (the outermost line of nvdisasm's inlining chain), the kernel's phase (its `// ---- NAME`
marker comments), and whether that line is inside the solver's iteration loop. A spill
inside it costs every iteration; one outside costs once a solve (or once a phase of it).
"Inside" is decided by the source line, not by the SASS's control flow: the compiler may
place an instruction of a line elsewhere (e.g. a phase loop's reload at the kernel's end).

    python3 bench/gpu_spills.py                         # the ContactNets QP (double, fallback)
    python3 bench/gpu_spills.py --kernel qp_admm_warp_kernelIfLb0ELb0 --out spills.md

The simulator runs PTX, where spills do not exist, so it cannot time them: this is how
bench/results/ shows what they cost. Needs nvcc (the CUDA toolkit) and nvdisasm: taken from
PATH or the toolkit, else installed from PyPI (nvidia-cuda-nvdisasm) into build-sim/tools.
"""
import argparse
import glob
import os
import re
import shutil
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def find_nvdisasm(cuda):
    for p in (shutil.which("nvdisasm"), os.path.join(cuda, "bin", "nvdisasm")):
        if p and os.access(p, os.X_OK):
            return p
    tools = os.path.join(ROOT, "build-sim", "tools")
    found = glob.glob(os.path.join(tools, "nvidia", "*", "bin", "nvdisasm"))
    if not found:
        print("gpu_spills: nvdisasm not found; installing nvidia-cuda-nvdisasm from PyPI into "
              f"{os.path.relpath(tools, ROOT)}", file=sys.stderr)
        subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target", tools,
                        "nvidia-cuda-nvdisasm>=13,<14"], check=True)
        found = glob.glob(os.path.join(tools, "nvidia", "*", "bin", "nvdisasm"))
    if not found:
        sys.exit("gpu_spills: no nvdisasm (PATH, the toolkit, or PyPI's nvidia-cuda-nvdisasm)")
    os.chmod(found[0], 0o755)
    return found[0]


def phases(source):
    """(line, name) of the `// ---- NAME` markers of a source file, in order"""
    out = []
    for i, line in enumerate(open(source, encoding="utf-8"), 1):
        m = re.match(r"\s*// ---- (.*?)\s*-*\s*$", line)
        if m:
            out.append((i, m.group(1)))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--source", default="kernels/qp_warp_kernels.cu")
    ap.add_argument("--kernel", default="qp_admm_warp_kernelIdLb1ELb0",
                    help="a substring of the mangled name (default: double, fallback, not kept)")
    ap.add_argument("--arch", default="sm_90")
    ap.add_argument("--out", help="also write the table here (markdown)")
    a = ap.parse_args()
    cuda = os.environ.get("CUDA_HOME", "/usr/local/cuda")
    nvcc = shutil.which("nvcc") or os.path.join(cuda, "bin", "nvcc")
    if not os.access(nvcc, os.X_OK):
        sys.exit("gpu_spills: no nvcc (the CUDA toolkit)")
    nvdisasm = find_nvdisasm(cuda)
    work = os.path.join(ROOT, "build-sim", "spills")
    os.makedirs(work, exist_ok=True)
    src = os.path.join(ROOT, a.source)
    cubin = os.path.join(work, os.path.basename(a.source) + "." + a.arch + ".cubin")
    # the release build's flags (CMakeLists.txt), for one architecture
    cmd = [nvcc, "-O3", "-DNDEBUG", "-DIMPULSE_WITH_CUDA=1", "-cubin", f"-arch={a.arch}",
           "--expt-relaxed-constexpr", "-lineinfo", "-std=c++17", f"-I{ROOT}", "-Xptxas", "-v", "-o", cubin, src]
    log = cubin + ".ptxas.txt"
    heads = glob.glob(os.path.join(ROOT, "kernels", "*.h")) + glob.glob(os.path.join(ROOT, "kernels", "*.cuh")) + \
        glob.glob(os.path.join(ROOT, "solvers", "*.h"))
    fresh = os.path.exists(log) and os.path.exists(cubin) and all(os.path.getmtime(f) < os.path.getmtime(log) for f in [src] + heads)
    if not fresh:  # (compiled again only when the source or a header changed)
        print(f"gpu_spills: compiling {a.source} for {a.arch}", file=sys.stderr)
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode:
            sys.exit(r.stderr[-3000:])
        open(log, "w").write(r.stderr)
    r = subprocess.CompletedProcess(cmd, 0, "", open(log).read())
    # ptxas's report of the kernel: registers and spill bytes
    report, name = {}, None
    for line in r.stderr.splitlines():
        m = re.search(r"(?:Compiling entry function|Function properties for) '?(\S+?)'?(?: for|$)", line)
        if m:
            name = m.group(1)
        m = re.search(r"(\d+) bytes spill stores, (\d+) bytes spill loads", line)
        if m and name and a.kernel in name:
            report["spill"] = (int(m.group(1)), int(m.group(2)))
        m = re.search(r"Used (\d+) registers", line)
        if m and name and a.kernel in name:
            report["regs"] = int(m.group(1))
    sass = subprocess.run([nvdisasm, "-gi", cubin], capture_output=True, text=True, check=True).stdout.splitlines()
    start = next((i for i, l in enumerate(sass) if l.startswith(".text.") and a.kernel in l), None)
    if start is None:
        sys.exit(f"gpu_spills: no kernel matching {a.kernel} in {cubin}")
    end = next((i for i in range(start + 1, len(sass)) if sass[i].startswith(".text.")), len(sass))
    base = os.path.basename(a.source)
    where = None           # the kernel-level source line of the instructions that follow
    insns = []             # (address, text, source line)
    for l in sass[start:end]:
        m = re.search(r'//## File "([^"]+)", line (\d+)$', l)  # the outermost of an inlining chain
        if m and os.path.basename(m.group(1)) == base:
            where = int(m.group(2))
            continue
        m = re.match(r"\s*/\*([0-9a-f]+)\*/\s+(.*?)\s*;?\s*$", l)
        if m:
            insns.append((int(m.group(1), 16), m.group(2), where))
    marks = phases(src)
    code = open(src, encoding="utf-8").read().splitlines()
    phase_of = lambda line: next((n for ln, n in reversed(marks) if line is not None and ln <= line),
                                 "(before the first phase)")
    # the iteration loop's source lines: from its marker to the next phase that is not one of
    # its own (the check, infeasibility, adaptive ρ and the stagnation restart run inside it)
    it_from = next((ln for ln, n in marks if n.startswith("the iteration")), None)
    it_to = next((ln for ln, n in marks if it_from and ln > it_from and n.startswith("finish")), None)
    rows = []
    for addr, text, line in insns:
        if re.match(r"(@!?P\d+\s+)?(STL|LDL)\b", text):
            spill = "SpillRefill" in text  # nvdisasm's note on a spill or its refill
            text = re.sub(r"\s*\(\*.*\*\)\s*$", "", text).strip()
            inside = it_from is not None and it_to is not None and line is not None and it_from <= line < it_to
            rows.append((addr, text + ("" if spill else " (a local array, not a spill)"), line, phase_of(line),
                         inside, spill))
    L = [f"`{a.kernel}` in {a.source}, {a.arch}: {report.get('regs', '?')} registers, "
         f"{report.get('spill', ('?', '?'))[0]} / {report.get('spill', ('?', '?'))[1]} bytes of spill stores / loads "
         f"(ptxas); {sum(r[5] for r in rows)} spill instructions and {sum(not r[5] for r in rows)} other "
         f"local-memory ones of {len(insns):,} in its SASS.\n",
         "| SASS address | instruction | kernel source line | its text | after the marker of | in the iteration loop |",
         "|---|---|---|---|---|---|"]
    for addr, text, line, ph, inside, _ in rows:
        src_text = code[line - 1].strip().replace("|", "\\|")[:70] if line else ""
        L.append(f"| {addr:#x} | `{text}` | {line} | `{src_text}` | {ph} | {'yes' if inside else 'no'} |")
    if it_from and it_to:
        n_in = sum(1 for r in rows if r[4] and r[5])
        L.append(f"\nSpill instructions inside the iteration loop (source lines {it_from}-{it_to - 1}: the "
                 f"iteration, its checks, infeasibility, adaptive ρ, the stagnation restart): {n_in} of "
                 f"{sum(r[5] for r in rows)}.")
    text = "\n".join(L)
    print(text)
    if a.out:
        open(a.out, "w", encoding="utf-8").write(text + "\n")


if __name__ == "__main__":
    main()
