"""Top-k similarity search over bf16 embeddings: for every query vector the 5 database vectors with
the largest inner product, as one fused kernel (bf16 products summed in f32, a per-row top-5),
checked against torch (float32 product, topk).

    python examples/python/topk_bf16.py [--queries N] [--database N] [--dim D]

Needs torch for bf16 tensors (NumPy has no bf16); with a GPU they live there and gamut reads
them in place. Without torch it says so and exits.
"""
import argparse

import gamut

TOPK = """
where (i, j) {
  s = 0;
  reduce (k) { s += Q[i, k] * E[j, k]; }
  emit Best(i, j, s as score) top 5 by s per i;
}
"""


def main():
    gpu = gamut.gpu_available()
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--queries", type=int, default=2048 if gpu else 100)
    ap.add_argument("--database", type=int, default=100_000 if gpu else 3000)
    ap.add_argument("--dim", type=int, default=128 if gpu else 32)
    args = ap.parse_args()
    try:
        import torch
    except ImportError:
        print("skipped: this example needs torch for bf16 tensors (NumPy has no bf16)")
        return

    device = "cuda" if gpu and torch.cuda.is_available() else "cpu"
    g = torch.Generator().manual_seed(3)
    E = torch.nn.functional.normalize(torch.randn(args.database, args.dim, generator=g), dim=1)
    Q = torch.nn.functional.normalize(torch.randn(args.queries, args.dim, generator=g), dim=1)
    E, Q = E.to(device, torch.bfloat16), Q.to(device, torch.bfloat16)

    search = gamut.compile(TOPK, "topk")
    out, stats = search.run({"Q": Q, "E": E})
    best = out["Best"]                              # i, j, score: 5 rows per query, best first
    print(f"{args.queries} queries x {args.database} bf16 embeddings (d={args.dim}) on {device}: "
          f"{len(best['j'])} results; query 0 -> {best['j'][:5].tolist()}; engine: {stats['backend']}")

    want = (Q.float() @ E.float().T).topk(5, dim=1).values
    got = best["score"].reshape(args.queries, 5)
    ok = bool(torch.allclose(got, want, rtol=1e-2, atol=1e-2))
    print("check against torch:", "ok" if ok else "MISMATCH")
    raise SystemExit(0 if ok else 1)


if __name__ == "__main__":
    main()
