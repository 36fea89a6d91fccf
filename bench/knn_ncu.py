#!/usr/bin/env python3
"""One launch of the expanded kNN (bench/knn_selection.py's query) on standard normal, then on
uniform data, N = K as given, for Nsight Compute to profile (bench/NOTES.md, issue 12):

    ncu -k regex:gamut_main -c 2 --section SpeedOfLight --section WarpStateStats \\
        python3 bench/knn_ncu.py [N] [K]
"""
import os
import sys

import torch

import gamut

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from knn_selection import EXPANDED  # noqa: E402

n = int(sys.argv[1]) if len(sys.argv) > 1 else 16384
k = int(sys.argv[2]) if len(sys.argv) > 2 else 256
q = gamut.compile(EXPANDED)
g = torch.Generator(device="cuda").manual_seed(6)
for make in (torch.randn, torch.rand):
    Q = make(n, k, device="cuda", generator=g)
    X = make(n, k, device="cuda", generator=g)
    out = q(Q=Q, X=X, qn=(Q * Q).sum(1), xn=(X * X).sum(1))
    torch.cuda.synchronize()
    assert out["Nearest"]["i"].numel() == 10 * n
