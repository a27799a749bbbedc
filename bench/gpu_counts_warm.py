#!/usr/bin/env python3
"""A warm-started copy of a QP batch file, with the standard library only.

    python3 bench/gpu_counts_warm.py BATCH.npz SOLUTION.npz SCALE OUT.npz

OUT holds BATCH's arrays with q multiplied by SCALE (the next Adam step's problem,
a little different) and the warm start x0, y0 = SOLUTION's x, y (impulse's batch file
format: host/batch/qp_file.h). Used by bench/gpu_counts.sh.
"""
import ast
import io
import struct
import sys
import zipfile


def read_npz(path):
    arrays = {}
    with zipfile.ZipFile(path) as z:
        for name in z.namelist():
            raw = z.read(name)
            if raw[:6] != b"\x93NUMPY":
                raise SystemExit(f"{path}: {name} is not a .npy array")
            major = raw[6]
            hlen = struct.unpack("<H", raw[8:10])[0] if major == 1 else struct.unpack("<I", raw[8:12])[0]
            start = 10 if major == 1 else 12
            header = ast.literal_eval(raw[start:start + hlen].decode("latin1"))
            arrays[name[:-4] if name.endswith(".npy") else name] = (header, raw[start + hlen:])
    return arrays


def npy_bytes(header, data):
    text = repr(header).encode("latin1")
    pad = 64 - (10 + len(text) + 1) % 64
    text += b" " * pad + b"\n"
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(text)) + text + data


def main():
    if len(sys.argv) != 5:
        raise SystemExit(__doc__)
    batch, sol = read_npz(sys.argv[1]), read_npz(sys.argv[2])
    scale = float(sys.argv[3])
    out = {}
    for name, (header, data) in batch.items():
        if name == "q":
            if header["descr"] != "<f8":
                raise SystemExit(f"{sys.argv[1]}: q is {header['descr']}, expected <f8")
            values = struct.unpack(f"<{len(data) // 8}d", data)
            data = struct.pack(f"<{len(values)}d", *(v * scale for v in values))
        out[name] = (header, data)
    for src, dst in (("x", "x0"), ("y", "y0")):
        if src not in sol:
            raise SystemExit(f"{sys.argv[2]}: no array {src}")
        out[dst] = sol[src]
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_STORED) as z:
        for name, (header, data) in out.items():
            z.writestr(name + ".npy", npy_bytes(header, data))
    with open(sys.argv[4], "wb") as f:
        f.write(buf.getvalue())


if __name__ == "__main__":
    main()
