"""Two-point correlation of a 3-D catalogue: pair counts by distance bin of the catalogue against
itself (DD) and against a random catalogue (DR), one fused gamut query each: the histogram's bin
is computed from each pair's distance (`Hist[b] += 1`), so no distance matrix is ever stored.
Checked against NumPy; prints the estimate xi(r) = DD / DR * (N_R / N_D) - 1 per bin.

    python examples/python/two_point_correlation.py [--points N] [--randoms N] [--bins B] [--rmax R]

The catalogue is clustered (points scattered around a few centres) in the unit cube, the random one
uniform. With torch and a GPU the points are CUDA tensors (the GPU engine), otherwise NumPy arrays
(the CPU engine). Pairs of a point with itself (distance 0) are in DD's first bin, as in NumPy's.
"""
import argparse
import time

import numpy as np

import gamut

PAIR_COUNTS = """
where (i, j) {
  d2 = 0;
  reduce (k) {
    let t = P[i, k] - X[j, k];
    d2 += t * t;
  }
  let b = i32(floor(sqrt(d2) / w));
  if (b < bins) Hist[b] += 1;
}
"""


def numpy_pair_counts(P, X, w, bins, rows=512):
    """The same histogram in NumPy, in row chunks (float64 distances)."""
    counts = np.zeros(bins, np.int64)
    P64, X64 = P.astype(np.float64), X.astype(np.float64)
    for r in range(0, len(P64), rows):
        d = np.sqrt(((P64[r:r + rows, None, :] - X64[None, :, :]) ** 2).sum(axis=2))
        b = np.floor(d / w).astype(np.int64)
        counts += np.bincount(b[b < bins], minlength=bins)[:bins]
    return counts


def near_edges(P, X, w, bins, eps=1e-4, rows=512):
    """Pairs whose distance lies within eps bin widths of an edge: f32 and f64 may bin them apart."""
    n = 0
    P64, X64 = P.astype(np.float64), X.astype(np.float64)
    for r in range(0, len(P64), rows):
        x = np.sqrt(((P64[r:r + rows, None, :] - X64[None, :, :]) ** 2).sum(axis=2)) / w
        n += int(((np.abs(x - np.round(x)) < eps) & (np.round(x) <= bins) & (x > 0.5)).sum())
    return n


def main():
    gpu = gamut.gpu_available()
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--points", type=int, default=16384 if gpu else 2000)
    ap.add_argument("--randoms", type=int, default=32768 if gpu else 4000)
    ap.add_argument("--bins", type=int, default=32)
    ap.add_argument("--rmax", type=float, default=0.25)
    args = ap.parse_args()
    bins, w = args.bins, args.rmax / args.bins

    rng = np.random.default_rng(4)
    centres = rng.random((20, 3))
    D = (centres[rng.integers(0, 20, args.points)] + 0.05 * rng.standard_normal((args.points, 3))) % 1.0
    D = D.astype(np.float32)
    R = rng.random((args.randoms, 3)).astype(np.float32)

    q = gamut.compile(PAIR_COUNTS, "pair_counts")
    Dx, Rx = D, R
    try:
        import torch
        if gpu and torch.cuda.is_available():
            Dx, Rx = torch.from_numpy(D).cuda(), torch.from_numpy(R).cuda()
            print("torch tensors on cuda")
    except ImportError:
        pass

    t0 = time.perf_counter()
    dd, stats = q.run({"P": Dx, "X": Dx, "w": w, "bins": bins}, dims={"Hist": [bins]})
    dr, _ = q.run({"P": Dx, "X": Rx, "w": w, "bins": bins}, dims={"Hist": [bins]})
    ms = (time.perf_counter() - t0) * 1e3
    DD, DR = (np.asarray(x["Hist"].cpu() if hasattr(x["Hist"], "cpu") else x["Hist"]).astype(np.int64) for x in (dd, dr))
    pairs = args.points * (args.points + args.randoms)
    print(f"DD and DR of {args.points} points and {args.randoms} randoms: {pairs:.3g} pairs in {ms:.1f} ms; "
          f"engine: {stats['backend']}")

    xi = np.where(DR > 0, DD / np.maximum(DR, 1) * (args.randoms / args.points) - 1, np.nan)
    for b in range(0, bins, max(1, bins // 8)):
        print(f"  r in [{b * w:.4f}, {(b + 1) * w:.4f}): DD {DD[b]:>9}  DR {DR[b]:>9}  xi {xi[b]:8.3f}")

    if args.points * max(args.points, args.randoms) > 4e8:
        print("(no check at this size: the NumPy reference would take minutes)")
        return
    # gamut computes distances in f32, NumPy here in f64: a pair within 1e-4 bin widths of an edge
    # may land in the neighbouring bin, so the counts may differ by at most those pairs.
    slack = near_edges(D, D, w, bins) + near_edges(D, R, w, bins)
    diff = int(np.abs(DD - numpy_pair_counts(D, D, w, bins)).sum() + np.abs(DR - numpy_pair_counts(D, R, w, bins)).sum())
    ok = diff <= 2 * slack
    if diff:
        print(f"{diff // 2} pairs in a neighbouring bin, {slack} near an edge")
    print(f"check against NumPy: {'ok' if ok else 'MISMATCH'}")
    raise SystemExit(0 if ok else 1)


if __name__ == "__main__":
    main()
