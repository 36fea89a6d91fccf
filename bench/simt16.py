#!/usr/bin/env python3
"""16-bit data on the SIMT mainloop (issue 12, item 4): a max-plus product and a min-plus
product on bf16 and f16 data against the same query on f32 data, through the Python package on
CUDA tensors, CUDA events (warm-up, median of --repeat). The issue's bound: the 16-bit query is
no slower than the f32 one (its tiles are widened once, when they are staged in shared memory).

    python bench/simt16.py [--n 8192] [--repeat 5]
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchlib import cuda_time  # noqa: E402

MAXPLUS = "where (i, j) { a = -inf; reduce (k) { a max= A[i, k] + B[k, j]; } C[i, j] = a; }"
MINPLUS_NT = "where (i, j) { a = inf; reduce (k) { a min= A[i, k] + B[j, k]; } C[i, j] = a; }"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=8192)
    ap.add_argument("--repeat", type=int, default=5)
    a = ap.parse_args()
    import torch
    import gamut

    dev = torch.device("cuda")
    print(f"device: {torch.cuda.get_device_name()}, n = {a.n}")
    for name, text in [("max-plus X[i,k] Y[k,j]", MAXPLUS), ("min-plus X[i,k] Y[j,k]", MINPLUS_NT)]:
        q = gamut.compile(text)
        A32 = torch.rand(a.n, a.n, device=dev) * 100
        B32 = torch.rand(a.n, a.n, device=dev) * 100
        f32_ms = cuda_time(lambda: q(A=A32, B=B32), a.repeat, 2)[0]
        print(f"{name:24s} f32  {f32_ms:8.3f} ms")
        for dt, tn in [(torch.bfloat16, "bf16"), (torch.float16, "f16")]:
            A, B = A32.to(dt), B32.to(dt)
            ms = cuda_time(lambda: q(A=A, B=B), a.repeat, 2)[0]
            # Checked against the f32 query on the same (rounded) values: exact (max of sums in f32).
            ref = q(A=A.float(), B=B.float())["C"]
            got = q(A=A, B=B)["C"]
            same = bool(torch.equal(ref, got)) and bool(torch.isfinite(got).all())
            print(f"{name:24s} {tn:4s} {ms:8.3f} ms  f32/16-bit {f32_ms / ms:5.2f}  equal to f32 on the same values: {same}")


if __name__ == "__main__":
    main()
