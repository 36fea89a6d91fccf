#!/usr/bin/env python3
"""compute-sanitizer memcheck and racecheck on one query of each family (project, aggregate,
join, select list, top-k, semiring, batched, packed i16, bit-packed or-and, distinct, direct
tables), on small
odd sizes. Exit 1 when any run failed or reported an error (GAMUT_REQUIRE_GPU=1: no GPU is a failure
too, as every run then fails). usage: GAMUT OUTDIR"""
import os
import subprocess
import sys
import tempfile

import numpy as np

gamut, outdir = sys.argv[1], sys.argv[2]
os.environ["GAMUT_REQUIRE_GPU"] = "1"
ex = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples")
rng = np.random.default_rng(7)
cases = {
    "sgemm": {"A": rng.standard_normal((67, 45)).astype(np.float32), "B": rng.standard_normal((45, 131)).astype(np.float32)},
    "q2_zip_aggregate": {"P": rng.random((67, 45)).astype(np.float32), "R": rng.random((45, 131)).astype(np.float32),
                         "Pzip": rng.integers(0, 5, 67).astype(np.int32), "Rzip": rng.integers(0, 4, 131).astype(np.int32)},
    # Q3's counts per pair of areas: the direct-table aggregate loop (codegen_tables.cpp).
    "q3_count_pairs": {"P": rng.random((67, 45)).astype(np.float32), "R": rng.random((45, 131)).astype(np.float32),
                       "Pzip": rng.integers(0, 5, 67).astype(np.int32), "Rzip": rng.integers(0, 4, 131).astype(np.int32),
                       "thres": 11.0},
    "q4_join_area": {"P": rng.random((67, 45)).astype(np.float32), "R": rng.random((45, 131)).astype(np.float32),
                     "Pzip": rng.integers(0, 5, 67).astype(np.int32), "Rzip": rng.integers(0, 4, 131).astype(np.int32)},
    "q5_select": {"P": rng.random((67, 45)).astype(np.float32), "R": rng.random((45, 131)).astype(np.float32), "thres": 11.0},
    "q7_top128": {"P": rng.random((67, 45)).astype(np.float32), "R": rng.random((45, 131)).astype(np.float32)},
    "maxplus": {"A": rng.integers(-99, 99, (67, 45)).astype(np.int32), "B": rng.integers(-99, 99, (45, 131)).astype(np.int32)},
    "minplus_batched": {"D": rng.random((3, 67, 45)).astype(np.float32), "E": rng.random((3, 45, 131)).astype(np.float32)},
    # packed 16-bit DPX steps; bottom-N per row with global thresholds; the bit-packed or-and
    # rewrite (pack kernels + word product); a distinct list (device hash set + CUB sort).
    "maxplus@i16": {"A": rng.integers(-99, 99, (67, 45)).astype(np.int16), "B": rng.integers(-99, 99, (45, 131)).astype(np.int16)},
    "knn": {"Q": rng.random((67, 45)).astype(np.float32), "X": rng.random((131, 45)).astype(np.float32)},
    "reachability+": {"Adj": rng.random((97, 97)) < 0.05},
    "distinct": {"P": rng.random((67, 45)).astype(np.float32), "R": rng.random((45, 131)).astype(np.float32),
                 "Pzip": rng.integers(0, 5, 67).astype(np.int32), "Rzip": rng.integers(0, 4, 131).astype(np.int32)},
}
# Queries not among the examples.
extra_queries = {
    "distinct": "where (i, j) { s = 0; reduce (k) { s += P[i, k] * R[k, j]; } if (s > 11) emit Z(Pzip[i], Rzip[j]) distinct; }",
}
bad = 0
with tempfile.TemporaryDirectory() as d:
    for q, data in cases.items():
        args = []
        for k, v in data.items():
            if isinstance(v, np.ndarray):
                np.save(os.path.join(d, k + ".npy"), v)
                args.append(f"{k}={os.path.join(d, k + '.npy')}")
            else:
                args.append(f"{k}={v}")
        # NAME@x: another data type; NAME+: with the bound rewrites (else --no-rewrite).
        base = q.split("@")[0].rstrip("+")
        qfile = os.path.join(ex, base + ".mmlt")
        if base in extra_queries:
            qfile = os.path.join(d, base + ".mmlt")
            with open(qfile, "w") as f:
                f.write(extra_queries[base])
        for tool in ("memcheck", "racecheck"):
            cmd = ["compute-sanitizer", "--tool", tool, "--error-exitcode", "9", gamut, "run",
                   qfile, "--backend", "gpu"] + ([] if q.endswith("+") else ["--no-rewrite"]) + args
            p = subprocess.run(cmd, capture_output=True, text=True)
            with open(os.path.join(outdir, f"sanitize_{q.replace('@', '_').replace('+', '_rw')}_{tool}.log"), "w") as f:
                f.write(p.stdout + p.stderr)
            summary = [l for l in (p.stdout + p.stderr).splitlines() if "ERROR SUMMARY" in l or "RACECHECK SUMMARY" in l]
            ok = p.returncode == 0
            bad += not ok
            print(f"{q:18s} {tool:9s} {'clean' if ok else 'FAILED rc=%d' % p.returncode} {summary[-1] if summary else ''}")
print(f"sanitizer: {len(cases) * 2 - bad} passed, {bad} failed")
sys.exit(1 if bad else 0)
