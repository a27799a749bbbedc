#!/usr/bin/env python3
"""The default (dispatched) build against the -DIMPULSE_NATIVE_ARCH=ON build, side by side.

Issue 43: the default binary runs on any x86-64 and takes the widest lane
instruction set the CPU has at run time (host/batch/lane_kernels.h). This
script measures it against a build compiled for the machine (-march=native),
one CPU thread, the two builds taking turns (median of --repeats):

  - the cube loss QPs (exact cones, double and float; the octagon, double),
    10,000 per batch (impulse_bench BM_QpDouble / BM_QpFloat, CPU lanes);
  - the 1,000 real ContactNets loss QPs (impulse_bench BM_RealContactNetsQps);
  - ContactNets Polytope training on 256 real cube tosses, 2 epochs (the run's
    processor seconds, loading and evaluation included);
  - the default build with each narrower set it has (IMPULSE_LANES), for scale.

And whether the answers are the same bit for bit: generated batches solved by
`impulse solve-batch` with each build, and with --reference (an older binary,
e.g. the last native build before dispatch), compared byte by byte.

  python3 bench/lanes_dispatch.py --default build/ --native build-native/ \\
      [--reference OLD_IMPULSE] --out bench/results/lanes_dispatch_DATE.md
"""
import argparse
import filecmp
import json
import os
import platform
import re
import resource
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from report_util import data_root, write_markdown  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
SHARED = data_root()
CUBE = os.path.join(SHARED, "cube_toss", "contact-nets", "data", "tosses_processed")


def bench_rate(build, name, env=None):
    out = subprocess.run([os.path.join(build, "impulse_bench"), f"--benchmark_filter=^{re.escape(name)}$",
                          "--benchmark_min_time=1", "--benchmark_format=json"], check=True, capture_output=True,
                         text=True, env=env).stdout
    for b in json.loads(out)["benchmarks"]:
        if b["name"] == name:
            if b.get("error_occurred"):
                raise RuntimeError(f"{name}: {b.get('error_message')}")
            # per second of the process's CPU time (one thread): what a shared VM's
            # stolen time leaves out, where wall time varies +-15% from run to run
            return float(b["items_per_second"]) * float(b["real_time"]) / float(b["cpu_time"])
    raise RuntimeError(f"impulse_bench ran no {name}")


def epoch_seconds(build, env=None):
    """processor seconds of a 2-epoch run (loading and evaluation included), one thread"""
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "run")
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        subprocess.run([os.path.join(build, "impulse"), "train", "--method", "contactnets-polytope", "--data", CUBE,
                        "--tosses", "256", "--epochs", "2", "--patience", "1000", "--threads", "1", "--out", out],
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def lanes_line(binary, env=None):
    v = subprocess.run([binary, "--version"], capture_output=True, text=True, env=env).stdout
    return next((l for l in v.splitlines() if l.startswith("cpu lanes")), "cpu lanes: (not reported)")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--default", required=True, help="build folder of the default (dispatched) build")
    ap.add_argument("--native", required=True, help="build folder of a -DIMPULSE_NATIVE_ARCH=ON build")
    ap.add_argument("--reference", help="an older impulse binary whose answers the new ones should repeat")
    ap.add_argument("--out", required=True)
    ap.add_argument("--repeats", type=int, default=7)
    a = ap.parse_args()

    cases = [
        ("cube loss QPs, exact cones, double (problems/s)", "rate", "BM_QpDouble/cube_cone_double_cold/batch:10000/threads:1/lanes:1/real_time"),
        ("cube loss QPs, exact cones, float (problems/s)", "rate", "BM_QpFloat/cube_cone_float_cold/batch:10000/threads:1/lanes:1/real_time"),
        ("cube loss QPs, octagon, double (problems/s)", "rate", "BM_QpDouble/cube_octagon_double_cold/batch:10000/threads:1/lanes:1/real_time"),
        ("1,000 real ContactNets QPs, eps 1e-6 (problems/s)", "rate", "BM_RealContactNetsQps/threads:1/real_time"),
    ]
    if os.path.isdir(CUBE):
        cases.append(("ContactNets training, 2 epochs on 256 real cube tosses (processor s)", "epoch", None))

    def one(build, case, env=None):
        return bench_rate(build, case[2], env) if case[1] == "rate" else epoch_seconds(build, env)

    sets = [l.strip() for l in lanes_line(os.path.join(a.default, "impulse")).split("this CPU and build:")[1]
            .split(";")[0].split(",")] if "this CPU and build" in lanes_line(os.path.join(a.default, "impulse")) else []
    narrower = sets[:-1]
    rows = []
    for case in cases:
        print(case[0], "...", file=sys.stderr, flush=True)
        vals = {"default": [], "native": []}
        extra = {s: [] for s in narrower}
        for _ in range(a.repeats):
            vals["default"].append(one(a.default, case))
            vals["native"].append(one(a.native, case))
            for s in narrower:
                extra[s].append(one(a.default, case, dict(os.environ, IMPULSE_LANES=s)))
        med = lambda v: sorted(v)[len(v) // 2]
        rows.append((case, med(vals["default"]), med(vals["native"]), {s: med(v) for s, v in extra.items()}))

    # the same answers: generated batches solved by each binary, byte by byte
    same = []
    with tempfile.TemporaryDirectory() as d:
        bins = [("default", os.path.join(a.default, "impulse"), None),
                ("native", os.path.join(a.native, "impulse"), None)]
        if a.reference:
            bins.append(("reference", a.reference, None))
        for s in narrower:
            bins.append((f"default, IMPULSE_LANES={s}", os.path.join(a.default, "impulse"),
                         dict(os.environ, IMPULSE_LANES=s)))
        for kind in ("cube-loss", "cube-loss-octagon", "anitescu", "random"):
            f = os.path.join(d, kind + ".qpb")
            subprocess.run([bins[0][1], "generate", "--kind", kind, "--count", "2000", "--seed", "5", "--out", f],
                           check=True, stdout=subprocess.DEVNULL)
            outs = {}
            for name, b, env in bins:
                for prec in ("double", "float"):
                    o = os.path.join(d, f"{kind}.{prec}.{re.sub('[^a-z0-9]', '_', name)}.out")
                    subprocess.run([b, "solve-batch", "--in", f, "--out", o, "--precision", prec, "--threads", "1"],
                                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
                    outs[(name, prec)] = o
            for prec in ("double", "float"):
                for name, _, _ in bins[1:]:
                    if name.startswith("default, "):
                        continue
                    same.append((kind, prec, f"default = {name}",
                                 filecmp.cmp(outs[("default", prec)], outs[(name, prec)], shallow=False)))

    lines = ["# The default build (lanes chosen at run time) against -march=native", "",
             f"`python3 bench/lanes_dispatch.py --default ... --native ...`; {os.cpu_count()} cores "
             f"({platform.processor() or platform.machine()}); one CPU thread; median of {a.repeats}, the builds "
             "taking turns; every cell from the same run. Rates per second of processor time (the process's own; a "
             "shared machine's stolen time moves wall-clock rates by +-15% between runs of one binary).", "",
             f"- default: {lanes_line(os.path.join(a.default, 'impulse'))}",
             f"- native: {lanes_line(os.path.join(a.native, 'impulse'))}", "",
             "| what | default | native | default / native | " + " | ".join(f"default, {s}" for s in narrower) + " |",
             "|---|---|---|---|" + "---|" * len(narrower)]
    for case, dv, nv, ex in rows:
        fmt = "{:.3f}" if case[1] == "epoch" else "{:,.0f}"
        speed = nv / dv if case[1] == "epoch" else dv / nv  # > 1: the default is faster
        lines.append(f"| {case[0]} | {fmt.format(dv)} | {fmt.format(nv)} | {speed:.3f} | " +
                     " | ".join(fmt.format(ex[s]) for s in narrower) + " |")
    lines += ["", "default / native: the default build's speed relative to the native one (1.000: the same; "
              "0.970: 3% slower).", "", "## The same answers, byte by byte", "",
              "`impulse solve-batch --threads 1` on 2,000 generated problems of each kind (seed 5), the solution "
              "files compared:", "", "| kind | precision | compared | identical |", "|---|---|---|---|"]
    for kind, prec, what, ok in same:
        lines.append(f"| {kind} | {prec} | {what} | {'yes' if ok else 'NO'} |")
    if not os.path.isdir(CUBE):
        lines.append("\nThe real cube tosses were absent (looked in %s: bash data/fetch.sh cube): no epoch row." % CUBE)
    write_markdown(a.out, lines)


if __name__ == "__main__":
    main()
