#!/usr/bin/env python3
"""The reference queries of `gamut tune` with this GPU's tuned table against the heuristics, in
the same run: per query and size, the median of --calls calls (CUDA events around each call, on
torch tensors already on the device), two rounds alternating tuned / heuristic, and the kernel
each ran (stats tile and kernel_choice).

usage: build/venv/bin/python bench/tune_ab.py [--sizes 16384x256,16384x1024] [--calls 20]
Needs torch with CUDA. Prints one line per query, size and round.
"""
import argparse
import math
import statistics

import torch

import gamut

PRODUCT = "where (i, j) { a = 0; reduce (k) { a += A[i, k] * B[k, j]; } C[i, j] = a; }"
Q3 = "where (i, j) { a = 0; reduce (k) { a += P[i, k] * R[k, j]; } Cnt[Pzip[i], Rzip[j]] += a > thres; }"
Q5 = "where (i, j) { a = 0; reduce (k) { a += P[i, k] * R[k, j]; } if (a > thres) emit Pairs(i, j, a); }"
Q7 = "where (i, j) { a = 0; reduce (k) { a += P[i, k] * R[k, j]; } emit Top(i, j, a) top 128 by a; }"
MAXPLUS = "where (i, j) { a = -inf; reduce (k) { a max= A[i, k] + B[k, j]; } C[i, j] = a; }"
MINPLUS = "where (i, j) { d = inf; reduce (k) { d min= A[i, k] + B[k, j]; } C[i, j] = d; }"
MINPLUS_B = "batch (b) where (i, j) { d = inf; reduce (k) { d min= A[b, i, k] + B[b, k, j]; } C[b, i, j] = d; }"
BMM = "batch (b) where (i, j) { a = 0; reduce (k) { a += A[b, i, k] * B[b, k, j]; } C[b, i, j] = a; }"

# name, text, input dtype, f32_math (as src/api/tune.cpp's references)
REFS = [("sgemm", PRODUCT, "f32", "ieee"), ("sgemm-tf32", PRODUCT, "f32", "tf32"),
        ("product-bf16", PRODUCT, "bf16", "ieee"), ("q3-bf16", Q3, "bf16", "ieee"), ("q5-bf16", Q5, "bf16", "ieee"),
        ("q7-bf16", Q7, "bf16", "ieee"), ("q5-tf32", Q5, "f32", "tf32"), ("q7-tf32", Q7, "f32", "tf32"),
        ("maxplus", MAXPLUS, "i32", "ieee"), ("minplus", MINPLUS, "f32", "ieee"),
        ("minplus-batched", MINPLUS_B, "f32", "ieee"), ("product-batched-bf16", BMM, "bf16", "ieee")]


def data(name, text, dtype, m, k):
    g = torch.Generator(device="cuda").manual_seed(7)
    batched = text.startswith("batch")
    lead = (4,) if batched else ()
    if batched:
        m = max(2, m // 2)

    def mat(rows, cols):
        if dtype == "i32":
            return torch.randint(-1000, 1001, lead + (rows, cols), generator=g, device="cuda", dtype=torch.int32)
        x = torch.rand(lead + (rows, cols), generator=g, device="cuda")
        return x.to(torch.bfloat16) if dtype == "bf16" else x

    first, second = ("P", "R") if "P[" in text else ("A", "B")
    kw = {first: mat(m, k), second: mat(k, m)}
    if "Pzip" in text:
        kw["Pzip"] = torch.randint(0, 16, (m,), generator=g, device="cuda", dtype=torch.int32)
        kw["Rzip"] = torch.randint(0, 16, (m,), generator=g, device="cuda", dtype=torch.int32)
    if "thres" in text:
        kw["thres"] = 0.25 * k + (0.55 * math.sqrt(k) if name.startswith("q5") else 0.0)
    return kw


def timed(q, kw, opts, calls):
    for _ in range(3):
        q.run(kw, **opts)
    times = []
    for _ in range(calls):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        _, stats = q.run(kw, **opts)
        e.record()
        torch.cuda.synchronize()
        times.append(s.elapsed_time(e))
    return statistics.median(times), stats


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="16384x256,16384x1024")
    ap.add_argument("--calls", type=int, default=20)
    a = ap.parse_args()
    print(f"device {torch.cuda.get_device_name()}, gamut {gamut.__version__}")
    for size in a.sizes.split(","):
        m, k = (int(x) for x in size.split("x"))
        for name, text, dtype, f32 in REFS:
            q = gamut.compile(text, name)
            kw = data(name, text, dtype, m, k)
            for rnd in (1, 2):
                tuned, ts = timed(q, kw, {"f32_math": f32, "tuned": True}, a.calls)
                heur, hs = timed(q, kw, {"f32_math": f32, "tuned": False}, a.calls)
                print(f"{name:22s} {size:11s} round {rnd}: tuned {tuned:8.3f} ms ({ts['kernel_choice']}, {ts['tile']}) "
                      f"heuristic {heur:8.3f} ms ({hs['tile']})  heuristic/tuned {heur / tuned:5.3f}", flush=True)
            del kw
            torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
