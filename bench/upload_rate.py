#!/usr/bin/env python3
"""Host-to-GPU upload rates on this machine (issue 40: a query on NumPy inputs uploads them per
call, and with several GPUs each uploads the whole column operand). For one 256 MiB f32 array,
median of --repeat copies after a warm-up, GB/s:

  pageable        cudaMemcpy from the array as it lies (what the engine does now)
  pinned          from page-locked memory (the DMA's own rate)
  register        cudaHostRegister of the array, the copy, cudaHostUnregister (all three timed)
  memcpy xT       host memcpy into page-locked memory with T threads (a staged copy's CPU side)
  pageable 2 GPUs the pageable copy to GPU 0 and GPU 1 at once, from two threads (both counted)

--queries: also gamut's own uploads, A / B in one process: Q5 (examples/q5_select.mmlt) at
M = N = --n, K = --k on NumPy inputs with GAMUT_STAGED_UPLOAD_MIN=off (cudaMemcpy from pageable
memory) and with the staging buffers (the default), beside the same call on CuPy arrays (no upload),
ms per call (median of --repeat after a warm-up).

Needs CuPy (the device image has it). usage: bench/upload_rate.py [--mib 256] [--repeat 5] [--queries]
                                                                 [--n 65536] [--k 1024]
"""
import os
import argparse
import statistics
import sys
import threading
import time

import numpy as np


def rate(nbytes, fn, repeat):
    fn()
    ts = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    return nbytes / statistics.median(ts) / 1e9


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mib", type=int, default=256)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--queries", action="store_true")
    ap.add_argument("--n", type=int, default=65536)
    ap.add_argument("--k", type=int, default=1024)
    a = ap.parse_args()
    import cupy
    n = a.mib << 20
    host = np.random.default_rng(1).standard_normal(n // 4).astype(np.float32)
    ngpu = cupy.cuda.runtime.getDeviceCount()
    dev = []
    for g in range(min(ngpu, 2)):
        with cupy.cuda.Device(g):
            dev.append(cupy.empty(n // 4, dtype=np.float32))

    def copy_to(g, src):
        with cupy.cuda.Device(g):
            cupy.cuda.runtime.memcpy(dev[g].data.ptr, src.ctypes.data, n, cupy.cuda.runtime.memcpyHostToDevice)

    print(f"{a.mib} MiB, {ngpu} GPUs, median of {a.repeat}")
    print(f"  pageable        {rate(n, lambda: copy_to(0, host), a.repeat):6.1f} GB/s")
    mem = cupy.cuda.alloc_pinned_memory(n)
    pinned = np.frombuffer(mem, dtype=np.float32, count=n // 4)
    pinned[:] = host
    print(f"  pinned          {rate(n, lambda: copy_to(0, pinned), a.repeat):6.1f} GB/s")

    def registered():
        cupy.cuda.runtime.hostRegister(host.ctypes.data, n, 0)
        try:
            copy_to(0, host)
        finally:
            cupy.cuda.runtime.hostUnregister(host.ctypes.data)
    print(f"  register        {rate(n, registered, a.repeat):6.1f} GB/s (register + copy + unregister)")

    for threads in (1, 2, 4, 8):
        def staged():
            step = (n // 4 + threads - 1) // threads
            ws = [threading.Thread(target=np.copyto, args=(pinned[t * step:(t + 1) * step], host[t * step:(t + 1) * step]))
                  for t in range(threads)]
            for w in ws:
                w.start()
            for w in ws:
                w.join()
        print(f"  memcpy x{threads}       {rate(n, staged, a.repeat):6.1f} GB/s")
    if ngpu >= 2:
        def both():
            ws = [threading.Thread(target=copy_to, args=(g, host)) for g in (0, 1)]
            for w in ws:
                w.start()
            for w in ws:
                w.join()
        print(f"  pageable 2 GPUs {rate(2 * n, both, a.repeat):6.1f} GB/s (both copies counted)")
    if a.queries:
        queries(a, cupy)
    return 0


def queries(a, cupy):
    import gamut
    q = gamut.load(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples", "q5_select.mmlt"))
    rng = np.random.default_rng(5)
    P = rng.standard_normal((a.n, a.k), dtype=np.float32)
    R = rng.standard_normal((a.k, a.n), dtype=np.float32)
    thres = 4.5 * float(np.sqrt(a.k))
    Pd, Rd = cupy.asarray(P), cupy.asarray(R)

    def ms(fn):
        fn()
        ts = []
        for _ in range(a.repeat):
            t0 = time.perf_counter()
            fn()
            cupy.cuda.Device(0).synchronize()
            ts.append(time.perf_counter() - t0)
        return statistics.median(ts) * 1e3

    print(f"Q5 at M = N = {a.n}, K = {a.k}, f32 inputs ({(P.nbytes + R.nbytes) >> 20} MiB), ms per call")
    for math in ("ieee", "tf32"):
        row = {}
        for label, env, inputs in (("numpy plain", "off", (P, R)), ("numpy staged", None, (P, R)),
                                   ("cupy", None, (Pd, Rd))):
            if env is None:
                os.environ.pop("GAMUT_STAGED_UPLOAD_MIN", None)
            else:
                os.environ["GAMUT_STAGED_UPLOAD_MIN"] = env
            row[label] = ms(lambda: q(P=inputs[0], R=inputs[1], thres=thres, f32_math=math, backend="gpu"))
        os.environ.pop("GAMUT_STAGED_UPLOAD_MIN", None)
        print(f"  {math:5s} " + "  ".join(f"{k} {v:8.2f}" for k, v in row.items()) +
              f"  upload plain {row['numpy plain'] - row['cupy']:.1f} staged {row['numpy staged'] - row['cupy']:.1f}")


if __name__ == "__main__":
    sys.exit(main())
