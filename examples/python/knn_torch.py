"""k nearest neighbours with gamut: the 10 closest database vectors X[j] of every query vector Q[i]
by squared Euclidean distance (examples/knn.mmlt), as one fused kernel that computes distances and
keeps the 10 smallest per row, checked against torch.cdist + topk (or NumPy).

    python examples/python/knn_torch.py [--queries N] [--database N] [--dim D]

With torch and a GPU the tensors live on the GPU and stay there: gamut reads them in place and
returns torch tensors on the same device. Without a GPU it runs the CPU engine on torch CPU
tensors, or on NumPy arrays where torch is not installed (smaller sizes).
"""
import argparse
import os
import time

import numpy as np

import gamut

HERE = os.path.dirname(os.path.abspath(__file__))


def main():
    gpu = gamut.gpu_available()
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--queries", type=int, default=4096 if gpu else 300)
    ap.add_argument("--database", type=int, default=65536 if gpu else 2000)
    ap.add_argument("--dim", type=int, default=64 if gpu else 16)
    args = ap.parse_args()

    knn = gamut.load(os.path.join(HERE, "..", "knn.mmlt"))
    try:
        import torch
    except ImportError:
        torch = None
        print("torch is not installed: NumPy arrays on the CPU engine")

    rng = np.random.default_rng(0)
    Q = rng.standard_normal((args.queries, args.dim)).astype(np.float32)
    X = rng.standard_normal((args.database, args.dim)).astype(np.float32)
    if torch is not None:
        device = "cuda" if gpu and torch.cuda.is_available() else "cpu"
        Q, X = torch.from_numpy(Q).to(device), torch.from_numpy(X).to(device)
        print(f"torch tensors on {device}")

    knn(Q=Q, X=X)                              # first call: compile (cached afterwards)
    t0 = time.perf_counter()
    res, stats = knn.run({"Q": Q, "X": X})    # the outputs, and how the run went
    out = res["Nearest"]                       # columns i, j, dist; 10 rows per query, by distance
    if torch is not None and Q.is_cuda:
        torch.cuda.synchronize()
    ms = (time.perf_counter() - t0) * 1e3
    i, j, dist = out["i"], out["j"], out["dist"]
    print(f"{args.queries} queries x {args.database} vectors, d={args.dim}: {len(i)} neighbours in {ms:.2f} ms"
          f" ({type(j).__module__.split('.')[0]} {getattr(j, 'device', 'host')}), engine: {stats['backend']}")

    # Check: the 10 smallest distances of every row, from the framework itself.
    if torch is not None:
        want = torch.cdist(Q.double(), X.double()).pow(2).topk(10, dim=1, largest=False).values
        got = dist.double().reshape(args.queries, 10)
        ok = bool(torch.allclose(got, want, rtol=1e-4, atol=1e-3)) and bool((i.reshape(-1, 10)[:, 0] == torch.arange(
            args.queries, device=i.device, dtype=i.dtype)).all())
    else:
        d = ((Q.astype(np.float64)[:, None, :] - X.astype(np.float64)[None, :, :]) ** 2).sum(axis=2)
        want = np.sort(d, axis=1)[:, :10]
        ok = np.allclose(dist.reshape(-1, 10), want, rtol=1e-4, atol=1e-3) and (i.reshape(-1, 10)[:, 0] == np.arange(args.queries)).all()
    print("check against the reference:", "ok" if ok else "MISMATCH")
    raise SystemExit(0 if ok else 1)


if __name__ == "__main__":
    main()
