#!/usr/bin/env python3
"""Tile search: one query, generated inputs, timed under each --tile (and the chosen tile).

usage: bench/tile_sweep.py --gamut build-dev/gamut QUERY.mmlt --tiles T1,T2,... NAME=SPEC ... [--param NAME=VALUE]
SPEC: DIMSxDIMS:dtype[:lo:hi], e.g. P=16384x256:f32 (uniform [0,1) floats), A=4096x4096:i16:-1000:1000,
Pzip=16384:i32:0:16 (integers in [lo, hi)), Adj=8192x8192:bool:0.001 (True with that probability).
Prints ms (median of --repeat after a warm-up, CUDA events) per tile; nothing is checked here (the
benchmarks and tests check results).
"""
import argparse
import os
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchlib import run_gamut  # noqa: E402


def make(spec, rng):
    parts = spec.split(":")
    shape = tuple(int(x) for x in parts[0].split("x"))
    dt = parts[1]
    if dt == "bool":
        return rng.random(shape) < float(parts[2])
    if dt.startswith("f"):
        return rng.random(shape, dtype=np.float32).astype(dt.replace("f", "float"))
    lo, hi = int(parts[2]), int(parts[3])
    return rng.integers(lo, hi, shape).astype({"i8": np.int8, "u8": np.uint8, "i16": np.int16, "i32": np.int32,
                                                 "i64": np.int64}[dt])


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--gamut", default="build-dev/gamut")
    ap.add_argument("query")
    ap.add_argument("arrays", nargs="+")
    ap.add_argument("--tiles", required=True)
    ap.add_argument("--param", action="append", default=[])
    ap.add_argument("--extra", default="", help="more gamut run arguments, space-separated")
    ap.add_argument("--repeat", type=int, default=5)
    a = ap.parse_args()
    rng = np.random.default_rng(1)
    tmp = tempfile.mkdtemp(prefix="gamut-sweep-")
    bind = {}
    for spec in a.arrays:
        name, s = spec.split("=", 1)
        bind[name] = os.path.join(tmp, name + ".npy")
        np.save(bind[name], make(s, rng))
    for p in a.param:
        k, v = p.split("=", 1)
        bind[k] = v
    print(f"sweep {os.path.basename(a.query)} {' '.join(a.arrays)} {' '.join(a.param)} {a.extra}", flush=True)
    for t in ["chosen"] + a.tiles.split(","):
        extra = a.extra.split() + ([] if t == "chosen" else ["--tile", t])
        j, err, _ = run_gamut(os.path.abspath(a.gamut), a.query, bind, "gpu", a.repeat, 300, extra)
        if j:
            print(f"  {t:22s} {j['time_ms']:9.3f} ms  kernel {j.get('kernel_ms', 0):9.3f} ms  tile {j.get('tile')}", flush=True)
        else:
            print(f"  {t:22s} FAILED {err}", flush=True)


if __name__ == "__main__":
    main()
