#!/usr/bin/env python3
"""One warm call of a tensor_queries.py query for Nsight Compute (bench/NOTES.md, issue 12): a
first call (compile, warm-up), then the profiled one, N x N scores, K deep.

    ncu -k regex:gamut_main --launch-skip 1 -c 1 --section SpeedOfLight --section WarpStateStats \\
        python3 bench/query_ncu.py q5|q7|q3|areas|knn|product bf16|tf32|tf32x3 [N] [K]
"""
import os
import sys

import torch

import gamut

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tensor_queries import AREAS, GROUPS, KNN, PRODUCT, Q3, Q5, Q7  # noqa: E402

which, data = sys.argv[1], sys.argv[2]
n = int(sys.argv[3]) if len(sys.argv) > 3 else 16384
k = int(sys.argv[4]) if len(sys.argv) > 4 else 256
dt, mode = {"bf16": (torch.bfloat16, "ieee"), "tf32": (torch.float32, "tf32"), "tf32x3": (torch.float32, "tf32x3")}[data]
g = torch.Generator(device="cuda").manual_seed(7)
P = torch.rand(n, k, device="cuda", generator=g).to(dt)
R = torch.rand(k, n, device="cuda", generator=g).to(dt)
sample = (P[:256].float() @ R.float()).flatten()
hi, mid = float(torch.quantile(sample[:1 << 20], 1 - 1e-4)), float(torch.median(sample[:1 << 20]))
Pz = torch.randint(0, GROUPS, (n,), device="cuda", dtype=torch.int32)
Rz = torch.randint(0, GROUPS, (n,), device="cuda", dtype=torch.int32)
if which == "knn":
    Q, X = P, R.t().contiguous()
    call = lambda: gamut.compile(KNN)(Q=Q, X=X, qn=(Q.float() ** 2).sum(1), xn=(X.float() ** 2).sum(1),  # noqa: E731
                                      f32_math=mode)
else:
    text, kw = {"q5": (Q5, dict(thres=hi)), "q7": (Q7, {}), "q3": (Q3, dict(Pzip=Pz, Rzip=Rz, thres=mid)),
                "areas": (AREAS, dict(Pzip=Pz, Rzip=Rz, thres=mid)), "product": (PRODUCT, {})}[which]
    q = gamut.compile(text)
    args = dict(A=P, B=R) if which == "product" else dict(P=P, R=R, **kw)
    call = lambda: q(**args, f32_math=mode)  # noqa: E731
for _ in range(2):
    call()
torch.cuda.synchronize()
print(f"profiled {which} {data} {n}x{n} K={k}")
