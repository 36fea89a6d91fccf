"""All-pairs shortest paths by min-plus squaring: D <- D (min,+) D, ceil(log2(n - 1)) times, each
a tropical matrix product  D2[i, j] = min_k D[i, k] + D[k, j]  run by gamut, checked against
Floyd-Warshall in NumPy.

    python examples/python/shortest_paths.py [--nodes N] [--density P]

With torch and a GPU the distance matrix stays on the GPU from one squaring to the next (each
call's output tensor is the next call's input); otherwise NumPy arrays on the CPU engine.
"""
import argparse
import math
import time

import numpy as np

import gamut

MINPLUS = """
where (i, j) {
  d = inf;
  reduce (k) { d min= A[i, k] + B[k, j]; }
  D2[i, j] = d;
}
"""


def floyd_warshall(W):
    D = W.astype(np.float64).copy()
    for k in range(D.shape[0]):
        D = np.minimum(D, D[:, k, None] + D[None, k, :])
    return D


def main():
    gpu = gamut.gpu_available()
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--nodes", type=int, default=2048 if gpu else 200)
    ap.add_argument("--density", type=float, default=0.01)
    args = ap.parse_args()
    n = args.nodes

    rng = np.random.default_rng(2)
    W = np.where(rng.random((n, n)) < args.density, rng.integers(1, 100, (n, n)), np.inf).astype(np.float32)
    np.fill_diagonal(W, 0)

    step = gamut.compile(MINPLUS, "minplus")
    D = W
    try:
        import torch
        if gpu and torch.cuda.is_available():
            D = torch.from_numpy(W).cuda()
            print("torch tensors on cuda: the distances stay on the GPU between squarings")
    except ImportError:
        pass

    squarings = max(1, math.ceil(math.log2(max(n - 1, 2))))
    t0 = time.perf_counter()
    for _ in range(squarings):
        out, stats = step.run({"A": D, "B": D})
        D = out["D2"]
    if hasattr(D, "cpu"):
        D = D.cpu().numpy()
    ms = (time.perf_counter() - t0) * 1e3
    reachable = np.isfinite(D).mean()
    print(f"{n} nodes: {squarings} min-plus squarings in {ms:.1f} ms; {reachable:.1%} of pairs connected; "
          f"engine: {stats['backend']}")

    if n <= 1024:
        ok = np.array_equal(D, floyd_warshall(W).astype(np.float32))
        print("check against Floyd-Warshall:", "ok" if ok else "MISMATCH")
        raise SystemExit(0 if ok else 1)
    print("(no check above 1024 nodes: Floyd-Warshall in NumPy is slow)")


if __name__ == "__main__":
    main()
