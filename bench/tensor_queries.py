#!/usr/bin/env python3
"""gamut's tensor-core kernels on the data users have (issue 12), against PyTorch in the same run.

Through the Python package on CUDA tensors (no copies either side), each timed with CUDA events
(warm-up, then the median of --repeat runs; gamut and torch take turns --rounds times and each
side's median round is reported, so that one slow round on a shared machine does not make the
row), the ratio torch / gamut (> 1: gamut is faster):

  product     C = A B in bf16 / f16 (vs torch.matmul), f32 with f32_math tf32 / tf32x3 (vs
              torch.matmul with TF32 allowed / in IEEE f32), i8 (vs torch._int_mm)
  Q3, Q5, Q7, distinct areas, kNN on bf16 (and f32 with f32_math tf32): the fused query against
              the composition a user writes (product, then index_add / nonzero / topk / unique),
              which materialises the M x N scores; and gamut's own product of the same operands
              (the issue's bound: a query at most 1.3x it), printed as "ours/prod"
  kNN natural kNN as users write it, sum of (Q - X)^2 (gamut: the expand-squares program), against
              torch's norms + addmm + topk in the call
  cosine      cosine similarity top 10 per i (gamut: hoist-one-sided), against torch's normalize +
              matmul + topk
  readme      the README's kNN as written at the issue's shape (--readme-shape, default 4096 queries x
              1,048,576 points x 128, bf16 and tf32), beside gamut's own product of that shape (a
              4096 x 1,048,576 f32 output: 16 GB) and torch's norms + addmm + topk

Also `explain`'s math and mainloop line, so a row that ran on SIMT says so; and, on a line
below each row, device memory (the issue's "peak device memory = inputs + outputs + O(tiles)"),
from one more, untimed call q.run(...) after the timing:

  in        bytes of the tensors passed (index vectors included; scalars not)
  out       bytes of the arrays returned (a list output: its columns)
  own       stats["device_peak_bytes"]: the most device memory gamut itself held at once in the
            call (list buffers, sort scratch, uploads; what it still held from earlier calls
            included). Not in it: inputs read in place and dense outputs, which come from
            PyTorch's caching allocator
  torch     torch.cuda.max_memory_allocated() during the call above what was allocated before
            it: what PyTorch allocated for gamut (the outputs, device copies of inputs)
  peak/(in+out) = (in + torch + own) / (in + out): 1.00 is inputs + outputs and nothing else;
            an upper bound of the call's peak (gamut's and PyTorch's peaks need not coincide)

The timing and the columns above are unchanged; JSON rows carry in_bytes, out_bytes,
gamut_device_peak_bytes, torch_alloc_peak_bytes, peak_over_in_out.

    python bench/tensor_queries.py [--n 16384] [--ks 256,1024] [--product-sizes 4096,8192] [--json out.json]
        [--repeat 5] [--rounds 3]
        [--queries product,Q3,Q5,Q7,areas,kNN,kNN-natural,cosine,readme] [--data bf16,tf32]
        [--readme-shape 4096,1048576,128]
"""
import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchlib import cuda_time  # noqa: E402

PRODUCT = "where (i, j) { a = 0; reduce (k) { a += A[i, k] * B[k, j]; } C[i, j] = a; }"
I8 = "where (i, j) { a: i32 = 0; reduce (k) { a += i32(A[i, k]) * i32(B[k, j]); } C[i, j] = a; }"
Q5 = "where (i, j) { a = 0; reduce (k) { a += P[i, k] * R[k, j]; } if (a > thres) emit Pairs(i, j, a); }"
Q7 = "where (i, j) { a = 0; reduce (k) { a += P[i, k] * R[k, j]; } emit Top(i, j, a) top 128 by a; }"
Q3 = ("where (i, j) { a = 0; reduce (k) { a += P[i, k] * R[k, j]; } Cnt[Pzip[i], Rzip[j]] += a > thres; }")
AREAS = ("where (i, j) { a = 0; reduce (k) { a += P[i, k] * R[k, j]; }"
         " if (a > thres) emit Areas(Pzip[i] as pz, Rzip[j] as rz) distinct; }")
GROUPS = 16   # Pzip, Rzip in [0, GROUPS), as bench/relational.py
KNN = ("where (i, j) { dot = 0; reduce (k) { dot += Q[i, k] * X[j, k]; } let dist = qn[i] + xn[j] - 2 * dot;"
       " emit Nearest(i, j, dist) bottom 10 by dist per i; }")
# kNN as users write it (README, examples/knn.mmlt): gamut runs it as expand-squares (the norms in
# two small stages, the product on the tensor cores); torch is timed on the same composition as
# the expanded row, which a user of torch writes by hand.
KNN_NATURAL = ("where (i, j) { dist = 0; reduce (k) { let t = Q[i, k] - X[j, k]; dist += t * t; }"
               " emit Nearest(i, j, dist) bottom 10 by dist per i; }")
# Cosine similarity top 10 per i (hoist-one-sided: nq, nx once per row and column); torch:
# normalize + matmul + topk.
COSINE = ("where (i, j) { dot = 0; nq = 0; nx = 0;"
          " reduce (k) { dot += Q[i, k] * X[j, k]; nq += Q[i, k] * Q[i, k]; nx += X[j, k] * X[j, k]; }"
          " emit Similar(i, j, dot / sqrt(nq * nx) as cos) top 10 by dot / sqrt(nq * nx) per i; }")


def timed(fn, repeat):
    return cuda_time(fn, repeat, 2)[0]


def paired(gamut_fn, torch_fn, repeat, rounds):
    """(gamut ms, torch ms): the two take turns `rounds` times; the median round of each."""
    g, t = [], []
    for _ in range(max(1, rounds)):
        g.append(timed(gamut_fn, repeat))
        t.append(timed(torch_fn, repeat))
    return sorted(g)[len(g) // 2], sorted(t)[len(t) // 2]


def tensor_bytes(x):
    """Bytes of a tensor, of the tensors in a dict (a list output's columns, a result), else 0."""
    if isinstance(x, dict):
        return sum(tensor_bytes(v) for v in x.values())
    if hasattr(x, "element_size") and hasattr(x, "numel"):
        return x.numel() * x.element_size()
    return 0


def memory(q, bindings, **options):
    """Device memory of one untimed call: the bytes in, out, gamut's own peak and PyTorch's."""
    import torch

    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    before = torch.cuda.memory_allocated()
    out, st = q.run(bindings, **options)
    torch.cuda.synchronize()
    torch_peak = torch.cuda.max_memory_allocated() - before
    in_b = sum(tensor_bytes(v) for v in bindings.values())
    out_b = tensor_bytes(out)
    own = int(st["device_peak_bytes"])
    del out
    return {"in_bytes": in_b, "out_bytes": out_b, "gamut_device_peak_bytes": own, "torch_alloc_peak_bytes": torch_peak,
            "peak_over_in_out": (in_b + torch_peak + own) / max(1, in_b + out_b),
            "stats_math": st["math"], "stats_mainloop": st["mainloop"]}


def mb(b):
    return f"{b / 1e6:.1f} MB"


def math_line(q, **kw):
    for line in q.explain(**kw).splitlines():
        if line.startswith("math:"):
            return line[len("math: "):]
    return "?"


def torch_knn_with_norms(Q, X, dt):
    """torch's kNN with the norms inside the call (as gamut's stages compute them): the (M, N)
    distances materialised by addmm, then topk."""
    import torch
    q2 = (Q.float() * Q.float()).sum(1)
    x2 = (X.float() * X.float()).sum(1)
    d = torch.addmm((q2[:, None] + x2[None, :]).to(dt), Q, X.t(), beta=1.0, alpha=-2.0)
    return torch.topk(d, 10, dim=1, largest=False)


def readme_rows(a, knn_natural, prod, report):
    """The README's kNN as written (issue 37: within 2x of our own product of the same shape)."""
    import torch

    M, N, K = (int(x) for x in a.readme_shape.split(","))
    dev = torch.device("cuda")
    for dt, name, mode in [(torch.bfloat16, "bf16", "ieee"), (torch.float32, "f32 tf32", "tf32")]:
        if name.split()[-1] not in a.data.split(","):
            continue
        torch.backends.cuda.matmul.allow_tf32 = mode == "tf32"
        Q = torch.randn(M, K, device=dev).to(dt)
        X = torch.randn(N, K, device=dev).to(dt)
        Xt = X.t().contiguous()   # (K, N): the product's B, as the product query reads it

        p_ms = timed(lambda: prod(A=Q, B=Xt, f32_math=mode), a.repeat)
        torch.cuda.empty_cache()
        g, t = paired(lambda: knn_natural(Q=Q, X=X, f32_math=mode), lambda: torch_knn_with_norms(Q, X, dt), a.repeat,
                      a.rounds)
        report(f"README kNN {name} {M}x{N} K={K}", g, t, math_line(knn_natural, Q=Q, X=X, f32_math=mode),
               ours_over_product=g / p_ms, product_ms=p_ms)
        del Q, X, Xt
        torch.cuda.empty_cache()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=16384)
    ap.add_argument("--ks", default="256,1024")
    ap.add_argument("--product-sizes", default="4096,8192")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--rounds", type=int, default=3, help="gamut and torch take turns this many times")
    ap.add_argument("--json", default="")
    ap.add_argument("--queries", default="product,Q3,Q5,Q7,areas,kNN,kNN-natural,cosine",
                    help="which rows of the query table")
    ap.add_argument("--data", "--dtypes", default="bf16,tf32", help="the query table's data: bf16 and / or f32 under tf32")
    ap.add_argument("--readme-shape", default="4096,1048576,128", help="M,N,K of the readme row")
    a = ap.parse_args()
    qs = set(a.queries.split(","))
    import torch
    import gamut

    torch.manual_seed(0)
    dev = torch.device("cuda")
    rows = []

    def report(case, gamut_ms, torch_ms, math, **extra):
        r = {"case": case, "gamut_ms": gamut_ms, "torch_ms": torch_ms, "ratio": torch_ms / gamut_ms, "math": math}
        r.update(extra)
        rows.append(r)
        prod_part = f"  ours/prod {extra['ours_over_product']:5.2f}" if "ours_over_product" in extra else ""
        print(f"{case:34s} gamut {gamut_ms:9.3f} ms  torch {torch_ms:9.3f} ms  torch/gamut {r['ratio']:6.2f}{prod_part}  [{math}]",
              flush=True)
        if "in_bytes" in extra:
            print(f"{'':34s} memory: in {mb(r['in_bytes'])}, out {mb(r['out_bytes'])}, gamut own "
                  f"{mb(r['gamut_device_peak_bytes'])}, torch {mb(r['torch_alloc_peak_bytes'])};"
                  f" peak/(in+out) {r['peak_over_in_out']:.3f}", flush=True)

    print(f"device: {torch.cuda.get_device_name()}, torch {torch.__version__}")
    prod = gamut.compile(PRODUCT)
    for n in [int(x) for x in a.product_sizes.split(",") if x]:
        for dt, name in [(torch.bfloat16, "bf16"), (torch.float16, "f16")]:
            A = torch.randn(n, n, device=dev, dtype=dt)
            B = torch.randn(n, n, device=dev, dtype=dt)
            g, t = paired(lambda: prod(A=A, B=B), lambda: torch.matmul(A, B), a.repeat, a.rounds)
            report(f"product {name} {n}^3", g, t, math_line(prod, A=A, B=B), **memory(prod, {"A": A, "B": B}))
        A = torch.randn(n, n, device=dev)
        B = torch.randn(n, n, device=dev)
        for mode, allow in [("tf32", True), ("tf32x3", False), ("ieee", False)]:
            torch.backends.cuda.matmul.allow_tf32 = allow
            g, t = paired(lambda: prod(A=A, B=B, f32_math=mode), lambda: torch.matmul(A, B), a.repeat, a.rounds)
            report(f"product f32 {mode} {n}^3 (torch {'tf32' if allow else 'ieee'})", g, t,
                   math_line(prod, A=A, B=B, f32_math=mode), **memory(prod, {"A": A, "B": B}, f32_math=mode))
        torch.backends.cuda.matmul.allow_tf32 = False
        if n % 8:
            print(f"product i8 {n}^3: skipped (torch._int_mm takes only multiples of 8)", flush=True)
            continue
        A8 = torch.randint(-100, 100, (n, n), device=dev, dtype=torch.int8)
        B8 = torch.randint(-100, 100, (n, n), device=dev, dtype=torch.int8)
        i8 = gamut.compile(I8)
        g, t = paired(lambda: i8(A=A8, B=B8), lambda: torch._int_mm(A8, B8), a.repeat, a.rounds)
        report(f"product i8 {n}^3 (torch _int_mm)", g, t, math_line(i8, A=A8, B=B8), **memory(i8, {"A": A8, "B": B8}))

    q5, q7, knn = gamut.compile(Q5), gamut.compile(Q7), gamut.compile(KNN)
    knn_natural, cosine = gamut.compile(KNN_NATURAL), gamut.compile(COSINE)
    q3, areas = gamut.compile(Q3), gamut.compile(AREAS)
    N = a.n
    for K in [int(x) for x in a.ks.split(",") if x]:
        for dt, name, mode in [(torch.bfloat16, "bf16", "ieee"), (torch.float32, "f32 tf32", "tf32")]:
            if name.split()[-1] not in a.data.split(","):
                continue
            torch.backends.cuda.matmul.allow_tf32 = mode == "tf32"
            P = torch.rand(N, K, device=dev).to(dt)
            R = torch.rand(K, N, device=dev).to(dt)
            # The threshold of Q5: about 1e-4 of the pairs pass (a sample's quantile).
            sample = (P[:256].float() @ R.float()).flatten()
            thres = float(torch.quantile(sample[:1 << 20], 1 - 1e-4))

            def torch_q5():
                S = P @ R
                ij = torch.nonzero(S > thres)
                return ij, S[ij[:, 0], ij[:, 1]]

            def torch_q7():
                S = P @ R
                return torch.topk(S.flatten(), 128)

            G = GROUPS
            Pz = torch.randint(0, G, (N,), device=dev, dtype=torch.int32)
            Rz = torch.randint(0, G, (N,), device=dev, dtype=torch.int32)
            t3 = float(torch.median(sample[:1 << 20]))   # Q3 / areas: about half of the pairs pass

            def torch_q3():
                S = P @ R
                rows = torch.zeros(G, N, device=dev).index_add_(0, Pz, (S > t3).float())
                return torch.zeros(G, G, device=dev).index_add_(1, Rz, rows)

            def torch_areas():
                ij = torch.nonzero(P @ R > t3)
                return torch.unique(Pz[ij[:, 0]] * G + Rz[ij[:, 1]])

            # gamut's own product of the same operands (a dense N x N f32 output).
            p_ms = None
            if "product" in qs:
                p_ms, pt_ms = paired(lambda: prod(A=P, B=R, f32_math=mode), lambda: P @ R, a.repeat, a.rounds)
                report(f"product {name} {N}x{N} K={K}", p_ms, pt_ms, math_line(prod, A=P, B=R, f32_math=mode),
                       **memory(prod, {"A": P, "B": R}, f32_math=mode))

            def over(g):   # gamut's time over its own product's
                return {"ours_over_product": g / p_ms} if p_ms else {}

            if "Q3" in qs:
                g, t = paired(lambda: q3(P=P, R=R, Pzip=Pz, Rzip=Rz, thres=t3, f32_math=mode), torch_q3, a.repeat, a.rounds)
                report(f"Q3 {name} {N}x{N} K={K}", g, t, math_line(q3, P=P, R=R, Pzip=Pz, Rzip=Rz, thres=t3, f32_math=mode),
                       **over(g), **memory(q3, {"P": P, "R": R, "Pzip": Pz, "Rzip": Rz, "thres": t3}, f32_math=mode))
            if "Q5" in qs:
                g, t = paired(lambda: q5(P=P, R=R, thres=thres, f32_math=mode), torch_q5, a.repeat, a.rounds)
                report(f"Q5 {name} {N}x{N} K={K}", g, t, math_line(q5, P=P, R=R, thres=thres, f32_math=mode),
                       **over(g), **memory(q5, {"P": P, "R": R, "thres": thres}, f32_math=mode))
            if "Q7" in qs:
                g, t = paired(lambda: q7(P=P, R=R, f32_math=mode), torch_q7, a.repeat, a.rounds)
                report(f"Q7 {name} {N}x{N} K={K}", g, t, math_line(q7, P=P, R=R, f32_math=mode), **over(g),
                       **memory(q7, {"P": P, "R": R}, f32_math=mode))
            if "areas" in qs:
                g, t = paired(lambda: areas(P=P, R=R, Pzip=Pz, Rzip=Rz, thres=t3, f32_math=mode), torch_areas, a.repeat, a.rounds)
                report(f"areas {name} {N}x{N} K={K}", g, t,
                       math_line(areas, P=P, R=R, Pzip=Pz, Rzip=Rz, thres=t3, f32_math=mode), **over(g),
                       **memory(areas, {"P": P, "R": R, "Pzip": Pz, "Rzip": Rz, "thres": t3}, f32_math=mode))
            Q = torch.randn(N, K, device=dev).to(dt)
            X = torch.randn(N, K, device=dev).to(dt)
            qn = (Q.float() * Q.float()).sum(1)
            xn = (X.float() * X.float()).sum(1)

            def torch_knn():
                d = torch.addmm((qn[:, None] + xn[None, :]).to(dt), Q, X.t(), beta=1.0, alpha=-2.0)
                return torch.topk(d, 10, dim=1, largest=False)

            if "kNN" in qs:
                g, t = paired(lambda: knn(Q=Q, X=X, qn=qn, xn=xn, f32_math=mode), torch_knn, a.repeat, a.rounds)
                report(f"kNN expanded {name} {N}x{N} K={K}", g, t, math_line(knn, Q=Q, X=X, qn=qn, xn=xn, f32_math=mode),
                       **over(g), **memory(knn, {"Q": Q, "X": X, "qn": qn, "xn": xn}, f32_math=mode))
            if "kNN-natural" in qs:
                g, t = paired(lambda: knn_natural(Q=Q, X=X, f32_math=mode), lambda: torch_knn_with_norms(Q, X, dt),
                              a.repeat, a.rounds)
                report(f"kNN natural {name} {N}x{N} K={K}", g, t, math_line(knn_natural, Q=Q, X=X, f32_math=mode),
                       **over(g), **memory(knn_natural, {"Q": Q, "X": X}, f32_math=mode))

            def torch_cosine():
                qn1 = torch.nn.functional.normalize(Q.float(), dim=1).to(dt)
                xn1 = torch.nn.functional.normalize(X.float(), dim=1).to(dt)
                return torch.topk(qn1 @ xn1.t(), 10, dim=1)

            if "cosine" in qs:
                g, t = paired(lambda: cosine(Q=Q, X=X, f32_math=mode), torch_cosine, a.repeat, a.rounds)
                report(f"cosine top10 {name} {N}x{N} K={K}", g, t, math_line(cosine, Q=Q, X=X, f32_math=mode),
                       **over(g), **memory(cosine, {"Q": Q, "X": X}, f32_math=mode))
            del P, R, Q, X
            torch.cuda.empty_cache()
    if "readme" in qs:
        readme_rows(a, gamut.compile(KNN_NATURAL), prod, report)
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"device": torch.cuda.get_device_name(), "rows": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
