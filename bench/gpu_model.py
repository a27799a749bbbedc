#!/usr/bin/env python3
"""GPU throughput on an H100 / H200, predicted from measured counts (not measured).

    bash bench/gpu_counts.sh                  # the simulator's counts and ptxas reports
    python3 bench/gpu_model.py [--out FILE]   # this model; writes a markdown report

Inputs, each measured or published:
- per kernel, from a functional simulation (GPGPU-Sim, instruction classification on)
  of a small batch: dynamic PTX instructions, by opcode and by memory space;
- per kernel, from `ptxas -v` for sm_90: registers per thread, spill stores/loads,
  stack frame;
- the published H100 SXM5 and H200 SXM figures (SPECS below, with their sources).

For each kernel it computes problems per second:
- issue: every warp instruction takes an issue slot (4 schedulers per SM, one warp
  instruction per cycle each), warps fully converged (one problem per thread): an
  upper limit;
- arithmetic: FP32 / FP64 instructions on 128 / 64 lanes per SM per cycle, special
  functions on 16: upper limits;
- memory, no reuse: every global and local access of a warp is one fully used 128-byte
  transaction (the batch-fastest layout) that goes to DRAM. This is NOT an upper limit:
  it ignores cache reuse, so it is a pessimistic estimate, used when the resident
  problems' working set exceeds L2 (checked below). The real figure then lies between
  it and the tightest upper limit: the report gives both ends;
- shared memory: 32 banks x 4 B per clock per SM, every access conflict-free and
  from a full warp (the warp-per-problem kernel's layout is conflict-free by
  construction: odd row stride, broadcasts): an upper limit;
- DRAM, compulsory: each problem's data read once and its answer written once at the
  HBM bandwidth: an upper limit;
- occupancy: from the registers per thread, the threads per SM and (warp per problem)
  the shared memory per block (228 KB per SM, 1 KB of it reserved per block);
- occupancy and latency: one problem's instructions issued back to back by one warp
  (≥ 1 cycle each) is the shortest time a launch can take; a training step that
  launches one mini-batch at a time cannot finish faster.
Two kernel shapes: thread per problem (a warp runs 32 problems) and warp per problem
(kernels/qp_warp_kernels.cu: a warp runs one). The simulator counts instructions per
thread; the issue slots a problem takes are its thread instructions / 32 for both
shapes when warps are converged and full (the simulator's functional mode cannot count
warp instructions), so the issue bound is an upper limit for both: the thread kernel loses lanes when the problems of a
warp stop at different iterations, the warp kernel on its 48-row loops (32 + 16 lanes)
and the per-cone branches.
Approximations, stated in the report: the simulator executes PTX, not SASS (SASS
expands a few PTX instructions, e.g. div.rn.f32 and sqrt, into sequences); opcodes
that exist for integers and floats (add, mul, min, setp, ...) are split between FP and
integer by the kernel's static PTX mix of that opcode; access widths are the static
average of the kernel's ld/st of that space.

With latency (bench/gpu_timing.sh, the report's last section): the simulator's
performance model times the same kernels cycle by cycle on one full SM (throughput) or
on 132 SMs (a training step's small launches); its cycles at the H100's clock and SM
count give a prediction that counts the latency the issue limit assumes hidden. A
training step waits for its slowest QP, costed from a solve's set-up, an iteration and a
ρ update: their cycles come from the clocks build's run (contactnets_clocks_132sm: the
warp kernel reads the simulator's cycle counter at its phase boundaries), not from
per-line summed latencies grouped by phase, which misplace a ρ update's refactorization
(bench/results/gpu_clocks_2026-11-27.md).
"""
import argparse
import collections
import csv
import datetime
import glob
import math
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
COUNTS = os.path.join(ROOT, "build-sim", "counts")
GROUP_LANES = {"assemble_kernel": 32, "finish_kernel": 8}  # lanes per transition (see above)

# Published figures. H100: NVIDIA H100 Tensor Core GPU datasheet (SXM5: FP64 34 TFLOPS,
# FP32 67 TFLOPS, HBM3 3.35 TB/s, 80 GB) and the NVIDIA H100 Tensor Core GPU Architecture
# whitepaper (SXM5: 132 SMs; per SM 128 FP32 and 64 FP64 lanes, 16 SFUs (4 per
# partition), 4 warp schedulers, 64K 32-bit registers, 2048 threads, 256 KB L1/shared;
# 50 MB L2; 1.98 GHz boost, which with the lane counts gives the datasheet's FP32/FP64
# rates). H200: NVIDIA H200 Tensor Core GPU datasheet (SXM: the same GH100 compute, FP64
# 34 TFLOPS, FP32 67 TFLOPS; HBM3e 4.8 TB/s, 141 GB).
# Shared memory (both): up to 228 KB of the 256 KB L1 per SM, at most 227 KB per block,
# 1 KB per block reserved by the system, at most 32 resident blocks per SM (CUDA C++
# Programming Guide, technical specifications for compute capability 9.0, and the Hopper
# tuning guide); 32 banks of 4 bytes, one access per bank per clock.
SPECS = {
    "H100 SXM": dict(sms=132, ghz=1.98, fp32=128, fp64=64, sfu=16, sched=4, regs=65536,
                     threads=2048, l1_kb=256, l2_mb=50, hbm_tbs=3.35,
                     smem_kb=228, smem_reserved_kb=1, max_blocks=32, smem_bytes_clk=32 * 4),
    "H200 SXM": dict(sms=132, ghz=1.98, fp32=128, fp64=64, sfu=16, sched=4, regs=65536,
                     threads=2048, l1_kb=256, l2_mb=50, hbm_tbs=4.8,
                     smem_kb=228, smem_reserved_kb=1, max_blocks=32, smem_bytes_clk=32 * 4),
}

# the cases of bench/gpu_counts.sh: what one "problem" is, and its working set in bytes
# (the data a thread reads and its workspace, from solvers/qp_admm.h's qp_work_size and
# the batch layouts)
def qp_bytes(n, m, t):
    r = lambda k: (k + 15) // 16 * 16
    work = 2 * r(n * n) + 5 * r(n) + 7 * r(m) + 16
    data = n * n + n + m * n + m  # P, q, A (dense bound), b
    return (work + data + n + m) * t  # + x, y


def qp_warp_bytes(n, m, t, nnz=None):  # warp per problem: the data and x, y only (no global workspace)
    return (n * n + n + (m * n if nnz is None else nnz) + m + n + m) * t


def qp_compulsory_bytes(n, m, nnz, t):  # P, q, A's values, b in; x, y and 8 scalars out
    return (n * n + n + nnz + m + n + m + 8) * t


def kernel_short(mangled):
    for key in ("qp_admm_warp_kernel", "qp_admm_kernel", "lcp_pgs_kernel", "loss_kernel", "assemble_kernel",
                "finish_kernel", "sum_rows_kernel"):
        i = mangled.find(key)
        if i >= 0:
            rest = mangled[i + len(key):]
            t = {"f": "float", "d": "double"}.get(rest[1:2], "")
            # the warp kernel's second and third template arguments: the fallback restart
            # compiled in (Lb1E), the kept factorization compiled in (Lb1E)
            if t and key == "qp_admm_warp_kernel" and rest[2:6] == "Lb1E":
                t += ", fallback"
            if t and key == "qp_admm_warp_kernel" and rest[6:10] == "Lb1E":
                t += ", kept"
            # the ContactNets assembly and gradient: the thread layout's batch-fastest arrays (Lb1E)
            if t and key in ("assemble_kernel", "finish_kernel") and rest[2:6] == "Lb1E":
                t += ", batch-fastest"
            return key + (f"<{t}>" if t else "")
    return mangled[:40]


def opcode_names():
    paths = glob.glob(os.path.join(os.environ.get("IMPULSE_GPGPUSIM", "/opt/gpgpu-sim"),
                                   "gpgpu-sim", "src", "cuda-sim", "opcodes.def"))
    if not paths:
        sys.exit("gpu_model: the simulator's opcodes.def was not found (run bench/gpu_counts.sh)")
    names = []
    for line in open(paths[0]):
        m = re.match(r"\s*OP_(?:W_)?DEF\(\s*\w+\s*,\s*\w+\s*,\s*\"([^\"]+)\"", line)
        if m:
            names.append(m.group(1))
    return names


def parse_sim(path):
    """[(kernel, threads, op histogram, class histogram)] in launch order."""
    text = open(path, encoding="latin1").read()
    out = []
    pushes = list(re.finditer(r"pushing kernel '([^']+)' to stream \d+, gridDim= \((\d+),(\d+),(\d+)\) "
                              r"blockDim = \((\d+),(\d+),(\d+)\)", text))
    stats = list(re.finditer(r"Stats for Kernel (\d+) Classification.*?\[([^\]]*)\].*?"
                             r"Stats for Kernel \d+ OP Classification.*?\[([^\]]*)\]", text, re.S))
    if len(pushes) != len(stats):
        sys.exit(f"gpu_model: {path}: {len(pushes)} launches but {len(stats)} statistics blocks")
    for p, s in zip(pushes, stats):
        g = [int(v) for v in p.groups()[1:]]
        threads = g[0] * g[1] * g[2] * g[3] * g[4] * g[5]
        cls = [int(v) for v in s.group(2).split()]
        ops = [int(v) for v in s.group(3).split()]
        out.append((kernel_short(p.group(1)), threads, ops, cls, g[0]))
    return out


def ptx_sections(path):
    """kernel short name -> its PTX text (entry functions only)."""
    if not os.path.exists(path):
        return {}
    text = open(path, encoding="latin1").read()
    parts = re.split(r"(?=\.visible \.entry |\.entry )", text)
    out = {}
    for part in parts[1:]:
        m = re.match(r"(?:\.visible )?\.entry (\S+?)\(", part)
        if m:
            out[kernel_short(m.group(1))] = part
    return out


def static_mix(ptx):
    """per opcode: fraction of its static occurrences typed f32 / f64; per space: mean width"""
    fp = collections.defaultdict(lambda: [0, 0, 0])  # f32, f64, total
    width = collections.defaultdict(lambda: [0, 0])  # bytes, count
    size = {"8": 1, "16": 2, "32": 4, "64": 8}
    for line in ptx.splitlines():
        m = re.match(r"\s*(?:@!?%p\d+\s+)?([a-z]+)((?:\.[a-z0-9]+)*)\s", line)
        if not m:
            continue
        op, mods = m.group(1), m.group(2).split(".")[1:]
        e = fp[op]
        e[2] += 1
        if "f32" in mods:
            e[0] += 1
        elif "f64" in mods:
            e[1] += 1
        if op in ("ld", "st") and mods:
            space = mods[0] if mods[0] in ("global", "local", "param", "shared", "const") else "generic"
            vec = 4 if "v4" in mods else 2 if "v2" in mods else 1
            bits = [size[x[1:]] for x in mods if re.fullmatch(r"[fbsu](8|16|32|64)", x)]
            if bits:
                width[(op, space)][0] += vec * bits[-1]
                width[(op, space)][1] += 1
    return fp, width


def ptxas_report(paths):
    """kernel short name -> (registers, spill stores, spill loads, stack, static shared
    bytes a block) for sm_90"""
    out = {}
    for path in paths:
        name = None
        for line in open(path, encoding="latin1"):
            m = re.search(r"Compiling entry function '([^']+)' for 'sm_90'", line)
            if m:
                name = kernel_short(m.group(1))
            m = re.search(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads", line)
            if m and name and name not in out:
                out[name] = [0, int(m.group(2)), int(m.group(3)), int(m.group(1))]
            m = re.search(r"Used (\d+) registers", line)
            if m and name and name in out and out[name][0] == 0:
                out[name][0] = int(m.group(1))
                sm = re.search(r"(\d+) bytes smem", line)  # static shared memory a block
                out[name].append(int(sm.group(1)) if sm else 0)
    return out


FP_OPS = ("add", "sub", "mul", "fma", "mad", "div", "min", "max", "abs", "neg", "setp", "selp",
          "sqrt", "rcp", "rsqrt", "ex2", "lg2", "sin", "cos", "cvt", "mov", "testp", "copysign")
SFU_OPS = ("sqrt", "rcp", "rsqrt", "ex2", "lg2", "sin", "cos")
CONTROL = ("bra", "call", "ret", "exit", "bar", "membar", "vote", "brx")


def classify(ops, cls, names, mix):
    fp, width = mix
    c = collections.Counter()
    for i, n in enumerate(ops):
        if not n:
            continue
        op = names[i] if i < len(names) else f"op{i}"
        c["total"] += n
        if op in CONTROL:
            c["control"] += n
        elif op in ("ld", "ldu", "st", "atom", "red"):
            c["load" if op in ("ld", "ldu") else "store" if op == "st" else "atomic"] += n
        elif op in FP_OPS and fp[op][2]:
            f32, f64, tot = fp[op]
            kind = "sfu" if op in SFU_OPS else "fp"
            c[kind + "32"] += n * f32 / tot
            c[kind + "64"] += n * f64 / tot
            c["int"] += n * (tot - f32 - f64) / tot
        else:
            c["int"] += n
    # memory spaces from the class histogram: 10 global, 11 local, 14 param, 15 shared, 16 const
    get = lambda k: cls[k] if k < len(cls) else 0
    c["global"], c["local"], c["param"], c["shared"] = get(10), get(11), get(14), get(15)
    # the simulator counts every shfl in the global class (a kernel of 1,000 shuffles
    # on one warp and no loads: 32,064 "global" = 32,000 shuffles + 32 stores + 32 cvta,
    # bench/results/gpu_warp_vs_thread_2026-11-24.md): a shuffle moves no memory
    shfl = sum(n for i, n in enumerate(ops) if i < len(names) and names[i] == "shfl")
    c["global"] -= shfl
    # bytes: the accesses of a space times the static mean width of its ld/st
    def mean(space):
        b = sum(width[(o, space)][0] for o in ("ld", "st"))
        k = sum(width[(o, space)][1] for o in ("ld", "st"))
        return b / k if k else 0.0
    c["global_bytes"] = c["global"] * mean("global")
    c["local_bytes"] = c["local"] * mean("local")
    c["shared_bytes"] = c["shared"] * mean("shared")
    return c


def occupancy(regs, spec, smem_block=0, warps_block=4):
    """resident warps per SM, and what limits them (blocks of warps_block warps)"""
    if not regs:
        return 0, "—"
    per_warp = math.ceil(regs * 32 / 256) * 256
    lim = {"registers": spec["regs"] // (per_warp * warps_block),
           "threads": spec["threads"] // (32 * warps_block), "blocks": spec["max_blocks"]}
    if smem_block:
        lim["shared memory"] = int(spec["smem_kb"] * 1024 // (smem_block + spec["smem_reserved_kb"] * 1024))
    by = min(lim, key=lim.get)
    return lim[by] * warps_block, by


def bounds(c, problems, spec, lanes=32.0, compulsory=0):
    """lanes: mean active lanes per warp instruction (32: converged, full warps)"""
    f = spec["ghz"] * 1e9
    per = {k: v / problems for k, v in c.items()}
    b = {}
    b["issue"] = spec["sms"] * spec["sched"] * f * lanes / per["total"]
    if per.get("fp32"):
        b["FP32"] = spec["sms"] * spec["fp32"] * f / per["fp32"]
    if per.get("fp64"):
        b["FP64"] = spec["sms"] * spec["fp64"] * f / per["fp64"]
    sfu = per.get("sfu32", 0) + 2 * per.get("sfu64", 0)
    if sfu:
        b["SFU"] = spec["sms"] * spec["sfu"] * f / sfu
    if per.get("shared_bytes"):
        b["shared"] = spec["sms"] * spec["smem_bytes_clk"] * f / per["shared_bytes"]
    if compulsory:
        b["DRAM once"] = spec["hbm_tbs"] * 1e12 / compulsory
    mem = per["global_bytes"] + per["local_bytes"]
    if mem:
        b["DRAM"] = spec["hbm_tbs"] * 1e12 / mem
    return per, b


# the cube loss QP's A: 8 + 8 + 8 x 25 (penetration rows) + 24 (cone rows) nonzeros
# (host/batch/generate.cc); the warp driver prints the batch's nnz, which replaces this
CUBE_NNZ = 240
CASES = [  # case, what it is, T bytes, kernel, working set per problem (bytes)
    ("qp_cube_float_cold", "cube loss QP, float32, eps 1e-5, cold", 4, "qp_admm_kernel<float>", qp_bytes(32, 48, 4)),
    ("qp_cube_float_warm", "cube loss QP, float32, eps 1e-5, warm (q 0.1% off)", 4, "qp_admm_kernel<float>", qp_bytes(32, 48, 4)),
    ("qp_cube_float_cold_warp", "same, cold, WARP per problem", 4, "qp_admm_warp_kernel<float>", qp_warp_bytes(32, 48, 4)),
    ("qp_cube_float_warm_warp", "same, warm, WARP per problem", 4, "qp_admm_warp_kernel<float>", qp_warp_bytes(32, 48, 4)),
    ("qp_cube_float_setup", "same, cold, stopped after 1 iteration (set-up)", 4, "qp_admm_kernel<float>", qp_bytes(32, 48, 4)),
    ("qp_cube_float_setup_warp", "same, stopped after 1 iteration, WARP per problem", 4, "qp_admm_warp_kernel<float>", qp_warp_bytes(32, 48, 4)),
    ("qp_anitescu_float_cold", "Anitescu step QP, float32, eps 1e-5, cold", 4, "qp_admm_kernel<float>", qp_bytes(24, 24, 4)),
    ("qp_cube_float_setup_warp_nocheck", "same, 1 iteration, WARP, no input check", 4, "qp_admm_warp_kernel<float>", qp_warp_bytes(32, 48, 4)),
    ("qp_cube_float_setup_warp_noruiz", "same, 1 iteration, WARP, no input check, no Ruiz", 4, "qp_admm_warp_kernel<float>", qp_warp_bytes(32, 48, 4)),
    ("qp_cube_float_kept_warp", "same, warm, WARP, the factorization kept (q and b replaced)", 4, "qp_admm_warp_kernel<float, kept>", qp_warp_bytes(32, 48, 4) + (32 * 32 + 32 + 48 + 6) * 4),
    ("qp_anitescu_float_cold_warp", "Anitescu step QP, float32, eps 1e-5, cold, WARP per problem", 4, "qp_admm_warp_kernel<float>", qp_warp_bytes(24, 24, 4)),
    ("lcp_pgs_cone_double", "PGS LCP, friction-cone block, n = 12, double", 8, "lcp_pgs_kernel<double>", (12 * 12 + 4 * 12 + 4) * 8),
    # the thread layout: the same assembly and gradient kernels (batch-fastest arrays), the
    # thread-per-problem QP kernel (before 2026-11-27: one fused kernel, loss_kernel)
    ("contactnets_loss_double", "ContactNets loss, THREAD layout: assembly, a warp per transition, double", 8, "assemble_kernel<double, batch-fastest>", qp_warp_bytes(32, 32, 8, 224) + 13 * 2 * 8),
    ("contactnets_loss_double", "ContactNets loss, THREAD layout: the QP, a thread per transition, double", 8, "qp_admm_kernel<double>", qp_bytes(32, 32, 8)),
    ("contactnets_loss_double", "ContactNets loss, THREAD layout: gradient, eight lanes per transition, double", 8, "finish_kernel<double, batch-fastest>", qp_warp_bytes(32, 32, 8, 224) + 13 * 2 * 8),
    ("contactnets_warp_double", "ContactNets loss, WARP layout: assembly, a warp per transition, double", 8, "assemble_kernel<double>", qp_warp_bytes(32, 32, 8, 224) + 13 * 2 * 8),
    ("contactnets_warp_double", "ContactNets loss, WARP layout: the QP, a warp per transition, double", 8, "qp_admm_warp_kernel<double, fallback>", qp_warp_bytes(32, 32, 8, 224)),
    ("contactnets_warp_double", "ContactNets loss, WARP layout: gradient, eight lanes per transition, double", 8, "finish_kernel<double>", qp_warp_bytes(32, 32, 8, 224) + 13 * 2 * 8),
]
# training (bench/gpu_counts.sh: 3 epochs, eps 1e-4, warm starts): the last epoch's launches
TRAIN_CASES = {"contactnets_train_double": "warp", "contactnets_train_thread_double": "thread"}
CASES += [
    ("contactnets_train_double", "ContactNets training (eps 1e-4, warm), WARP layout: assembly", 8, "assemble_kernel<double>", qp_warp_bytes(32, 32, 8, 224) + 13 * 2 * 8),
    ("contactnets_train_double", "ContactNets training (eps 1e-4, warm), WARP layout: the QP", 8, "qp_admm_warp_kernel<double, fallback>", qp_warp_bytes(32, 32, 8, 224)),
    ("contactnets_train_double", "ContactNets training (eps 1e-4, warm), WARP layout: gradient", 8, "finish_kernel<double>", qp_warp_bytes(32, 32, 8, 224) + 13 * 2 * 8),
    ("contactnets_train_thread_double", "ContactNets training (eps 1e-4, warm), THREAD layout: assembly", 8, "assemble_kernel<double, batch-fastest>", qp_warp_bytes(32, 32, 8, 224) + 13 * 2 * 8),
    ("contactnets_train_thread_double", "ContactNets training (eps 1e-4, warm), THREAD layout: the QP", 8, "qp_admm_kernel<double>", qp_bytes(32, 32, 8)),
    ("contactnets_train_thread_double", "ContactNets training (eps 1e-4, warm), THREAD layout: gradient", 8, "finish_kernel<double, batch-fastest>", qp_warp_bytes(32, 32, 8, 224) + 13 * 2 * 8),
]


def train_launches(log, launches, batch=64):
    """a training run's last epoch: its launches of one kernel (one per chain: ceil(T / batch)
    mini-batches, then the validation set) and the transitions they cover (T + V), from the
    run's own line "train N tosses / T transitions, valid M / V"; the run is an initial
    validation chain and then whole epochs (checked)"""
    text = open(log, encoding="latin1").read()
    m = re.search(r"train \d+ tosses / (\d+) transitions, valid \d+ / (\d+)", text)
    if not m:
        sys.exit(f"gpu_model: {log}: the run's transition counts were not found")
    T, V = int(m.group(1)), int(m.group(2))
    per_epoch = math.ceil(T / batch) + 1
    if (len(launches) - 1) % per_epoch or len(launches) < 1 + 2 * per_epoch:
        sys.exit(f"gpu_model: {log}: {len(launches)} launches are not 1 + whole epochs of {per_epoch}")
    return launches[-per_epoch:], T + V


# the ContactNets loss tests evaluate the loss several times (cold first, then warm):
# their counts are the first (cold) launch's
FIRST_LAUNCH_ONLY = ("contactnets_loss_double", "contactnets_warp_double")
# a re-solve keeping the factorization (bench/gpu_warp_variant.cu --kept-from): the second
# launch (the first solved the batch it keeps), which also reads the kept K⁻¹, D, E, c, ρ
KEPT_CASES = ("qp_cube_float_kept_warp",)
# (m, nnz) of a case's QP where its log does not print the warp kernel's blocks (the tests):
# the ContactNets loss QP with exact cones (solvers/contactnets_qp.h: rows 8 + 24, nnz 8·25 + 24)
WARP_SHAPES = {"contactnets_warp_double": (32, 224), "contactnets_train_double": (32, 224)}


def warp_shared_bytes(m, nnz, t, dense=False):  # kernels/qp_kernels.h (dense: warp_shared_bytes_dense)
    ld = 34 if t == 8 else 36  # warp_dense_ld
    pad4 = lambda v: (v + 3) // 4 * 4  # warp_pad4
    return (pad4(nnz) + 4 * 32 + 9 * pad4(m) + (32 + ld * m + 32 * 32 if dense else 32 * 33)) * t


TIMING = os.path.join(ROOT, "build-sim", "timing")
# bench/gpu_timing.sh's cases: (case, what, kernel, launch taken)
TIMING_QP = [
    ("qp_cube_float_cold_1sm", "cube loss QP, float32, eps 1e-5, cold", "qp_admm_warp_kernel<float>", 0),
    ("qp_cube_float_warm_1sm", "same, warm (q 0.1% off)", "qp_admm_warp_kernel<float>", 0),
    ("qp_cube_float_kept_1sm", "same, warm, the factorization kept", "qp_admm_warp_kernel<float, kept>", 1),
]
# the host's side of a training step, assumed, not simulated: (µs a kernel launch, µs a
# synchronous copy; Adam on the host's 57 parameters taken as within these). A step has
# four launches and two copies (θ and the indices down; the losses, counts and gradient
# sum up: kernels/device_util.cuh's StepIo), the validation chain three launches and two
HOST_US = ((0.0, 0.0), (5.0, 10.0))


def parse_timing(path):
    """[(kernel, cycles, thread instructions, warp instructions issued)] per launch, in
    launch order, from the performance model's per-kernel statistics (its warp
    instruction counter is cumulative over the run: differenced here). A launch whose
    statistics block is incomplete (a run stopped in it) is left out."""
    out, rec, total_w = [], None, 0

    def close():
        nonlocal total_w
        if rec and None not in rec[1:]:
            out.append((rec[0], rec[1], rec[2], rec[3] - total_w))
            total_w = rec[3]

    for line in open(path, encoding="latin1"):
        if line.startswith("kernel_name = "):
            close()
            rec = [kernel_short(line.split("=", 1)[1].strip()), None, None, None]
        elif rec and line.startswith("gpu_sim_cycle = "):
            rec[1] = int(line.split("=")[1])
        elif rec and line.startswith("gpu_sim_insn = "):
            rec[2] = int(line.split("=")[1])
        elif rec and line.startswith("gpgpu_n_tot_w_icount = "):
            rec[3] = int(line.split("=")[1])
    close()
    return out


def shared_sm_check(log):
    """the QP launch of the loss test on 16 SMs (two warps an SM: bench/gpu_timing.sh's
    contactnets_loss_16sm) against the 132-SM run's, as a phrase"""
    other = os.path.join(os.path.dirname(os.path.dirname(log)), "contactnets_loss_16sm", "sim.log")
    qp = "qp_admm_warp_kernel<double, fallback>"
    one = [c for k, c, _, _ in parse_timing(log) if k == qp]
    done = os.path.exists(os.path.join(os.path.dirname(other), "done"))  # a finished run
    two = [c for k, c, _, _ in parse_timing(other) if k == qp] if done else []
    if not one or not two:
        return "not simulated (bench/gpu_timing.sh's contactnets_loss_16sm checks it)"
    return (f"checked: the loss test's QP launch on 16 SMs, two warps an SM, simulates at {two[0]:,} cycles "
            f"against {one[0]:,} on 132 ({100 * (two[0] / one[0] - 1):+.2f}%)")


def epoch_lines(log, results, qp_used):
    """a ContactNets epoch on 256 tosses from the 132-SM run of the loss test (each kernel's
    first launch: 32 transitions, cold, the test's tolerance), the QP scaled to a warm
    training solve by the functional counts' instructions per transition."""
    first = {}
    for k, cycles, insn, winsn in parse_timing(log):
        first.setdefault(k, (cycles, insn, winsn))
    names = ["assemble_kernel<double>", "qp_admm_warp_kernel<double, fallback>", "finish_kernel<double>",
             "sum_rows_kernel<double>"]
    missing = [n for n in names if n not in first]
    if missing:
        sys.exit(f"gpu_model: {log}: no launch of {', '.join(missing)}")
    per = {}  # instructions per transition of the QP: the loss test's cold solve, training's warm one
    for x in results:
        if x[2] == "qp_admm_warp_kernel<double, fallback>" and x[0] in ("contactnets_warp_double",
                                                                         "contactnets_train_double"):
            per[x[0]] = (x[3]["total"] / x[4], x)
    if len(per) < 2:
        return ["\n(no ContactNets epoch: bench/gpu_counts.sh's contactnets_warp_double and "
                "contactnets_train_double counts are needed)"]
    f = SPECS["H100 SXM"]["ghz"] * 1e9
    cold, warm = per["contactnets_warp_double"][0], per["contactnets_train_double"][0]
    scale = warm / cold
    qc = first[names[1]][0]
    step_cycles = {names[0]: first[names[0]][0], names[1]: qc * scale, names[2]: first[names[2]][0],
                   names[3]: first[names[3]][0]}
    step = sum(step_cycles.values()) / f
    train, valid, batch = TRAIN_TRANSITIONS, VALID_TRANSITIONS, TRAIN_BATCH
    steps = math.ceil(train / batch)
    L = ["\n### A ContactNets epoch on 256 tosses\n",
         "The loss-and-gradient GPU test (warp layout, double, 32 transitions, cold at the test's "
         "tolerance) simulated on 132 SMs: each transition's QP warp has an SM to itself, as a "
         f"mini-batch of {min(batch, 132)} has on an H100"
         + (f" (a mini-batch of {batch}, this prediction's, puts two warps on {batch - 132} of the SMs: "
            "a latency-bound warp issues an instruction every ~13 cycles, so two on an SM's four "
            "schedulers are taken not to slow each other; " + shared_sm_check(log) + ")" if batch > 132 else "")
         + ". Each kernel's first launch is one step's: the assembly (a "
         "warp per transition, blocks of 4), the QP, the gradient (eight lanes per transition, blocks "
         f"of 16) and the gradient sum. A mini-batch of {batch} has {batch / 32:g} times the test's blocks of the assembly "
         "and the gradient, still at most one an SM, each SM the same load, so those figures carry over. The QP's cycles are scaled to a training step's warm solve (eps 1e-4, "
         f"warm from the previous epoch) by the functional counts: {warm:,.0f} instructions a transition "
         f"against the test's {cold:,.0f} (x {scale:.3f}), i.e. at the cold solve's cycles per "
         "instruction.\n",
         "| kernel | cycles (simulated) | a training step's, µs at 1.98 GHz | cycles per warp instruction issued |",
         "|---|---|---|---|"]
    for n in names:
        c, insn, winsn = first[n]
        note = f" (x {scale:.3f}: {step_cycles[n]:,.0f})" if n == names[1] else ""
        # warp instructions a warp issued (their mean): the QP's and the assembly's 32 warps (a
        # transition each), the gradient's 8 (four transitions each)
        per_warp = {names[1]: winsn / 32, names[0]: winsn / 32, names[2]: winsn / 8}.get(n)
        cpi = f"{c / per_warp:,.1f}" if per_warp else "—"
        L.append(f"| `{n}` | {c:,}{note} | {step_cycles[n] / f * 1e6:,.1f} | {cpi} |")
    L.append(f"| a step | {sum(step_cycles.values()):,.0f} | **{step * 1e6:,.1f}** | |")
    # validation: one chain of 17,969 transitions. The assembly (blocks of 4 transitions) and
    # the gradient (blocks of 16): ceil(blocks / SMs) blocks on the busiest SM, taken one after
    # another at the test's time for one block (pessimistic: an SM holds several at once). The
    # QP: at one full SM's share of its issue limit, the share the cold cube QP filled (if that
    # run exists)
    x = per["contactnets_train_double"][1]
    _, b = bounds(x[3], x[4], SPECS["H100 SXM"])
    sms = SPECS["H100 SXM"]["sms"]
    asm_blocks = math.ceil(math.ceil(valid / 4) / sms)
    fin_blocks = math.ceil(math.ceil(valid / 16) / sms)
    if qp_used:
        used, how = qp_used, "the share the cold cube QP filled on one full SM"
    else:
        used, how = 1.0, "its issue limit itself (no cold cube run to measure the share): optimistic"
    val = (asm_blocks * first[names[0]][0] + fin_blocks * first[names[2]][0]) / f + valid / (b["issue"] * used)
    L.append(f"\nValidation, one chain of {valid:,} transitions: {val * 1e3:,.2f} ms (the assembly's {asm_blocks} "
             f"and the gradient's {fin_blocks} blocks in turn on the busiest SM; the QP at {100 * used:.0f}% of its issue limit "
             f"{b['issue']:.3g}/s, {how}).\n")
    other = sum(v for k, v in step_cycles.items() if k != names[1])
    tl, tail_step, run_mean = tail_lines(os.path.dirname(log), qc, TRAIN_HISTORY, f, other)
    L += tl
    L.append("| GPU | QP of a step | host (assumed): a launch, a copy | steps | **epoch, predicted** | target |")
    L.append("|---|---|---|---|---|---|")
    launches, copies = steps * 4 + 3, steps * 2 + 2
    rows = [("the mean transition's (scaled above)", step), ("the slowest transition's (last epoch)", tail_step)]
    if run_mean:
        rows.append((f"each epoch's slowest transitions, the run's mean over {run_mean[1]} epochs", run_mean[0]))
    for label, st in rows:
        if st is None:
            continue
        for lu, cu in HOST_US:
            epoch = steps * st + val + (launches * lu + copies * cu) * 1e-6
            L.append(f"| H100 SXM | {label} | {lu:g} µs x {launches:,}, {cu:g} µs x {copies:,} | "
                     f"{steps} x {st * 1e6:,.1f} µs | **{epoch * 1e3:,.1f} ms** | ≤ 30 ms |")
    L.append("\nThe host's part (a step's four launches, its two copies and Adam) is not simulated: 0 µs is the "
             "device alone; 5 µs a launch and 10 µs a synchronous copy (Adam on the host's 57 parameters "
             "taken as within them) are assumed figures.")
    return L


# the slowest QP of a training step (history.csv's slowest_qp_iterations and
# slowest_qp_rho_updates): a real-cube run on the CPU, `impulse train --method
# contactnets-polytope --data <cube tosses> --tosses 256 --epochs 8 --seed 1` (each transition
# starting from its last solve's x, y and rho: the trainer since 2026-11-27 evening)
TRAIN_HISTORY = os.path.join(ROOT, "bench", "results", "contactnets_slowest_qp_warm_rho_2026-11-27.csv")
TRAIN_BATCH = 64  # that run's mini-batch (the trainer's default)
# a ContactNets epoch on 256 real tosses (bench/results/contactnets_2026-11-21.md's split)
TRAIN_TRANSITIONS, VALID_TRANSITIONS = 26766, 17969


CLOCK_PHASES = ("load", "input", "init", "ruiz", "factor", "iter", "check_ax", "check_px", "check_end", "infeas",
                "rho", "rhotest", "restart", "finish")  # kernels/qp_warp_kernels.cu's ClockPhase
SETUP_CLOCKS = ("load", "input", "init", "ruiz", "factor", "restart", "finish")
CHECK_CLOCKS = ("check_ax", "check_px", "check_end")


def clock_costs(case_dir):
    """The QP's cycles by phase, per problem, from the clocks build's run
    (bench/gpu_timing.sh's contactnets_clocks_132sm: kernels/qp_warp_kernels.cu with
    IMPULSE_WARP_CLOCKS prints each problem's fields as `impulse_clocks` lines, one number
    ((k·32 + field)·2³² + value) a line). {problem: {"iterations", "rho_updates", phase:
    (cycles, intervals)}}, or None without the run."""
    log = os.path.join(case_dir, "sim.log")
    if not os.path.exists(os.path.join(case_dir, "done")):
        return None
    fields = {}
    for line in open(log, encoding="latin1"):
        if line.startswith("impulse_clocks "):
            code = int(round(float(line.split()[1])))
            kf, v = divmod(code, 1 << 32)
            k, field = divmod(kf, 32)
            fields.setdefault(k, {})[field] = v
    out = {}
    for k, fl in fields.items():
        if len(fl) != 2 + 2 * len(CLOCK_PHASES):
            sys.exit(f"gpu_model: {log}: problem {k} has {len(fl)} clock fields, not {2 + 2 * len(CLOCK_PHASES)}")
        d = {"iterations": fl[0], "rho_updates": fl[1]}
        for p, name in enumerate(CLOCK_PHASES):
            d[name] = (fl[2 + 2 * p], fl[3 + 2 * p])
        out[k] = d
    return out or None


def clock_tail(clocks, qp_cycles, clocks_qp_cycles):
    """From the clocks run: a solve's set-up (set-up, stagnation restart and finish: their
    mean a solve), an iteration (its own work and its share of the checks, infeasibility
    tests and ρ tests) and a ρ update (the refactorization), in cycles of the normal build
    (x the two builds' QP launch ratio: the clock reads' own cost taken out); and lines of
    markdown describing them."""
    B = len(clocks)
    tot = lambda names: sum(d[n][0] for d in clocks.values() for n in names)
    T = sum(d["iterations"] for d in clocks.values())
    U = sum(d["rho"][1] for d in clocks.values())
    ovh = qp_cycles / clocks_qp_cycles
    setup = ovh * tot(SETUP_CLOCKS) / B
    per_it = ovh * tot(("iter",) + CHECK_CLOCKS + ("infeas", "rhotest")) / T
    per_rho = ovh * tot(("rho",)) / U if U else 0.0
    slow_k = max(clocks, key=lambda k: sum(clocks[k][n][0] for n in CLOCK_PHASES))
    sd = clocks[slow_k]
    slow_meas = ovh * sum(sd[n][0] for n in CLOCK_PHASES)
    slow_est = setup + sd["iterations"] * per_it + sd["rho"][1] * per_rho
    checks = sum(d["check_end"][1] for d in clocks.values())
    per = lambda names, by: ovh * tot(names) / by
    rows = [("set-up: A, b (and dense A, P) into shared memory", per(("load",), B)),
            ("set-up: the input check", per(("input",), B)),
            ("set-up: the initial iterate", per(("init",), B)),
            ("set-up: Ruiz equilibration", per(("ruiz",), B)),
            ("set-up: ρ and the first factorization", per(("factor",), B)),
            ("set-up: the finish; a stagnation restart's share", per(("finish", "restart"), B)),
            ("**set-up, a solve**", setup),
            ("an iteration: its own work", per(("iter",), T)),
            (f"a check ({checks} in {T:,} iterations): Ax and the primal residual", per(("check_ax",), checks)),
            ("a check: Px and Aᵀy", per(("check_px",), checks)),
            ("a check: the reductions and the verdict", per(("check_end",), checks)),
            ("a check: the infeasibility test", per(("infeas",), checks)),
            ("an iteration: its share of the checks, infeasibility and ρ tests",
             per(CHECK_CLOCKS + ("infeas", "rhotest"), T)),
            ("**an iteration, all told**", per_it),
            (f"**a ρ update** (the refactorization; {U} of them)", per_rho)]
    L = ["| part | cycles |", "|---|---|"] + [f"| {a} | {b:,.0f} |" for a, b in rows]
    L.append(f"\nThe clock reads' own cost: the clocks build's QP launch {clocks_qp_cycles:,} cycles against "
             f"{qp_cycles:,} (x {ovh:.3f} applied above). Check: the slowest transition (problem {slow_k}: "
             f"{sd['iterations']} iterations, {sd['rho'][1]} ρ updates) so costed: {slow_est:,.0f} cycles; "
             f"its own clocks: {slow_meas:,.0f}.\n")
    return setup, per_it, per_rho, L


def tail_lines(case_dir, qp_cycles, history, f, other):
    """The QP of a training step waits for its slowest transition. From the clocks run
    (clock_costs: each phase's own cycles) and the 132-SM run's QP launch and counts (its
    log's `device loss:` line): a solve's set-up, an iteration (its checks included) and a
    ρ update, in cycles; then the slowest QP of every epoch of a real training run
    (`history`) at those costs. (Per-line summed latencies grouped by phase,
    bench/gpu_line_stats.py, are not used: they put a ρ update's refactorization in another
    phase, bench/results/gpu_clocks_2026-11-27.md.) Lines of markdown."""
    log = os.path.join(case_dir, "sim.log")
    m = None
    for line in open(log, encoding="latin1"):
        m = re.search(r"device loss: (\d+) transitions, (\d+) iterations \(slowest (\d+)\), (\d+) rho "
                      r"updates \(most (\d+)\)", line) or m
    clock_dir = os.path.join(os.path.dirname(case_dir), "contactnets_clocks_132sm")
    clocks = clock_costs(clock_dir)
    if not m or not clocks or not os.path.exists(history):
        return ["\n(The step's slowest transition: needs the clocks run (GPU_TIMING_CASES="
                "contactnets_clocks_132sm bash bench/gpu_timing.sh), the 132-SM run's `device loss:` line, "
                f"and {os.path.relpath(history, ROOT)}.)"], None, None
    B, T, S, U, R = (int(g) for g in m.groups())
    qk = [x for x in parse_timing(os.path.join(clock_dir, "sim.log")) if x[0] == "qp_admm_warp_kernel<double, fallback>"]
    if not qk:
        sys.exit(f"gpu_model: {clock_dir}: no QP launch in its log")
    setup, per_it, per_rho, clock_table = clock_tail(clocks, qp_cycles, qk[0][1])
    rows = list(csv.DictReader(open(history)))
    last = rows[-1]
    St, Rt = float(last["slowest_qp_iterations"]), float(last["slowest_qp_rho_updates"])
    mean_t = float(last["mean_qp_iterations"])
    qp_step = setup + St * per_it + Rt * per_rho
    step = (other + qp_step) / f
    # every epoch of the run the same way: the slowest QP varies over training (more
    # iterations while θ moves fast), so one epoch's figure is not the run's
    steps = math.ceil(TRAIN_TRANSITIONS / TRAIN_BATCH)
    series = []
    for row in rows:
        if int(row["epoch"]) < 1:
            continue
        s_it, s_rho = float(row["slowest_qp_iterations"]), float(row["slowest_qp_rho_updates"])
        st_e = (other + setup + s_it * per_it + s_rho * per_rho) / f
        series.append((int(row["epoch"]), s_it, s_rho, st_e, steps * st_e))
    L = ["\n#### The step waits for its slowest transition\n",
         "Each transition's QP warp has an SM to itself, so a step's QP launch lasts as long as its "
         "slowest transition's solve, not its mean one (the scaling above). The same 132-SM run from the "
         "clocks build (`contactnets_clocks_132sm`: the warp kernel reads the simulator's cycle counter at "
         "its phase boundaries, kernels/qp_warp_kernels.cu's IMPULSE_WARP_CLOCKS) gives each phase's own "
         f"cycles, per transition; over the test's {B} transitions ({T:,} iterations, slowest {S}; {U} ρ "
         f"updates, most {R}) what one solve costs:\n"]
    L += clock_table
    L.append(f"A real training step's slowest transition ({os.path.relpath(history, ROOT)}, its last "
             f"epoch, epoch {last['epoch']}: {St:.1f} iterations and {Rt:.2f} ρ updates on average over "
             f"the steps, against {mean_t:.1f} iterations for the mean transition) then takes "
             f"{qp_step:,.0f} cycles, {qp_step / f * 1e6:,.1f} µs; with the other kernels, a step "
             f"{step * 1e6:,.1f} µs.\n")
    if series:
        L += [f"Every epoch of that run ({os.path.relpath(history, ROOT)}, a mini-batch of {TRAIN_BATCH}: "
              f"{steps} steps) costed the same way, its QP launches only (without the validation chain "
              "and the host's part; the table below adds those):\n",
              "| epoch | a step's slowest QP: iterations | ρ updates | a step | the epoch's steps |",
              "|---|---|---|---|---|"]
        L += [f"| {e} | {a:.1f} | {b:.2f} | {c * 1e6:,.1f} µs | {d * 1e3:,.1f} ms |" for e, a, b, c, d in series]
        mean = sum(x[4] for x in series) / len(series)
        L.append(f"| mean of {len(series)} | | | | **{mean * 1e3:,.1f} ms** |\n")
        return L, step, (mean / steps, len(series))
    return L, step, None


def timing_section(tdir, results):
    """the cycles section: the performance model's cycles for what the issue limit
    could only bound (lines of markdown; empty without bench/gpu_timing.sh's runs)."""
    lines = []
    have = {c for c in os.listdir(tdir)} if os.path.isdir(tdir) else set()
    done = lambda case: os.path.exists(os.path.join(tdir, case, "done"))  # a finished run
    qp = [t for t in TIMING_QP if t[0] in have and done(t[0])]
    t132 = os.path.join(tdir, "contactnets_loss_132sm", "sim.log") if done("contactnets_loss_132sm") else ""
    if not qp and not t132:
        return lines
    lines.append("\n## With latency: the simulator's cycle model (predicted, not measured)\n")
    lines.append("The bounds above assume every issue slot used. `bench/gpu_timing.sh` runs the same kernels "
                 "through GPGPU-Sim's performance model, which times each warp instruction through an SM's "
                 "schedulers, pipelines, caches and memory: an Ampere (RTX 3070) SM with the H100's issue "
                 "width, registers and FP64 rate, and three assumed latencies (shuffle 29 cycles, FP64 8, FP64 "
                 "divide 64: the script says why each). Its cycles, at the H100's 1.98 GHz on 132 SMs, give a "
                 "prediction that counts latency instead of bounding it. It is still a prediction: the SM model "
                 "is not a Hopper SM (the RTX 3070's L1 is half the H100's; PTX, not SASS, runs).\n")
    f = SPECS["H100 SXM"]["ghz"] * 1e9
    sms = SPECS["H100 SXM"]["sms"]
    qp_used = None
    if qp:
        issue = {x[0]: x for x in results}
        lines.append("### Throughput: one full SM\n")
        lines.append("The batch (its 16 resident warps replaced as problems finish) on one simulated SM; "
                     "H100 problems/s = 132 SMs x 1.98 GHz x problems / cycles. *issue used*: thread "
                     "instructions / 32 / (4 issue slots x cycles), the measure the issue limit takes as 100% "
                     "(so partly filled warps count as unused slots); *slots used*: the warp instructions the "
                     "simulator issued / (4 x cycles). "
                     "The last wave's tail (problems finishing at different iterations) is included, so the "
                     "figure is a little low.\n")
        lines.append("| case | kernel | problems | cycles (1 SM) | mean iterations | issue used | slots used | "
                     "**H100 problems/s** | issue limit (above) |")
        lines.append("|---|---|---|---|---|---|---|---|---|")
        for case, what, kernel, take in qp:
            log = os.path.join(tdir, case, "sim.log")
            ks = [k for k in parse_timing(log) if k[0] == kernel]
            if len(ks) <= take:
                sys.exit(f"gpu_model: {log}: launch {take} of {kernel} not found")
            _, cycles, insn, winsn = ks[take]
            problems = int(open(os.path.join(tdir, case, "problems")).read())
            text = open(log, encoding="latin1").read()
            it = re.findall(r"mean ([0-9.]+) iterations", text)
            rate = sms * f * problems / cycles
            used = insn / 32 / (4 * cycles)
            slots = winsn / (4 * cycles)
            if case == "qp_cube_float_cold_1sm":
                qp_used = used
            lim = "—"
            x = issue.get(case.replace("_1sm", "_warp"))
            if x:
                _, b = bounds(x[3], x[4], SPECS["H100 SXM"])
                lim = f"{b['issue']:.3g}"
            lines.append(f"| {what} | `{kernel}` | {problems} | {cycles:,} | {it[-1] if it else '—'} | "
                         f"{100 * used:.0f}% | {100 * slots:.0f}% | **{rate:.3g}** | {lim} |")
    alone = [(c, w) for c, w in (("qp_cube_float_cold_alone", "cube loss QP, float32, eps 1e-5, cold"),
                                 ("qp_cube_float_warm_alone", "same, warm (q 0.1% off)")) if done(c)]
    if alone:
        lines.append("\n### One problem alone: latency\n")
        lines.append("One problem on one simulated SM, its warp alone: the time a launch of one problem takes, "
                     "and the cycles each of its warp instructions takes when no other warp hides its latency "
                     "(the issue model's \"one problem alone\" counts 1).\n")
        lines.append("| case | cycles | µs at 1.98 GHz | cycles per warp instruction issued |")
        lines.append("|---|---|---|---|")
        for case, what in alone:
            ks = parse_timing(os.path.join(tdir, case, "sim.log"))
            if not ks:
                sys.exit(f"gpu_model: {case}: no launch in its log")
            _, cycles, insn, winsn = ks[0]
            lines.append(f"| {what} | {cycles:,} | {cycles / f * 1e6:,.1f} | {cycles / winsn:,.1f} |")
    if t132:
        lines += epoch_lines(t132, results, qp_used)
    return lines


def main():
    global TRAIN_HISTORY, TRAIN_BATCH
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--counts", default=COUNTS)
    ap.add_argument("--timing", default=TIMING)
    ap.add_argument("--train-history", default=TRAIN_HISTORY,
                    help="a ContactNets run's history.csv (its slowest_qp_* columns): the step's slowest QP")
    ap.add_argument("--out", default=os.path.join(ROOT, "bench", "results",
                                                  f"gpu_model_{datetime.date.today().isoformat()}.md"))
    ap.add_argument("--batch", type=int, default=TRAIN_BATCH,
                    help="the training run's mini-batch (transitions per Adam step; --train-history's run's)")
    a = ap.parse_args()
    TRAIN_HISTORY = os.path.abspath(a.train_history)
    if not 1 <= a.batch <= 264:
        sys.exit("gpu_model: --batch must be 1 .. 264 (at most two QP warps an SM, as simulated)")
    TRAIN_BATCH = a.batch
    names = opcode_names()
    ptx = {}
    for p in glob.glob(os.path.join(a.counts, "*", "*.sm_80.ptx")):
        ptx.update(ptx_sections(p))
    regs = ptxas_report(glob.glob(os.path.join(a.counts, "*.ptxas_sm_90.txt")))
    lines = [f"# GPU throughput, predicted (not measured) from simulator counts\n",
             f"Made by `python3 bench/gpu_model.py` from `bench/gpu_counts.sh`'s runs (GPGPU-Sim "
             f"functional simulation of batches of 48-64 problems, PTX for sm_80; ptxas for sm_90). "
             f"Every figure below is a prediction; no GPU ran any of it.\n"]
    lines.append("## Measured inputs, per problem\n")
    lines.append("Instructions are PTX instructions executed per problem, summed over threads (a warp-per-problem "
                 "kernel's lanes all count). *lanes/instr.*: active lanes per warp instruction, assumed 32 "
                 "(converged, full warps: the simulator's functional mode counts per thread only). "
                 "Shared B: bytes of shared-memory accesses per problem (accesses x the static mean width).\n")
    lines.append("| case | kernel | iterations | instr. | FP32 | FP64 | SFU | int | control | "
                 "loads | stores | global B | local B | shared B | lanes/instr. | regs | spill st/ld B | stack B | "
                 "shared/block B (warps/block) |")
    lines.append("|" + "---|" * 19)
    results = []
    for case, what, tb, kernel, ws in CASES:
        log = os.path.join(a.counts, case, "sim.log")
        if not os.path.exists(log):
            print(f"gpu_model: {case}: no {log} (run bench/gpu_counts.sh)", file=sys.stderr)
            continue
        problems = int(open(os.path.join(a.counts, case, "problems")).read())
        launches = [k for k in parse_sim(log) if k[0] == kernel]
        if not launches:
            print(f"gpu_model: {case}: no launch of {kernel} in {log} (skipped)", file=sys.stderr)
            continue
        if case in FIRST_LAUNCH_ONLY:
            launches = launches[:1]
        if case in KEPT_CASES:
            if len(launches) != 2:
                sys.exit(f"gpu_model: {case}: expected 2 launches (keep, then re-solve), found {len(launches)}")
            launches = launches[1:]
        if case in TRAIN_CASES:
            launches, problems = train_launches(log, launches)
        mix = static_mix(ptx.get(kernel, ""))
        c = collections.Counter()
        for _, _, ops, cls, _ in launches:
            c.update(classify(ops, cls, names, mix))
        text = open(log, encoding="latin1").read()
        it = re.search(r"mean ([0-9.]+) iterations", text)
        r = regs.get(kernel, [0, 0, 0, 0])
        per = {k: v / problems for k, v in c.items()}
        # lanes per problem: the warp QP kernel's and the ContactNets assembly's 32 (a warp per
        # problem), its gradient's 8 (kernels/contactnets_kernels.cu), else 1 (a thread each)
        group = 32 if "warp" in kernel else GROUP_LANES.get(kernel.split("<")[0], 1)
        warp_shape = group > 1
        sm = re.search(r"shared memory per block: (\d+) bytes", text)
        smem_block = int(sm.group(1)) if sm else 0
        wb = re.search(r"blocks of (\d+|one) warps?", text)
        # the warp kernel: blocks of one warp; the thread kernel: blocks of 128 threads
        warps_block = (1 if wb.group(1) == "one" else int(wb.group(1))) if wb else 4
        if "warp" in kernel and case in WARP_SHAPES:
            # the ContactNets QP runs the stagnation-restart variant, A dense (it fits)
            smem_block, warps_block = warp_shared_bytes(*WARP_SHAPES[case], tb, dense=True), 1
        elif len(r) > 4 and r[4]:  # static shared memory (the ContactNets assembly and gradient:
            smem_block, warps_block = r[4], 4  # blocks of 4 warps)
        nz = re.search(r"nnz=(\d+)", text)
        compulsory = qp_compulsory_bytes(32, 48, int(nz.group(1)) if nz else CUBE_NNZ, tb) if "cube" in case else 0
        if case in KEPT_CASES:
            compulsory += (32 * 32 + 32 + 48 + 6) * tb  # kernels/qp_kernels.h warp_kept_size
        lanes, lanes_src = 32.0, "32 (assumed)"
        lines.append(f"| {what} | `{kernel}` | {it.group(1) if it else '—'} | {per['total']:,.0f} | "
                     f"{per.get('fp32', 0):,.0f} | {per.get('fp64', 0):,.0f} | "
                     f"{per.get('sfu32', 0) + per.get('sfu64', 0):,.0f} | {per.get('int', 0):,.0f} | "
                     f"{per.get('control', 0):,.0f} | {per.get('load', 0):,.0f} | {per.get('store', 0):,.0f} | "
                     f"{per['global_bytes']:,.0f} | {per['local_bytes']:,.0f} | {per.get('shared_bytes', 0):,.0f} | "
                     f"{lanes_src} | {r[0]} | {r[1]}/{r[2]} | {r[3]} | {smem_block:,} ({warps_block}) |")
        results.append((case, what, kernel, c, problems, r, ws, dict(warp=warp_shape, group=group, smem=smem_block,
                                                                      lanes=lanes, compulsory=compulsory,
                                                                      warps_block=warps_block)))
    for gpu, spec in SPECS.items():
        lines.append(f"\n## {gpu}: problems per second, by bound\n")
        lines.append("| case | occupancy (warps/SM, limited by) | resident working set | issue | FP32 | FP64 | SFU | "
                     "shared | DRAM once | DRAM (no reuse) | **predicted range** | upper limit set by | "
                     "one problem alone |")
        lines.append("|" + "---|" * 13)
        for case, what, kernel, c, problems, r, ws, x in results:
            per, b = bounds(c, problems, spec, x["lanes"], x["compulsory"])
            warps, by = occupancy(r[0], spec, x["smem"], x["warps_block"])
            resident = warps * (32 // x["group"]) * spec["sms"] * ws
            fits = resident <= spec["l2_mb"] * 1e6
            upper = {k: v for k, v in b.items() if k != "DRAM"}
            lim = min(upper, key=upper.get)
            low = min(b["DRAM"], upper[lim]) if ("DRAM" in b and not fits) else upper[lim]
            # one problem's instructions issued back to back by its warp: a thread issues its
            # own; a warp per problem issues them `lanes` at a time
            alone_us = per["total"] / (x["lanes"] * x["group"] / 32 if x["warp"] else 1) / (spec["ghz"] * 1e3)
            fmt = lambda k: f"{b[k]:.3g}" if k in b else "—"
            rng = f"{low:.3g} – {upper[lim]:.3g}" if low < upper[lim] else f"≤ {upper[lim]:.3g}"
            lines.append(f"| {what} | {warps} ({by}) | {resident / 1e6:,.0f} MB ({'fits' if fits else 'exceeds'} "
                         f"L2) | {fmt('issue')} | {fmt('FP32')} | {fmt('FP64')} | {fmt('SFU')} | "
                         f"{fmt('shared')} | {fmt('DRAM once')} | "
                         f"{fmt('DRAM')} | **{rng}** | {lim} | ≥ {alone_us:,.1f} µs |")
    # a ContactNets epoch on 256 real tosses (bench/results/contactnets_2026-11-21.md):
    # 26,766 training transitions in mini-batches (TRAIN_BATCH, 64 by default), one launch chain each (the Adam
    # step needs the gradient before the next), and 17,969 validation transitions in one
    # chain. A chain's kernels run one after another: each takes at least the longer of
    # one problem alone (its instructions back to back at one per cycle: a thread's own,
    # or a warp per problem's /32) and its batch at the kernel's throughput limit.
    # the counts: a training run's last epoch (eps 1e-4, warm) where bench/gpu_counts.sh ran
    # one, else the loss tests' first (cold, tight tolerance) evaluation
    have = {x[0] for x in results}
    layouts = [("thread (assembly, QP a thread per transition, gradient)", ["contactnets_train_thread_double"]
                if "contactnets_train_thread_double" in have else ["contactnets_loss_double"]),
               ("warp (assembly, QP, gradient)", ["contactnets_train_double"]
                if "contactnets_train_double" in have else ["contactnets_warp_double"])]
    if any(x[0].startswith("contactnets") for x in results):
        train, valid, batch = TRAIN_TRANSITIONS, VALID_TRANSITIONS, TRAIN_BATCH
        steps = math.ceil(train / batch)
        lines.append("\n## A ContactNets epoch on 256 tosses, predicted\n")
        lines.append(f"{train:,} training transitions in mini-batches of {batch} (one launch chain per Adam "
                     f"step: {steps} chains), {valid:,} validation transitions in one chain. Each kernel "
                     "of a chain takes at least the longer of one transition alone (its instructions issued "
                     "back to back, one per cycle: a thread per transition issues its own, g lanes per "
                     "transition a g-th of their sum: the assembly a warp, the gradient 8 lanes, the QP a warp in the warp layout and a thread in the thread layout) and its batch at the kernel's upper throughput "
                     "limit; so the epoch time is a lower bound. Not counted: launch overheads and the "
                     "gradient sum (57 blocks of 256 threads, ~100 instructions a thread). Counts: the last "
                     "epoch of a 3-epoch training run at the trainer's defaults (double, eps 1e-4, warm "
                     "starts from the previous epoch) where it ran, else the loss test's first (cold) "
                     "evaluation at its tighter tolerance.\n")
        lines.append("| GPU | layout | kernel | one transition alone | throughput limit (transitions/s) | "
                     "per step ≥ |")
        lines.append("|---|---|---|---|---|---|")
        summary = []
        for gpu, spec in SPECS.items():
            for name, cases in layouts:
                ks = [x for x in results if x[0] in cases]
                if not ks:
                    continue
                step = val = 0.0
                for case, what, kernel, c, problems, r, ws, x in ks:
                    per, b = bounds(c, problems, spec)
                    rate = min(v for k, v in b.items() if k != "DRAM")  # the upper limit
                    alone = per["total"] / x["group"] / (spec["ghz"] * 1e9)
                    step += max(alone, batch / rate)
                    val += max(alone, valid / rate)
                    lines.append(f"| {gpu} | {name} ({case}) | `{kernel}` | {alone * 1e6:,.1f} µs | ≤ {rate:.3g} | "
                                 f"{max(alone, batch / rate) * 1e6:,.1f} µs |")
                epoch = steps * step + val
                summary.append(f"| {gpu} | {name} | {step * 1e6:,.1f} µs | {epoch * 1e3:,.1f} ms |")
        lines.append("\n| GPU | layout | one step ≥ | epoch ≥ |")
        lines.append("|---|---|---|---|")
        lines.extend(summary)
    lines.extend(timing_section(a.timing, results))
    open(a.out, "w").write("\n".join(lines) + "\n")
    print("\n".join(lines))
    print(f"\ngpu_model: wrote {os.path.relpath(a.out, ROOT)}")


if __name__ == "__main__":
    main()
