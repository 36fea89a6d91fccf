#!/usr/bin/env python3
"""Error and speed of gamut's f32 maths on tensor cores (issue 12): C = A B with f32_math tf32x3
and tf32 against cuBLAS SGEMM (torch.matmul, TF32 off) and torch with TF32, all measured against
an f64 product of the same operands, one run, CUDA events (warm-up, median of --repeat).

Errors: max over C of |C - C64| / (|A| |B|)_ij (the sum of magnitudes, the bound's scale) and
max |C - C64| / max |C64|. The issue's targets: tf32x3 at least 2x faster than SGEMM with a max
relative error no worse than 1.5x SGEMM's; tf32 at least 0.9x torch with TF32.

    python bench/tf32_error.py [--n 4096] [--ks 256,1024,4096,16384] [--repeat 5]
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchlib import cuda_time  # noqa: E402

PRODUCT = "where (i, j) { a = 0; reduce (k) { a += A[i, k] * B[k, j]; } C[i, j] = a; }"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=4096)
    ap.add_argument("--ks", default="256,1024,4096,16384")
    ap.add_argument("--repeat", type=int, default=5)
    a = ap.parse_args()
    import torch
    import gamut

    dev = torch.device("cuda")
    q = gamut.compile(PRODUCT)
    print(f"device: {torch.cuda.get_device_name()}, M = N = {a.n}, torch {torch.__version__}")
    print(f"{'K':>6} {'what':22} {'ms':>9} {'max err/sum|xy|':>16} {'max err/max|C|':>15}")
    misses = []
    for K in [int(x) for x in a.ks.split(",") if x]:
        g = torch.Generator(device=dev).manual_seed(K)
        A = torch.randn(a.n, K, device=dev, generator=g)
        B = torch.randn(K, a.n, device=dev, generator=g)
        A64, B64 = A.double(), B.double()
        C64 = A64 @ B64
        mag = A64.abs() @ B64.abs()
        scale = C64.abs().max().item()
        del A64, B64

        def err(C):
            d = (C.double() - C64).abs()
            return (d / mag).max().item(), d.max().item() / scale

        runs = {}
        torch.backends.cuda.matmul.allow_tf32 = False
        runs["cuBLAS SGEMM"] = (lambda: torch.matmul(A, B))
        for mode in ("tf32x3", "tf32"):
            runs[f"gamut {mode}"] = (lambda mode=mode: q(A=A, B=B, f32_math=mode)["C"])
        res = {}
        for name, fn in runs.items():
            ms = cuda_time(fn, a.repeat, 2)[0]
            res[name] = (ms,) + err(fn())
        torch.backends.cuda.matmul.allow_tf32 = True
        ms = cuda_time(lambda: torch.matmul(A, B), a.repeat, 2)[0]
        res["torch TF32"] = (ms,) + err(torch.matmul(A, B))
        torch.backends.cuda.matmul.allow_tf32 = False
        for name, (ms, e1, e2) in res.items():
            print(f"{K:>6} {name:22} {ms:9.3f} {e1:16.3g} {e2:15.3g}")
        sg, x3, t1, tt = res["cuBLAS SGEMM"], res["gamut tf32x3"], res["gamut tf32"], res["torch TF32"]
        speed, errr = sg[0] / x3[0], x3[1] / sg[1]
        print(f"{K:>6} tf32x3: {speed:.2f}x SGEMM's speed (target >= 2), error {errr:.2f}x SGEMM's (target <= 1.5); "
              f"tf32: {tt[0] / t1[0]:.2f}x torch TF32 (target >= 0.9), error {t1[1] / tt[1]:.2f}x torch TF32's")
        if speed < 2 or errr > 1.5 or tt[0] / t1[0] < 0.9:
            misses.append(K)
        for line in q.explain(A=A, B=B, f32_math="tf32x3").splitlines():
            if line.startswith("math:"):
                print(f"{K:>6} {line}")
        del A, B, C64, mag
        torch.cuda.empty_cache()
    print("targets missed at K =", misses if misses else "none")


if __name__ == "__main__":
    main()
