#!/usr/bin/env python3
"""Height of the real cube's lowest corner in the ContactNets tosses, with the
published geometry (half-width 0.0524 m): per toss the minimum over the toss
and the median over its last 10 rows (the cube at rest). A rigid cube on a
table at z = 0 would give 0 at rest; the data sit lower, so a model whose
table is at z = 0 and that is penalized for penetration learns a smaller cube.

It also reads the contact geometry the tosses themselves imply, with no geometry
assumed: over every row, the centre's height z against f(R) = |R31| + |R32| + |R33|,
the lowest corner's depth below the centre per unit half-width (1 on a face, √2 on an
edge, √3 on a corner). A rigid cube of half-width s on a table at h has every row at
z ≥ h + s f, with equality in contact; the 1st percentile of z in bins of f traces that
lower envelope, and a line through it gives s and h. (A cube with rounded edges of
radius r has the envelope r + (s − r) f instead: its intercept is r, not a table.)

    python3 bench/cube_resting_height.py [DATA_DIR]

DATA_DIR defaults to cube_toss/contact-nets/data/tosses_processed under $IMPULSE_DATA,
else ../shared/data beside the repository (bash data/fetch.sh cube; format:
../shared/data/cube_toss/README.md).
"""
import glob
import os
import struct
import sys

import numpy as np

HALF = 0.0524  # m, the published half-width (the data's length unit)


def read_toss(path):
    """(T, 19) float64 rows of a legacy torch file: the data are its last 8*N
    bytes, preceded by the int64 element count N = 19 T."""
    b = open(path, "rb").read()
    for t in range(1, len(b) // (8 * 19) + 1):
        n = 19 * t
        at = len(b) - 8 * n - 8
        if at >= 0 and struct.unpack("<q", b[at:at + 8])[0] == n:
            return np.frombuffer(b[len(b) - 8 * n:], "<f8").reshape(t, 19)
    raise ValueError(f"{path}: no element count found before the data")


def rotation(q):
    w, x, y, z = q / np.linalg.norm(q)
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
                     [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
                     [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)]])


def main():
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from report_util import data_root
    default = os.path.join(data_root(), "cube_toss", "contact-nets", "data", "tosses_processed")
    folder = sys.argv[1] if len(sys.argv) > 1 else default
    files = sorted(glob.glob(os.path.join(folder, "*.pt")))
    if not files:
        sys.exit(f"no tosses (*.pt) in {folder} (bash data/fetch.sh cube)")
    corners = np.array([[sx, sy, sz] for sx in (-1, 1) for sy in (-1, 1) for sz in (-1, 1)], float)
    lowest, rest = [], []
    centre, depth = [], []  # every row: the centre's height (mm) and f(R)
    for f in files:
        a = read_toss(f)
        centre.extend(1000 * HALF * a[:, 2])
        depth.extend(np.abs(rotation(a[k, 3:7])[2]).sum() for k in range(len(a)))
        z = np.array([(a[k, 0:3] + corners @ rotation(a[k, 3:7]).T)[:, 2].min() for k in range(len(a))]) * HALF
        lowest.append(z.min())
        rest.append(np.median(z[-10:]))
    lowest, rest = 1000 * np.array(lowest), 1000 * np.array(rest)
    print(f"{len(files)} tosses; lowest corner of the published cube (mm, table at 0):")
    print(f"  over each toss: median {np.median(lowest):.2f}, 10th percentile {np.percentile(lowest, 10):.2f}, "
          f"min {lowest.min():.2f}")
    print(f"  at rest (median of the last 10 rows): median {np.median(rest):.2f}, "
          f"10th-90th percentile {np.percentile(rest, 10):.2f} to {np.percentile(rest, 90):.2f}")
    shrink = -np.median(rest)
    print(f"  a cube shrunk by the median resting depth ({shrink:.2f} mm per side) has volume error "
          f"{100 * (1 - ((HALF * 1000 - shrink) / (HALF * 1000)) ** 3):.1f}%")
    centre, depth = np.array(centre), np.array(depth)
    print("lower envelope of the centre's height over f(R) (1st percentile per bin, all rows):")
    xs, ys = [], []
    edges = np.linspace(1, np.sqrt(3), 12)
    for lo, hi in zip(edges[:-1], edges[1:]):
        m = (depth >= lo) & (depth < hi)
        if m.sum() < 50:
            continue
        q = np.percentile(centre[m], 1)
        xs.append(depth[m][centre[m] <= q].mean())
        ys.append(q)
        print(f"  f {lo:.3f}-{hi:.3f}: {m.sum():6d} rows, envelope {q:.2f} mm at f {xs[-1]:.3f}")
    slope, intercept = np.polyfit(xs, ys, 1)
    print(f"  line: z = {intercept:.2f} mm + {slope:.2f} mm x f; the published cube on a table at 0: "
          f"0 + {1000 * HALF:.1f} x f")
    print(f"  a sharp cube of half-width {slope:.2f} mm has volume error "
          f"{100 * (1 - (slope / (1000 * HALF)) ** 3):.1f}%; "
          f"one of {slope + intercept:.2f} mm (rounded edges of radius {intercept:.2f} mm) "
          f"{100 * (1 - ((slope + intercept) / (1000 * HALF)) ** 3):.1f}%")


if __name__ == "__main__":
    main()
