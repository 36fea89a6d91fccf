#!/usr/bin/env python3
"""Pair counts by distance bin (a distance histogram: the two-point correlation function's DD) of
3-D f32 points, gamut's fused query against the PyTorch composition a user writes (issue 38).

  gamut   one query (examples/distance_histogram.mmlt): per pair the distance, its bin, and a
          shared-memory histogram per block merged into global memory; no M x N array
  torch   torch.cdist on row chunks of P against X (chunks of at most --chunk-bytes of
          distances), torch.histc of each chunk into the same bins, summed

On CUDA tensors (no copies either side), each timed with CUDA events: a warm-up, then the median
of --repeat runs; the ratio torch / gamut (> 1: gamut is faster) printed as a table. The two
histograms are compared (their bins may differ by pairs within rounding of a bin edge: torch.histc
bins by its own arithmetic) and the largest relative bin difference printed. Skips (exit 0)
without torch or a GPU.

    python bench/histogram.py [--sizes 16384,65536] [--bins 64] [--rmax 1.0] [--repeat 5] [--json out.json]
"""
import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", default="16384,65536", help="M = N values")
    ap.add_argument("--bins", type=int, default=64)
    ap.add_argument("--rmax", type=float, default=1.0, help="histogram range [0, rmax)")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--chunk-bytes", type=float, default=1 << 30, help="torch: bytes of distances per chunk")
    ap.add_argument("--json", help="write the rows here")
    args = ap.parse_args()

    try:
        import torch
    except ImportError:
        print("skipped: no torch")
        return
    if not torch.cuda.is_available():
        print("skipped: no CUDA device for torch")
        return
    import gamut
    from benchlib import cuda_time
    if not gamut.gpu_available():
        print("skipped: gamut sees no GPU")
        return

    with open(os.path.join(ROOT, "examples", "distance_histogram.mmlt")) as f:
        q = gamut.compile(f.read(), "distance_histogram")
    bins, w = args.bins, args.rmax / args.bins
    dev = torch.device("cuda")
    rows = []
    print(f"{torch.cuda.get_device_name()}: 3-D f32 points in the unit cube, {bins} bins over [0, {args.rmax})")
    print(f"{'M = N':>8} {'gamut ms':>10} {'torch ms':>10} {'torch/gamut':>12} {'Gpairs/s':>9} {'max bin diff':>13}  mainloop")
    for n in [int(s) for s in args.sizes.split(",") if s]:
        g = torch.Generator(device=dev).manual_seed(n)
        P = torch.rand((n, 3), device=dev, generator=g)
        X = torch.rand((n, 3), device=dev, generator=g)

        def run_gamut():
            return q(P=P, X=X, w=w, bins=bins, dims={"Hist": [bins]})["Hist"]

        chunk = max(1, min(n, int(args.chunk_bytes // (4 * n))))

        def run_torch():
            h = torch.zeros(bins, device=dev, dtype=torch.float32)
            for r in range(0, n, chunk):
                h += torch.histc(torch.cdist(P[r:r + chunk], X), bins=bins, min=0.0, max=args.rmax)
            return h

        tg, hg = cuda_time(run_gamut, args.repeat, args.warmup)
        tt, ht = cuda_time(run_torch, args.repeat, args.warmup)
        _, stats = q.run({"P": P, "X": X, "w": w, "bins": bins}, dims={"Hist": [bins]})
        hg64, ht64 = hg.double(), ht.double()
        diff = float(((hg64 - ht64).abs() / ht64.clamp(min=1)).max())
        row = {"n": n, "bins": bins, "rmax": args.rmax, "gamut_ms": tg, "torch_ms": tt, "ratio": tt / tg,
               "gpairs_per_s": n * n / (tg * 1e6), "max_rel_bin_diff": diff, "mainloop": stats.get("mainloop"),
               "tile": stats.get("tile"), "device": torch.cuda.get_device_name()}
        rows.append(row)
        print(f"{n:>8} {tg:>10.3f} {tt:>10.3f} {tt / tg:>12.2f} {row['gpairs_per_s']:>9.1f} {diff:>13.2e}  "
              f"{row['mainloop']} {row['tile']}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
