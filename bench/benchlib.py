"""Helpers shared by the benchmark scripts (bench/relational.py, bench/semiring.py)."""
import json
import os
import shutil
import subprocess
import statistics
import time

import numpy as np


def run_gamut(gamut, query, bindings, backend, repeat, timeout, extra=(), outdir=None):
    """One `gamut run --json`; returns (json dict or None, error text or None, outputs dict)."""
    args = [gamut, "run", query, "--backend", backend, "--json"]
    if repeat:
        args += ["--repeat", str(repeat)]
    args += list(extra)
    if outdir:
        shutil.rmtree(outdir, ignore_errors=True)
        args += ["-o", outdir]
    args += [f"{k}={v}" for k, v in bindings.items()]
    t0 = time.time()
    try:
        p = subprocess.run(args, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return None, f"timeout after {timeout} s", {}
    except OSError as e:
        return None, f"cannot run gamut: {e}", {}
    if p.returncode != 0:
        msg = (p.stderr.strip() or p.stdout.strip()).splitlines()
        return None, f"rc={p.returncode}: {msg[0] if msg else '(no message)'}", {}
    try:
        j = json.loads(p.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return None, f"unreadable JSON: {p.stdout[-200:]!r}", {}
    j["process_s"] = time.time() - t0
    outs = {}
    if outdir:
        for f in os.listdir(outdir):
            if f.endswith(".npy"):
                outs[f[:-4]] = np.load(os.path.join(outdir, f))
    return j, None, outs


def cuda_time(fn, reps, warmup):
    """Median CUDA-event time (ms) of fn() over reps runs after warmup runs, and the last result."""
    import torch  # only where a GPU and PyTorch are present

    out = None
    for _ in range(warmup):
        out = fn()
        out = None
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        out = None
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        out = fn()
        e.record()
        e.synchronize()
        times.append(s.elapsed_time(e))
    return statistics.median(times), out
