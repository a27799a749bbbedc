#!/usr/bin/env python3
"""solve-batch --form osqp and --form qps from outside, on the built CLI (ctest `cli.forms`),
with the standard library only (the .npy arrays are written and read by hand):

- a folder of QPS files: a solution file each and summary.csv; a truncated file named on
  stderr, the others solved, exit 3; HS21 at -99.96 and the free-format example at 8
  (both optima derived by hand, the objective's constant included);
- OSQP's form as an .npz batch: x and y (OSQP's sign: + where u binds, - where l does)
  equal the optima derived by hand; l > u exits 2 with one line naming the problem and row.

    python3 tests/check_forms.py build/impulse
"""
import ast
import io
import json
import math
import os
import struct
import subprocess
import sys
import tempfile
import zipfile

# two QPS files whose optima are derived by hand (tests/qps/; test_qp_forms.cc reads them too):
# HS21 (fixed format) at x = (2, 0), -99.96; the free-format QMATRIX example at (2, 3), 8
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
with open(os.path.join(ROOT, "tests", "qps", "hs21.qps")) as _f:
    HS21 = _f.read()
with open(os.path.join(ROOT, "tests", "qps", "first_qp.qps")) as _f:
    FIRST_QP = _f.read()


def npy_bytes(shape, values):
    header = "{'descr': '<f8', 'fortran_order': False, 'shape': %s, }" % (tuple(shape),)
    header += " " * (63 - (len(header) + 10) % 64) + "\n"
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode() + \
        struct.pack("<%dd" % len(values), *values)


def write_npz(path, arrays):
    with zipfile.ZipFile(path, "w") as z:
        for key, (shape, values) in arrays.items():
            z.writestr(key + ".npy", npy_bytes(shape, values))


def read_npz(path):
    out = {}
    with zipfile.ZipFile(path) as z:
        for name in z.namelist():
            b = z.read(name)
            hlen = struct.unpack("<H", b[8:10])[0]
            h = ast.literal_eval(b[10:10 + hlen].decode())
            count = 1
            for s in h["shape"]:
                count *= s
            fmt = {"<f8": "d", "<i4": "i"}[h["descr"]]
            out[name[:-4]] = struct.unpack("<%d%s" % (count, fmt), b[10 + hlen:10 + hlen + count * struct.calcsize(fmt)])
    return out


def run(exe, *args):
    p = subprocess.run([exe, *args], capture_output=True, text=True, timeout=120)
    return p.returncode, p.stdout, p.stderr


def main():
    exe = sys.argv[1]
    failures = []

    def check(ok, what):
        if not ok:
            failures.append(what)

    def near(a, b, tol=1e-6):
        return abs(a - b) <= tol * max(1.0, abs(b))

    with tempfile.TemporaryDirectory() as d:
        # a folder of QPS files, one of them truncated
        os.makedirs(d + "/qps")
        with open(d + "/qps/HS21.QPS", "w") as f:
            f.write(HS21)
        with open(d + "/qps/first.qps", "w") as f:
            f.write(FIRST_QP)
        with open(d + "/qps/broken.qps", "w") as f:
            f.write(HS21[:HS21.index("BOUNDS")])
        rc, out, err = run(exe, "solve-batch", "--form", "qps", "--in", d + "/qps", "--out", d + "/sol",
                           "--eps", "1e-9", "--threads", "1")
        check(rc == 3, f"qps folder with a truncated file: exit {rc}, expected 3 ({err})")
        check("broken.qps: no ENDATA" in err, f"the truncated file is not named on stderr: {err!r}")
        written = sorted(os.listdir(d + "/sol")) if os.path.isdir(d + "/sol") else []
        check(written == ["HS21.npz", "first.npz", "summary.csv"], f"qps folder wrote {written}")
        rows = {}
        if "summary.csv" in written:
            with open(d + "/sol/summary.csv") as f:
                lines = f.read().splitlines()
            check(lines[0].startswith("problem,n,m,status,objective"), f"summary.csv header {lines[0]!r}")
            for ln in lines[1:]:
                c = ln.split(",")
                rows[c[0]] = c
        check(set(rows) == {"HS21", "first_qp", "broken"}, f"summary.csv rows {sorted(rows)}")
        if "HS21" in rows:
            check(rows["HS21"][3] == "solved" and near(float(rows["HS21"][4]), -99.96),
                  f"HS21: {rows['HS21']}, expected solved at -99.96")
        if "first_qp" in rows:
            check(rows["first_qp"][3] == "solved" and near(float(rows["first_qp"][4]), 8.0),
                  f"first_qp: {rows['first_qp']}, expected solved at 8")
        if "broken" in rows:
            check(rows["broken"][3] == "unreadable", f"broken: {rows['broken']}")
        if "HS21.npz" in written:
            s = read_npz(d + "/sol/HS21.npz")
            check(near(s["x"][0], 2.0) and abs(s["x"][1]) < 1e-6, f"HS21 x {s['x']}")
            check(near(s["objective"][0], -99.96) and s["constant"][0] == -100.0, f"HS21 objective {s['objective']}")
            check(len(s["y"]) == 1 and len(s["y_bounds"]) == 2 and near(s["y_bounds"][0], -0.04),
                  f"HS21 y {s['y']}, y_bounds {s['y_bounds']} (x1 >= 2 binds: -0.04)")
        # one file, --json
        rc, out, err = run(exe, "solve-batch", "--form", "qps", "--in", d + "/qps/first.qps", "--out",
                           d + "/first.npz", "--json")
        j = json.loads(out) if rc == 0 and out.strip() else {}
        check(rc == 0 and j.get("form") == "qps" and j.get("status", {}).get("solved") == 1 and j.get("m") == 2,
              f"one QPS file --json: exit {rc}, {out!r} {err!r}")

        # OSQP's form: min (x1-1)^2 + (x2-2)^2, rows x1 + x2 <= u0, l1 <= x1 - x2 <= u1
        #   problem 0: u0 = 1 binds: x = (0, 1), y = (2, 0)
        #   problem 1: l1 = 0.5 binds: x = (1.75, 1.25), y = (0, -1.5)
        inf = math.inf
        arrays = {"P": ((2, 2, 2), [2, 0, 0, 2] * 2), "q": ((2, 2), [-2, -4] * 2),
                  "A": ((2, 2, 2), [1, 1, 1, -1] * 2), "l": ((2, 2), [-inf, -3, -inf, 0.5]),
                  "u": ((2, 2), [1, 3, 5, 3])}
        write_npz(d + "/osqp.npz", arrays)
        rc, out, err = run(exe, "solve-batch", "--form", "osqp", "--in", d + "/osqp.npz", "--out", d + "/o.npz",
                           "--eps", "1e-9", "--json")
        j = json.loads(out) if out.strip() else {}
        check(rc == 0 and j.get("status", {}).get("solved") == 2 and j.get("m") == 2,
              f"--form osqp: exit {rc}, {out!r} {err!r}")
        if rc == 0:
            s = read_npz(d + "/o.npz")
            want_x, want_y = (0, 1, 1.75, 1.25), (2, 0, 0, -1.5)
            check(all(abs(a - b) < 1e-6 for a, b in zip(s["x"], want_x)), f"--form osqp x {s['x']}, expected {want_x}")
            check(len(s["y"]) == 4 and all(abs(a - b) < 1e-6 for a, b in zip(s["y"], want_y)),
                  f"--form osqp y {s['y']}, expected {want_y} (OSQP's signs)")
        arrays["l"] = ((2, 2), [-inf, -3, -inf, 4])
        write_npz(d + "/bad.npz", arrays)
        rc, out, err = run(exe, "solve-batch", "--form", "osqp", "--in", d + "/bad.npz", "--out", d + "/b.npz")
        lines = [ln for ln in err.splitlines() if ln.strip()]
        check(rc == 2 and len(lines) == 1 and "l > u at problem 1, row 1" in lines[0],
              f"--form osqp with l > u: exit {rc}, stderr {err!r}")
        check(not os.path.exists(d + "/b.npz"), "a refused batch wrote a solution file")

    if failures:
        print("\n".join("FAILED: " + f for f in failures))
        return 1
    print("solve-batch forms: qps folder, one qps file, osqp batch, osqp refusal checked")
    return 0


if __name__ == "__main__":
    sys.exit(main())
