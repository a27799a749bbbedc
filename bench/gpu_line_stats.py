#!/usr/bin/env python3
"""Where a simulated warp waits: GPGPU-Sim's per-PTX-line statistics (a timing run with
-enable_ptx_file_line_stats 1, as GPU_TIMING_LINE_STATS=1 bash bench/gpu_timing.sh writes)
summed per source line through the PTX's .loc lines (the innermost inlined function's line).

    python3 bench/gpu_line_stats.py build-sim/timing/CASE [--ptx qp_warp_kernels] [--top 30]
    python3 bench/gpu_line_stats.py build-sim/timing/CASE --phases [--count-line N]

Prints each source line's share of the summed pipeline latency (for a warp alone on its SM
the sum is close to its cycles), its executions (thread instructions) and the line's text.

--phases sums it by the kernel's phases instead: the marker comments `// ---- NAME` in the
kernel's own body (the function holding most of the executed lines' call sites). A line of
an inlined function counts in the phase of its call site in the kernel (PTX's `inlined_at`;
a function inlined into an inlined function, or into one of the kernel's lambdas, takes the
call site last seen in the kernel, since PTX names one level). With each phase: how many times its first executed line ran per
warp (thread executions / 32), to turn a phase's latency into cycles per occurrence.
"""
import argparse
import collections
import glob
import os
import re
import sys


def load(case, ptx="qp_warp_kernels"):
    """(rows, outer, files, total, ptx_name, loc) of a case folder: rows are (PTX line, executions,
    latency) of the PTX file's lines; loc and outer map a PTX line to its source line and to its
    call site (inlined_at). Exits with a message when the case has no statistics."""
    stats = os.path.join(case, "line_stats.txt")
    ptxs = sorted(glob.glob(os.path.join(case, ptx + "*.ptx")))
    if not os.path.exists(stats) or not ptxs:
        sys.exit(f"gpu_line_stats: {case} has no line_stats.txt or no {ptx}*.ptx "
                 "(run the case with GPU_TIMING_LINE_STATS=1)")
    ptx_name = os.path.basename(ptxs[0])
    files, loc, cur = {}, {}, None
    outer, site = {}, None  # per PTX line: the call site (file, line) named by inlined_at, or its own
    with open(ptxs[0]) as f:
        for i, line in enumerate(f, 1):
            m = re.match(r'\s*\.file\s+(\d+)\s+"([^"]+)"', line)
            if m:
                files[m.group(1)] = m.group(2)
            m = re.match(r"\s*\.loc\s+(\d+)\s+(\d+)", line)
            if m:
                cur = (m.group(1), int(m.group(2)))
                mi = re.search(r"inlined_at\s+(\d+)\s+(\d+)", line)
                site = (mi.group(1), int(mi.group(2))) if mi else cur
            outer[i] = site
            if re.match(r"\s*\.(visible\s+)?\.entry\s", line):
                cur = None
            loc[i] = cur
    total = 0
    rows = []  # (PTX line, executions, latency)
    with open(stats) as f:
        for line in f:
            m = re.match(r"(\S+) (\d+) : (\d+) (\d+) ", line)
            if not m or m.group(1) != ptx_name:
                continue
            total += int(m.group(4))
            rows.append((int(m.group(2)), int(m.group(3)), int(m.group(4))))
    if total == 0:
        sys.exit(f"gpu_line_stats: no statistics for {ptx_name} in {stats}")
    return rows, outer, files, total, ptx_name, loc


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("case", help="a case folder of bench/gpu_timing.sh (line_stats.txt and the PTX files)")
    ap.add_argument("--ptx", default="qp_warp_kernels", help="which PTX file (its name's start)")
    ap.add_argument("--top", type=int, default=30)
    ap.add_argument("--phases", action="store_true", help="sum by the kernel's `// ---- NAME` phases")
    ap.add_argument("--phase", help="with --phases: the top source lines of the phase whose name starts so")
    a = ap.parse_args()
    rows, outer, files, total, ptx_name, loc = load(a.case, a.ptx)
    lat, cnt = collections.Counter(), collections.Counter()
    for ptx_line, n, v in rows:
        key = loc.get(ptx_line)
        lat[key] += v
        cnt[key] += n
    if a.phases:
        phases(rows, outer, files, total, ptx_name, loc, a.phase, a.top)
        return
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


def phase_latency(case, ptx="qp_warp_kernels"):
    """{phase name: summed latency (thread-cycles)} of a case folder's kernel (see the module's
    doc); for bench/gpu_model.py"""
    rows, outer, files, total, ptx_name, loc = load(case, ptx)
    return phases(rows, outer, files, total, ptx_name, loc, quiet=True)


def phases(rows, outer, files, total, ptx_name, loc, only=None, top=30, quiet=False):
    """The summed latency by the kernel's `// ---- NAME` phases (see the module's doc)."""
    sites = collections.Counter()
    for ptx_line, _, v in rows:
        if outer.get(ptx_line):
            sites[outer[ptx_line][0]] += v
    if not sites:
        sys.exit("gpu_line_stats: the PTX has no line information")
    fid = sites.most_common(1)[0][0]
    with open(files[fid]) as src:
        text = src.read().split("\n")
    marks = [(i + 1, re.sub(r"\s*-+\s*$", "", t.strip()[len("// ----"):]).strip())
             for i, t in enumerate(text) if t.strip().startswith("// ----")]
    if not marks:
        sys.exit(f"gpu_line_stats: {files[fid]} has no `// ---- NAME` markers")

    def phase_of(line):
        name = "(before the first marker)"
        for at, nm in marks:
            if at <= line:
                name = nm
        return name

    lat, first, by_line = collections.Counter(), {}, collections.Counter()
    last_kernel_site = None
    for ptx_line, n, v in sorted(rows):
        s = outer.get(ptx_line)
        # a lambda of the kernel's (its call operator inlined at its definition's line) is
        # no phase of its own: its lines count where it was last called from
        if s and s[0] == fid and s[1] >= marks[0][0] and "[&]" not in text[s[1] - 1]:
            last_kernel_site = s[1]
        name = phase_of(last_kernel_site) if last_kernel_site else "(no line)"
        lat[name] += v
        if name not in first and n > 0:
            first[name] = n
        if only and name.startswith(only):
            by_line[loc.get(ptx_line)] += v
    if quiet:
        return dict(lat)
    if only:
        part = sum(by_line.values())
        print(f"phase {only}...: {part / 32:.0f} warp-cycles; its top lines (share of the phase)")
        for key, v in by_line.most_common(top):
            where, text = "(no line)", ""
            if key:
                path = files.get(key[0], "?")
                try:
                    with open(path) as src:
                        lines = src.read().split("\n")
                    text = lines[key[1] - 1].strip() if 0 < key[1] <= len(lines) else ""
                except OSError:
                    pass
                where = f"{os.path.basename(path)}:{key[1]}"
            print(f"{100 * v / part:5.1f}%  {where:<28} {text[:90]}")
        return
    print(f"{ptx_name}: summed latency {total} (thread-cycles; /32 for a warp's), by phase of "
          f"{os.path.basename(files[fid])}")
    print(f"{'share':>6} {'warp-cycles':>12} {'warp runs':>10}  phase")
    for name, v in sorted(lat.items(), key=lambda kv: -kv[1]):
        print(f"{100 * v / total:5.1f}% {v / 32:12.0f} {first.get(name, 0) / 32:10.0f}  {name}")


if __name__ == "__main__":
    main()
