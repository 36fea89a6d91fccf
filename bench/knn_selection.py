#!/usr/bin/env python3
"""What the per-i bottom-10 selection of a kNN costs against the data (issue 12's weak row).

The expanded kNN (|q|^2 + |x|^2 - 2 q.x, a sum of products) and the direct one ((q - x)^2 summed)
at N x N, K, f32 (ieee, SIMT), on uniform [0, 1) and on standard normal data, through the Python
package on CUDA tensors: gamut's time (CUDA events, warm-up, median of --repeat), from the run
statistics of one call its engine time (kernel and device list work), the C++ call's wall time
and the rows its kernel appended before the device selection, and torch's composition (addmm,
topk) in the same run. Checks each result's distances against torch's 10 smallest (relative
bound 1e-3: the forms round differently).

    python bench/knn_selection.py [--n 16384] [--k 256] [--repeat 3]
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchlib import cuda_time  # noqa: E402

EXPANDED = ("where (i, j) { dot = 0; reduce (k) { dot += Q[i, k] * X[j, k]; } let dist = qn[i] + xn[j] - 2 * dot;"
            " emit Nearest(i, j, dist) bottom 10 by dist per i; }")
DIRECT = ("where (i, j) { dist = 0; reduce (k) { let t = Q[i, k] - X[j, k]; dist += t * t; }"
          " emit Nearest(i, j, dist) bottom 10 by dist per i; }")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=16384)
    ap.add_argument("--k", type=int, default=256)
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()
    import torch
    import gamut
    torch.backends.cuda.matmul.allow_tf32 = False
    dev = "cuda"
    g = torch.Generator(device=dev).manual_seed(6)
    queries = {"expanded": gamut.compile(EXPANDED), "direct": gamut.compile(DIRECT)}
    print(f"device: {torch.cuda.get_device_name()}; N = {a.n}, K = {a.k}, f32 (ieee)")
    print("| data | form | gamut ms | engine ms | Query::run ms | rows appended | torch ms | torch/gamut |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for data in ("uniform", "normal"):
        make = torch.rand if data == "uniform" else torch.randn
        Q = make(a.n, a.k, device=dev, generator=g)
        X = make(a.n, a.k, device=dev, generator=g)
        qn = (Q * Q).sum(1)
        xn = (X * X).sum(1)

        def torch_knn():
            d = torch.addmm(qn[:, None] + xn[None, :], Q, X.t(), beta=1.0, alpha=-2.0)
            return torch.topk(d, 10, dim=1, largest=False)

        want = torch_knn().values
        t = cuda_time(torch_knn, a.repeat, 2)[0]
        for form, q in queries.items():
            args = {"Q": Q, "X": X, "qn": qn, "xn": xn} if form == "expanded" else {"Q": Q, "X": X}
            out, stats = q.run(args)
            rows_i, dist = out["Nearest"]["i"].long(), out["Nearest"]["dist"]
            by_dist = torch.sort(dist, stable=True).indices
            by_i = by_dist[torch.sort(rows_i[by_dist], stable=True).indices]   # by i, then by dist
            d = dist[by_i].reshape(a.n, 10)
            assert out["Nearest"]["i"].numel() == 10 * a.n and float(want.abs().max()) > 0
            err = float(((d - want).abs() / want.abs().clamp_min(1e-6)).max())
            assert err < 1e-3, f"{data} {form}: distances differ from torch's by {err:.2e}"
            ms = cuda_time(lambda: q(**args), a.repeat, 2)[0]
            rows = stats["list_rows_appended"][0] if stats["list_rows_appended"] else -1
            _, stats = q.run(args)   # (warm: the times of one call, not of the first)
            print(f"| {data} | {form} | {ms:.3f} | {stats['seconds'] * 1e3:.3f} | {stats['wall_seconds'] * 1e3:.3f} | "
                  f"{rows} | {t:.3f} | {t / ms:.2f} |")
        del Q, X
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
