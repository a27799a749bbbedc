#!/usr/bin/env python3
"""Where a simulated warp waits: GPGPU-Sim's per-PTX-line statistics (a timing run with
-enable_ptx_file_line_stats 1, as GPU_TIMING_LINE_STATS=1 bash bench/gpu_timing.sh writes)
summed per source line through the PTX's .loc lines (the innermost inlined function's line).

    python3 bench/gpu_line_stats.py build-sim/timing/CASE [--ptx qp_warp_kernels] [--top 30]

Prints each source line's share of the summed pipeline latency (for a warp alone on its SM
the sum is close to its cycles), its executions (thread instructions) and the line's text.
"""
import argparse
import collections
import glob
import os
import re
import sys


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("case", help="a case folder of bench/gpu_timing.sh (line_stats.txt and the PTX files)")
    ap.add_argument("--ptx", default="qp_warp_kernels", help="which PTX file (its name's start)")
    ap.add_argument("--top", type=int, default=30)
    a = ap.parse_args()
    stats = os.path.join(a.case, "line_stats.txt")
    ptxs = sorted(glob.glob(os.path.join(a.case, a.ptx + "*.ptx")))
    if not os.path.exists(stats) or not ptxs:
        sys.exit(f"gpu_line_stats: {a.case} has no line_stats.txt or no {a.ptx}*.ptx "
                 "(run the case with GPU_TIMING_LINE_STATS=1)")
    ptx_name = os.path.basename(ptxs[0])
    files, loc, cur = {}, {}, None
    with open(ptxs[0]) as f:
        for i, line in enumerate(f, 1):
            m = re.match(r'\s*\.file\s+(\d+)\s+"([^"]+)"', line)
            if m:
                files[m.group(1)] = m.group(2)
            m = re.match(r"\s*\.loc\s+(\d+)\s+(\d+)", line)
            if m:
                cur = (m.group(1), int(m.group(2)))
            if re.match(r"\s*\.(visible\s+)?\.entry\s", line):
                cur = None
            loc[i] = cur
    lat, cnt, total = collections.Counter(), collections.Counter(), 0
    with open(stats) as f:
        for line in f:
            m = re.match(r"(\S+) (\d+) : (\d+) (\d+) ", line)
            if not m or m.group(1) != ptx_name:
                continue
            key = loc.get(int(m.group(2)))
            lat[key] += int(m.group(4))
            cnt[key] += int(m.group(3))
            total += int(m.group(4))
    if total == 0:
        sys.exit(f"gpu_line_stats: no statistics for {ptx_name} in {stats}")
    sources = {}
    print(f"{ptx_name}: summed latency {total} (thread-cycles; /32 for a warp's)")
    print(f"{'share':>6} {'executions':>11}  source")
    for key, v in lat.most_common(a.top):
        text, where = "", "(no line)"
        if key is not None:
            path = files.get(key[0], "?")
            if path not in sources:
                try:
                    with open(path) as src:
                        sources[path] = src.read().split("\n")
                except OSError:
                    sources[path] = []
            lines = sources[path]
            text = lines[key[1] - 1].strip() if 0 < key[1] <= len(lines) else ""
            where = f"{os.path.basename(path)}:{key[1]}"
        print(f"{100 * v / total:5.1f}% {cnt[key]:>11}  {where:<28} {text[:80]}")


if __name__ == "__main__":
    main()
