#!/usr/bin/env python3
"""Host overhead of calling a cached gamut query from Python, next to torch.matmul and a Triton
kernel launch of the same size, in the same run (issue 13: at most 15 us above the kernel).

For each size n (C = A B, n x n x n, f32, ieee math everywhere) and each of gamut, torch.matmul
and a Triton matmul kernel, on CUDA tensors, every call allocating its output:
  host us      wall time per call of a loop of calls without synchronisation (the issue rate)
  device us    GPU time per call (kernels, memsets, copies), from the torch profiler
  call+sync us wall time per call of a loop with torch.cuda.synchronize() after each call
  above us     call+sync - device: what a call costs beyond the GPU work it launches, the
               synchronisation's round trip included (which every contender pays alike)

The verdict (issue 13: at most 15 us above the kernel) is on host - device: the host time a
cached call costs above its kernel's time when calls are issued back to back, as they are in
a training loop; the sync-inclusive figure is printed beside it, next to torch.matmul's.

    python bench/python_overhead.py [--sizes 64 256] [--iters 3000] [--json out.json]

Runs on the device (torch, triton, a GPU); the gamut package is the installed one.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

SGEMM = "where (i, j) { a = 0; reduce (k) { a += A[i, k] * B[k, j]; } C[i, j] = a; }"


def triton_matmul():
    import torch
    import triton
    import triton.language as tl

    @triton.jit
    def kernel(a, b, c, M, N, K, sam, sak, sbk, sbn, scm, scn,
               BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
        rows = tl.program_id(0) * BM + tl.arange(0, BM)
        cols = tl.program_id(1) * BN + tl.arange(0, BN)
        ks = tl.arange(0, BK)
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        for k0 in range(0, K, BK):
            kk = k0 + ks
            x = tl.load(a + rows[:, None] * sam + kk[None, :] * sak, mask=(rows[:, None] < M) & (kk[None, :] < K), other=0.0)
            y = tl.load(b + kk[:, None] * sbk + cols[None, :] * sbn, mask=(kk[:, None] < K) & (cols[None, :] < N), other=0.0)
            acc += tl.dot(x, y, input_precision="ieee")
        tl.store(c + rows[:, None] * scm + cols[None, :] * scn, acc, mask=(rows[:, None] < M) & (cols[None, :] < N))

    def matmul(A, B):
        M, K = A.shape
        N = B.shape[1]
        C = torch.empty((M, N), device=A.device, dtype=torch.float32)
        grid = (triton.cdiv(M, 64), triton.cdiv(N, 64))
        kernel[grid](A, B, C, M, N, K, A.stride(0), A.stride(1), B.stride(0), B.stride(1), C.stride(0), C.stride(1),
                     BM=64, BN=64, BK=32)
        return C

    return matmul


def device_us_per_call(torch, fn, calls):
    from torch.profiler import ProfilerActivity, profile
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(calls):
            fn()
        torch.cuda.synchronize()
    total = 0.0
    for row in prof.key_averages():
        t = getattr(row, "self_device_time_total", None)
        if t is None:
            t = getattr(row, "self_cuda_time_total", 0.0)
        total += t
    return total / calls


def host_us_per_call(torch, fn, iters, sync):
    torch.cuda.synchronize()
    samples = []
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(iters):
            fn()
            if sync:
                torch.cuda.synchronize()
        samples.append((time.perf_counter() - t0) / iters * 1e6)
        torch.cuda.synchronize()
    return statistics.median(samples)


def call_parts(torch, q, A, B, iters):
    """Where a call's host time goes: the C++ Query::run (its own wall clock, from the stats),
    and the Python-side steps the binding takes per call, each timed alone."""
    import gc
    n = A.shape[0]
    parts = {}
    walls = []
    for _ in range(iters):
        walls.append(q.run({"A": A, "B": B})[1]["wall_seconds"] * 1e6)
    torch.cuda.synchronize()
    parts["Query::run in C++ (stats wall_seconds, median)"] = statistics.median(walls)
    parts["q.run({...}) from Python, with the stats dict"] = host_us_per_call(torch, lambda: q.run({"A": A, "B": B}), iters, False)
    parts["q(A=, B=) from Python"] = host_us_per_call(torch, lambda: q(A=A, B=B), iters, False)
    parts["A.__dlpack__() (torch's Python path)"] = host_us_per_call(torch, lambda: A.__dlpack__(), iters, False)
    parts["torch._C._to_dlpack(A) (what gamut calls)"] = host_us_per_call(torch, lambda: torch._C._to_dlpack(A), iters, False)
    dev = torch.device("cuda", 0)
    parts["torch.empty((n, n), dtype=, device=) (the output)"] = host_us_per_call(
        torch, lambda: torch.empty((n, n), dtype=torch.float32, device=dev), iters, False)
    parts["torch._C._cuda_getCurrentRawStream(0)"] = host_us_per_call(torch, lambda: torch._C._cuda_getCurrentRawStream(0), iters, False)
    gc.collect()
    return parts


def operands(torch, n):
    """A and B, n x n, small integers (exact products), the same for a size in every process."""
    g = torch.Generator(device="cuda").manual_seed(n)
    A = torch.randint(-3, 4, (n, n), device="cuda", generator=g).float()
    B = torch.randint(-3, 4, (n, n), device="cuda", generator=g).float()
    return A, B


def host_phases(torch, q, A, B, iters):
    """The library's own phase marks (GAMUT_HOST_PHASES=1, src/core/host_phases.h): the median
    over `iters` q.run calls of each phase's microseconds, in call order."""
    per = {}
    for _ in range(iters):
        _, stats = q.run({"A": A, "B": B})
        for name, us in stats.get("host_phases_us", []):
            per.setdefault(name, []).append(us)
    torch.cuda.synchronize()
    return {name: statistics.median(v) for name, v in per.items()}


def phases_main(n, iters):
    """--phases-only: run in a child with GAMUT_HOST_PHASES=1 (the marks cost ~1 us a call, so
    the main figures are taken without them); prints the phases as JSON."""
    import torch
    import gamut
    q = gamut.compile(SGEMM, "sgemm")
    A, B = operands(torch, n)
    for _ in range(50):
        q.run({"A": A, "B": B})
    print(json.dumps(host_phases(torch, q, A, B, iters)))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[64, 256])
    ap.add_argument("--iters", type=int, default=3000)
    ap.add_argument("--json", default="")
    ap.add_argument("--phases-only", type=int, default=0, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.phases_only:
        return phases_main(args.phases_only, args.iters)

    import torch
    import gamut
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    q = gamut.compile(SGEMM, "sgemm")
    contenders = {"gamut": lambda A, B: q(A=A, B=B)["C"], "torch.matmul": torch.matmul}
    try:
        contenders["triton"] = triton_matmul()
    except Exception as e:   # no triton: say so, measure the others
        print(f"triton: not measured ({type(e).__name__}: {e})", file=sys.stderr)

    print(f"device: {torch.cuda.get_device_name()}, torch {torch.__version__}, gamut {gamut.__version__}")
    rows = []
    for n in args.sizes:
        A, B = operands(torch, n)
        want = A.double() @ B.double()
        for name, f in contenders.items():
            C = f(A, B)                               # compile / autotune / warm up
            torch.cuda.synchronize()
            assert torch.equal(C.double(), want), f"{name} at n={n}: wrong result"
            call = lambda: f(A, B)  # noqa: E731
            host = host_us_per_call(torch, call, args.iters, sync=False)
            synced = host_us_per_call(torch, call, max(args.iters // 3, 100), sync=True)
            dev = device_us_per_call(torch, call, 200)
            rows.append({"n": n, "what": name, "host_us": host, "device_us": dev, "sync_us": synced,
                         "above_us": synced - dev})
    # The same for gamut's stats: that the run was in place and asynchronous.
    _, stats = q.run({"A": A, "B": B})
    print(f"gamut run at n={args.sizes[-1]}: backend {stats['backend']}, tile {stats['tile']}, copies {stats['copies']}, "
          f"cache {stats['cache']} (record: the launch record replayed)")
    parts = call_parts(torch, q, A, B, args.iters)
    phases = {}
    for n in args.sizes:
        env = dict(os.environ, GAMUT_HOST_PHASES="1")
        r = subprocess.run([sys.executable, __file__, "--phases-only", str(n), "--iters", str(args.iters)],
                           env=env, capture_output=True, text=True, timeout=300)
        try:
            phases[n] = json.loads(r.stdout.strip().splitlines()[-1])
        except (ValueError, IndexError):
            print(f"host phases at n={n}: not read ({r.stderr.strip()[-300:]})", file=sys.stderr)

    print()
    print("| n | what | host us/call (no sync) | device us/call | call+sync us | above device us |")
    print("| --- | --- | --- | --- | --- | --- |")
    for r in rows:
        print(f"| {r['n']} | {r['what']} | {r['host_us']:.1f} | {r['device_us']:.1f} | {r['sync_us']:.1f} | {r['above_us']:.1f} |")
    print()
    print(f"parts of a gamut call at n={args.sizes[-1]} (host us per call, no sync):")
    for what, us in parts.items():
        print(f"  {what:58s} {us:7.2f}")
    for n, ph in phases.items():
        print()
        print(f"host phases of q.run at n={n} (GAMUT_HOST_PHASES=1, median us per call; sum {sum(ph.values()):.2f}):")
        for what, us in ph.items():
            print(f"  {what:58s} {us:7.2f}")
    bad = [r for r in rows if r["what"] == "gamut" and r["host_us"] - r["device_us"] > 15]
    print()
    for r in rows:
        if r["what"] == "gamut":
            t = next((x for x in rows if x["n"] == r["n"] and x["what"] == "torch.matmul"), None)
            print(f"n={r['n']}: gamut {r['host_us'] - r['device_us']:.1f} us above the kernel on the host "
                  f"({r['above_us']:.1f} with the sync's round trip; torch.matmul {t['above_us']:.1f})" if t else "")
    print("gamut within 15 us of the kernel (host - device):", "yes" if not bad else "NO at n=" + ",".join(str(r["n"]) for r in bad))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"device": torch.cuda.get_device_name(), "rows": rows, "parts": parts, "phases": phases}, f, indent=1)


if __name__ == "__main__":
    main()
