#!/usr/bin/env python3
"""1 against 2 CPU threads, on an idle machine and beside one competing process.

Issue 50: with OpenMP's default (spinning) wait policy a training epoch took 10x
longer with --threads 2 than with 1 when one other process was busy on a 2-core
machine. impulse's threads now block between loops (host/batch/parallel.h). This
script measures, side by side in one run:

  - a ContactNets Polytope epoch on the real cube tosses (--tosses 256), the training
    pass alone (history.csv's train_seconds), mean of epochs 1-2;
  - a CCN epoch on the real elbow tosses, the same;
  - batch solves called again and again, as training and a controller call them
    (impulse_bench's BM_QpDouble cube_cone_double_cold, CPU lanes), at a batch of
    10,000 and of 100 (where a loop's fixed cost shows).

Each is run with --threads 1 and 2, idle and with one busy process (a Python loop
that never sleeps) on the machine, 1 and 2 threads taking turns so that a change of
the machine's pace falls on both. It writes a Markdown table to --out.

  python3 bench/threads_busy.py --impulse build/impulse --out bench/results/threads_busy_DATE.md

The real data sets are read from $IMPULSE_DATA, else ../shared/data (skipped with a note when absent).
"""
import argparse
import csv
import json
import os
import platform
import re
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from report_util import data_root, write_markdown  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
SHARED = data_root()
CUBE = os.path.join(SHARED, "cube_toss", "contact-nets", "data", "tosses_processed")
ELBOW = os.path.join(SHARED, "articulated_elbow")


def epoch_seconds(impulse, args, threads, repeats):
    """mean training-pass seconds of epochs 1..repeats of a fresh run"""
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "run")
        cmd = [impulse, "train", *args, "--epochs", str(repeats), "--patience", "1000", "--threads", str(threads),
               "--out", out]
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        with open(os.path.join(out, "history.csv")) as f:
            rows = [r for r in csv.DictReader(f) if int(r["epoch"]) > 0]
        return sum(float(r["train_seconds"]) for r in rows) / len(rows)


def solve_rate(bench, count, threads):
    """cube loss QPs per second, double, CPU lanes, one batch solved again and again"""
    name = f"BM_QpDouble/cube_cone_double_cold/batch:{count}/threads:{threads}/lanes:1/real_time"
    out = subprocess.run([bench, f"--benchmark_filter=^{re.escape(name)}$", "--benchmark_min_time=1",
                          "--benchmark_format=json"], check=True, capture_output=True, text=True).stdout
    for b in json.loads(out)["benchmarks"]:
        if b["name"] == name:
            return float(b["items_per_second"])
    raise RuntimeError(f"impulse_bench ran no {name}:\n" + out)


class Competitor:
    """one process busy on the machine for the life of the object"""

    def __enter__(self):
        self.p = subprocess.Popen([sys.executable, "-c", "while True: pass"])
        time.sleep(0.5)
        return self

    def __exit__(self, *exc):
        self.p.kill()
        self.p.wait()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--impulse", default=os.path.join(HERE, "..", "build", "impulse"))
    ap.add_argument("--bench", default=None, help="impulse_bench (default: beside --impulse)")
    ap.add_argument("--out", required=True)
    ap.add_argument("--repeats", type=int, default=5, help="measurements of each cell (the median is reported)")
    a = ap.parse_args()
    bench = a.bench or os.path.join(os.path.dirname(os.path.abspath(a.impulse)), "impulse_bench")

    cases = []
    if os.path.isdir(CUBE):
        cases.append(("ContactNets epoch, 256 real cube tosses (s)", "epoch",
                      ["--method", "contactnets-polytope", "--data", CUBE, "--tosses", "256"]))
    if os.path.isdir(ELBOW):
        cases.append(("CCN epoch, real elbow tosses (s)", "epoch",
                      ["--system", "elbow", "--method", "ccn", "--data", ELBOW]))
    cases.append(("batch solves, 10,000 cube loss QPs each (problems/s)", "solve", 10000))
    cases.append(("batch solves, 100 cube loss QPs each (problems/s)", "solve", 100))

    def one(case, threads):
        _, kind, arg = case
        return epoch_seconds(a.impulse, arg, threads, 2) if kind == "epoch" else solve_rate(bench, arg, threads)

    def measure(load, case):
        """the median of each thread count, the two taking turns"""
        print(f"{load:5s} {case[0]} ...", file=sys.stderr, flush=True)
        vals = {1: [], 2: []}
        for _ in range(a.repeats):
            for threads in (1, 2):
                vals[threads].append(one(case, threads))
        for threads in (1, 2):
            v = sorted(vals[threads])
            results[(load, case[0], threads)] = v[len(v) // 2]

    results = {}
    for load in ("idle", "busy"):
        for case in cases:
            if load == "busy":
                with Competitor():
                    measure(load, case)
            else:
                measure(load, case)

    version = subprocess.run([a.impulse, "--version"], capture_output=True, text=True).stdout.strip().splitlines()
    lines = ["# 1 against 2 threads, idle and beside one busy process", "",
             f"`python3 bench/threads_busy.py --impulse {os.path.relpath(a.impulse)} --out ...`; "
             f"{os.cpu_count()} cores ({platform.processor() or platform.machine()}); "
             f"{'; '.join(version)}. Median of {a.repeats}, 1 and 2 threads taking turns; every cell of this table from the same run. "
             "Busy: one Python loop that never sleeps runs beside impulse for the whole measurement.", "",
             "| what | load | 1 thread | 2 threads | 2 threads vs 1 |", "|---|---|---|---|---|"]
    for case in cases:
        for load in ("idle", "busy"):
            one, two = results[(load, case[0], 1)], results[(load, case[0], 2)]
            speed = one / two if case[1] == "epoch" else two / one  # > 1: two threads faster
            fmt = "{:.3f}" if case[1] == "epoch" else "{:,.0f}"
            lines.append(f"| {case[0]} | {load} | {fmt.format(one)} | {fmt.format(two)} | {speed:.2f}x |")
    lines += ["", "2 threads vs 1: the speed-up (above 1: two threads faster; below 1: slower)."]
    if not os.path.isdir(CUBE) or not os.path.isdir(ELBOW):
        lines.append("The real data sets were absent (looked in %s: bash data/fetch.sh cube elbow): "
                     "their rows are missing." % SHARED)
    write_markdown(a.out, lines)


if __name__ == "__main__":
    main()
