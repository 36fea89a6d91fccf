#!/usr/bin/env python3
"""NumPy side of tests/test_npy.cpp: NumPy is the independent reference for the .npy format.

  npy_numpy_check.py write DIR   writes files with NumPy for gamut to read
  npy_numpy_check.py check DIR   checks the files gamut wrote into DIR; exits 1 on a mismatch

Element values come from value(code, e) for flat C-order index e; make_array() in
test_npy.cpp computes the same values, so both sides compare exactly.
"""
import ast
import struct
import sys
import warnings

import numpy as np

CODES = ["bool", "u8", "i8", "i16", "i32", "i64", "f16", "f32", "f64"]   # bf16: no NumPy type
NP = {"bool": "|b1", "u8": "|u1", "i8": "|i1", "i16": "<i2", "i32": "<i4", "i64": "<i8",
      "f16": "<f2", "f32": "<f4", "f64": "<f8"}


def value(code, e):
    if code == "bool":
        return (e * 7 + 3) % 5 < 3
    if code == "u8":
        return (e * 37 + 11) % 256
    if code == "i8":
        return (e * 37 + 11) % 256 - 128
    if code == "i16":
        return (e * 1237 + 5) % 65536 - 32768
    if code == "i32":
        return (e * 2654435761 + 12345) % 2**32 - 2**31
    if code == "i64":
        return (e * 0x9E3779B97F4A7C15 + 0x12345) % 2**64 - 2**63
    if code == "f16":
        return ((e * 7) % 97 - 48) * 0.25 + 0.125
    if code == "bf16":
        return ((e * 5) % 61 - 30) * 0.5 + 0.25
    return (e * 0.37 - 5.25) / 3.0   # f32 (rounded by NumPy) and f64


def make(code, shape):
    n = int(np.prod(shape, dtype=np.int64))
    return np.array([value(code, e) for e in range(n)], dtype=NP[code]).reshape(shape)


def bf16_bits(shape):
    n = int(np.prod(shape, dtype=np.int64))
    f = np.array([value("bf16", e) for e in range(n)], dtype="<f4")
    return (f.view("<u4") >> 16).astype("<u2").reshape(shape)


def write(d):
    for c in CODES:
        np.save(f"{d}/{c}.npy", make(c, (3, 5)))
        np.save(f"{d}/{c}_f.npy", np.asfortranarray(make(c, (4, 3, 5))))
        np.save(f"{d}/{c}_be.npy", make(c, (2, 3, 4)).astype(np.dtype(NP[c]).newbyteorder(">")))
        np.save(f"{d}/{c}_fbe.npy",
                np.asfortranarray(make(c, (3, 4)).astype(np.dtype(NP[c]).newbyteorder(">"))))
        np.save(f"{d}/{c}_0d.npy", make(c, ()))
        np.save(f"{d}/{c}_empty.npy", make(c, (0, 5)))
    with open(f"{d}/v2.npy", "wb") as f:
        np.lib.format.write_array(f, make("f32", (6, 7)), version=(2, 0))
    with open(f"{d}/v3.npy", "wb") as f:
        np.lib.format.write_array(f, make("i64", (5,)), version=(3, 0))
    np.save(f"{d}/large_f32.npy", make("f32", (300, 257)))
    np.save(f"{d}/large_f_f64.npy", np.asfortranarray(make("f64", (129, 65, 3))))
    # bf16 as np.save writes an ml_dtypes array ('|V2'), and under the descr 'bfloat16'.
    np.save(f"{d}/bf16_v2.npy", bf16_bits((3, 5)).view("V2"))
    with open(f"{d}/bf16_named.npy", "wb") as f:
        np.lib.format.write_array_header_1_0(
            f, {"descr": "bfloat16", "fortran_order": False, "shape": (3, 5)})
        f.write(bf16_bits((3, 5)).tobytes())
    # Tables: packed with a big-endian field; aligned (padding); latin-1 and UTF-8 field names.
    rows = 23
    packed = np.dtype([("i", "<i4"), ("j", "<i2"), ("accum", "<f4"), ("flag", "|b1"),
                       ("big", ">i8"), ("h", "<f2")])
    t = np.zeros(rows, dtype=packed)
    for name, code in [("i", "i32"), ("j", "i16"), ("accum", "f32"), ("flag", "bool"),
                       ("big", "i64"), ("h", "f16")]:
        t[name] = make(code, (rows,))
    np.save(f"{d}/table.npy", t)
    aligned = np.dtype([("a", "|u1"), ("b", "<i8"), ("c", "<f4")], align=True)
    t = np.zeros(rows, dtype=aligned)
    t["a"], t["b"], t["c"] = make("u8", (rows,)), make("i64", (rows,)), make("f32", (rows,))
    np.save(f"{d}/table_aligned.npy", t)
    t = np.zeros(rows, dtype=[("größe", "<f8")])
    t["größe"] = make("f64", (rows,))
    np.save(f"{d}/table_latin1.npy", t)
    t = np.zeros(rows, dtype=[("Δx", "<i2")])
    t["Δx"] = make("i16", (rows,))
    np.save(f"{d}/table_utf8.npy", t)


failures = []


def expect(ok, what):
    if not ok:
        failures.append(what)


def raw_header(path):
    """(version, header dict, data offset) straight from the bytes, without NumPy's checks."""
    with open(path, "rb") as f:
        b = f.read()
    assert b[:6] == b"\x93NUMPY", path
    major = b[6]
    if major == 1:
        n, start = struct.unpack("<H", b[8:10])[0], 10
    else:
        n, start = struct.unpack("<I", b[8:12])[0], 12
    text = b[start:start + n].decode("latin1" if major < 3 else "utf8")
    return major, ast.literal_eval(text), start + n, b


def check_array(path, code, shape):
    major, h, off, _ = raw_header(path)
    expect(major == 1, f"{path}: version {major}")
    expect(off % 64 == 0, f"{path}: data at offset {off}, not a multiple of 64")
    expect(h == {"descr": NP[code], "fortran_order": False, "shape": shape}, f"{path}: header {h}")
    a = np.load(path)
    want = make(code, shape)
    expect(a.dtype == want.dtype and a.shape == want.shape, f"{path}: {a.dtype} {a.shape}")
    expect(np.array_equal(a, want), f"{path}: values differ")


def check(d):
    for c in CODES:
        check_array(f"{d}/{c}.npy", c, (3, 5))
        check_array(f"{d}/{c}_0d.npy", c, ())
        check_array(f"{d}/{c}_empty.npy", c, (0, 5))
    check_array(f"{d}/large.npy", "f64", (200, 301))
    major, h, off, b = raw_header(f"{d}/bf16.npy")
    expect(h == {"descr": "bfloat16", "fortran_order": False, "shape": (3, 5)}, f"bf16 header {h}")
    expect(off % 64 == 0, "bf16: data not aligned")
    expect(np.array_equal(np.frombuffer(b[off:], "<u2").reshape(3, 5), bf16_bits((3, 5))),
           "bf16: values differ")

    cols = [("i", "i32"), ("j", "i32"), ("accum", "f32"), ("flag", "bool"), ("big", "i64"),
            ("h", "f16"), ("d", "f64"), ("small", "i8"), ("byte", "u8"), ("s", "i16")]
    for name, rows in [("table", 37), ("table_empty", 0)]:
        path = f"{d}/{name}.npy"
        major, h, off, _ = raw_header(path)
        expect(off % 64 == 0, f"{path}: data not aligned")
        expect(h["descr"] == [(n, NP[c]) for n, c in cols], f"{path}: descr {h['descr']}")
        r = np.load(path).view(np.recarray)
        expect(r.shape == (rows,), f"{path}: shape {r.shape}")
        expect(r.dtype.names == tuple(n for n, _ in cols), f"{path}: names {r.dtype.names}")
        expect(r.dtype.itemsize == sum(np.dtype(NP[c]).itemsize for _, c in cols),
               f"{path}: not packed")
        for n, c in cols:
            expect(np.array_equal(getattr(r, n), make(c, (rows,))), f"{path}: column {n} differs")
    r = np.load(f"{d}/table_accum.npy").view(np.recarray)
    expect(r.dtype.names == ("i", "j", "accum"), f"table_accum names {r.dtype.names}")
    expect(list(r.accum) == list(make("f32", (4,))), "table_accum.accum differs")
    expect(list(r.i) == list(make("i32", (4,))), "table_accum.i differs")
    expect(list(r.j) == [-1717, -717, 283, 1283], "table_accum.j differs")

    for f in failures:
        print("MISMATCH:", f, file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] not in ("write", "check"):
        sys.exit("usage: npy_numpy_check.py write|check DIR")
    if sys.argv[1] == "write":
        warnings.simplefilter("ignore", UserWarning)   # "format 3.0 needs NumPy >= 1.17"
        write(sys.argv[2])
        sys.exit(0)
    sys.exit(check(sys.argv[2]))
