#!/usr/bin/env python3
"""Several GPUs of one host (issue 14): Q5, Q7 and kNN at M = N = 65536, K = 1024 (f32), and a
batched max-plus product (i32), each on 1, 2, 4 and 8 GPUs (those visible), through
`gamut run --gpus LIST --json --repeat R`.

time: the run's engine time from --json (one GPU: the median CUDA-event time of R launches
after a warm-up; several: the slowest part's median plus the merge's wall time); merge: the
merge's share of that time; efficiency: t(1 GPU) / (n * t(n GPUs)), the issue's target being
at least 0.85 at 4 GPUs (n counts distinct GPUs: parts sharing one count once). Each multi-GPU result is checked against the one-GPU run's outputs
(lists as sets of rows; float sums may differ in their last bits, spec section 5).

Device lists: --configs "0;0,1;0,1,2,3" (semicolon-separated ordinal lists; an ordinal may
repeat, so "0;0,0" runs two parts on one GPU and measures the runner's overhead there).
Default: 0, 0-1, 0-3, 0-7, cut to the visible GPUs.

usage:
  bench/multi_gpu.py [--gamut build/gamut] [--configs "0;0,0"] [--n 65536] [--k 1024] [--repeat 5]
                     [--queries q5,q7,knn,maxplus] [--f32-math ieee,tf32] [--json OUT.json] [--dry-run]
--f32-math: each f32 query once per math (spec section 10); tf32 runs the products on the tensor
cores, so the parts are ~10x shorter and the runner's fixed costs and the merge weigh more.
--dry-run: M = N = 256, K = 32, the CPU engine and one configuration, so that the flow runs on a
machine without a GPU.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchlib import run_gamut  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
QUERIES = "/work/shared/queries"


def query_path(name):
    for d in (QUERIES, os.path.join(HERE, "..", "examples")):
        p = os.path.join(d, name + ".mmlt")
        if os.path.exists(p):
            return p
    raise SystemExit(f"multi_gpu: no {name}.mmlt in {QUERIES} or examples/")


def visible_gpus():
    try:
        p = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=30)
        return sum(1 for line in p.stdout.splitlines() if line.startswith("GPU "))
    except (OSError, subprocess.TimeoutExpired):
        return 0


def make_inputs(tmp, n, k, batch, mp_size):
    """The .npy files of every benchmark, written once (M = N = n)."""
    rng = np.random.default_rng(14)
    files = {}

    def save(name, a):
        path = os.path.join(tmp, name + ".npy")
        np.save(path, a)
        files[name] = path

    save("P", rng.standard_normal((n, k), dtype=np.float32))
    save("R", rng.standard_normal((k, n), dtype=np.float32))
    save("X", rng.standard_normal((n, k), dtype=np.float32))
    save("MA", rng.integers(-1000, 1000, (batch, mp_size, mp_size), dtype=np.int32))
    save("MB", rng.integers(-1000, 1000, (batch, mp_size, mp_size), dtype=np.int32))
    return files


def benchmarks(files, k):
    # Q5's threshold keeps about 3 pairs in a million: a sum of K products of standard normals
    # has standard deviation sqrt(K).
    thres = 4.5 * float(np.sqrt(k))
    return {
        "q5": ("q5_select", {"P": files["P"], "R": files["R"], "thres": thres}),
        "q7": ("q7_top128", {"P": files["P"], "R": files["R"]}),
        "knn": ("knn", {"Q": files["P"], "X": files["X"]}),
        "maxplus": (os.path.join(HERE, "maxplus_batched.mmlt"), {"A": files["MA"], "B": files["MB"]}),
    }


def rows_of(outs):
    """Outputs as comparable values: dense arrays as they are, lists as sorted rows."""
    got = {}
    for name, a in outs.items():
        if a.dtype.names:
            got[name] = sorted(tuple(r) for r in a.tolist())
        else:
            got[name] = a
    return got


def same(a, b):
    if a.keys() != b.keys():
        return False
    for name in a:
        x, y = a[name], b[name]
        if isinstance(x, list):
            if len(x) != len(y):
                return False
            if x != y and not np.allclose(np.array(x, dtype=float), np.array(y, dtype=float), rtol=1e-5):
                return False
        elif not np.allclose(x, y, rtol=1e-5, atol=1e-3):
            return False
    return True


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--gamut", default=os.path.join(HERE, "..", "build", "gamut"))
    ap.add_argument("--configs", default="")
    ap.add_argument("--n", type=int, default=65536)
    ap.add_argument("--k", type=int, default=1024)
    ap.add_argument("--batch", type=int, default=16, help="batched max-plus: instances")
    ap.add_argument("--mp-size", type=int, default=2048, help="batched max-plus: M = N = K of each")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--queries", default="q5,q7,knn,maxplus")
    ap.add_argument("--f32-math", default="ieee", help="comma-separated: ieee, tf32x3, tf32")
    ap.add_argument("--json", default="")
    ap.add_argument("--timeout", type=int, default=1800)
    ap.add_argument("--dry-run", action="store_true")
    a = ap.parse_args()
    backend = "gpu"
    if a.dry_run:
        a.n, a.k, a.batch, a.mp_size, a.repeat, backend = 256, 32, 2, 64, 0, "cpu"
    if a.configs:
        configs = [[int(x) for x in c.split(",")] for c in a.configs.split(";")]
    else:
        gpus = max(1, visible_gpus())
        configs = [list(range(n)) for n in (1, 2, 4, 8) if n <= gpus]
    if a.dry_run:
        configs = [[0]]

    tmp = tempfile.mkdtemp(prefix="gamut_multi_gpu_")
    rows = []
    try:
        files = make_inputs(tmp, a.n, a.k, a.batch, a.mp_size)
        table = benchmarks(files, a.k)
        runs = [(q, m) for q in a.queries.split(",") for m in a.f32_math.split(",") if q != "maxplus" or m == "ieee"]
        for q, math in runs:
            path, binds = table[q]
            path = path if path.endswith(".mmlt") else query_path(path)
            base_t, base_out = None, None
            for devs in configs:
                extra = [] if devs == [0] else ["--gpus", ",".join(map(str, devs))]
                if math != "ieee":
                    extra += ["--f32-math", math]
                outdir = os.path.join(tmp, "out")
                j, err, outs = run_gamut(a.gamut, path, binds, backend, a.repeat, a.timeout, extra, outdir)
                row = {"query": q, "f32_math": math, "devices": devs, "gpus": len(set(devs)), "parts": len(devs)}
                if err:
                    row["error"] = err
                    rows.append(row)
                    print(f"{q:8s} {math:6s} {','.join(map(str, devs)):16s} error: {err}", flush=True)
                    continue
                t = j["time_ms"]
                got = rows_of(outs)
                if base_t is None:
                    base_t, base_out = t, got
                row.update(time_ms=t, merge_ms=j.get("merge_ms", 0.0), merge=j.get("merge", ""),
                           partition=j.get("partition", ""), wall_ms=j["wall_ms"],
                           speedup=base_t / t if t > 0 else 0.0,
                           efficiency=base_t / (len(set(devs)) * t) if t > 0 else 0.0,
                           merge_share=j.get("merge_ms", 0.0) / t if t > 0 else 0.0,
                           same_as_one_gpu=same(base_out, got))
                rows.append(row)
                print(f"{q:8s} {math:6s} {','.join(map(str, devs)):16s} {t:10.2f} ms  speedup {row['speedup']:5.2f}  "
                      f"efficiency {row['efficiency']:5.2f}  merge {100 * row['merge_share']:5.1f}% ({row['merge']})  "
                      f"{'same' if row['same_as_one_gpu'] else 'DIFFERENT'}", flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"n": a.n, "k": a.k, "batch": a.batch, "mp_size": a.mp_size, "repeat": a.repeat,
                       "rows": rows}, f, indent=1)
    return 1 if any("error" in r or not r.get("same_as_one_gpu", True) for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
