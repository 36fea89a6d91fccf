#!/usr/bin/env python3
"""Framework arrays whose rows are not whole 16-byte chunks (4097 bf16 columns, K = 1023): the
same query's time on them against a neighbour size whose rows are, per math and mainloop. A
ratio far above the size ratio is a cliff (the loaders' unaligned path). Device arrays are
torch tensors used in place; CUDA events, median of --repeat after warm-up.

    PYTHONPATH=.devcarry/site python3 bench/unaligned_inputs.py
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchlib import cuda_time  # noqa: E402
from tensor_queries import I8, KNN, PRODUCT  # noqa: E402



def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5)
    a = ap.parse_args()
    import torch
    import gamut

    dev = torch.device("cuda")
    print(f"device: {torch.cuda.get_device_name()}")
    prod, i8, knn = gamut.compile(PRODUCT), gamut.compile(I8), gamut.compile(KNN)

    def ms(fn):
        return cuda_time(fn, a.repeat, 2)[0]

    def product_case(label, q, dtype, mode, sizes):
        times = []
        for n in sizes:
            if dtype == torch.int8:
                A = torch.randint(-100, 100, (n, n), device=dev, dtype=dtype)
                B = torch.randint(-100, 100, (n, n), device=dev, dtype=dtype)
            else:
                A = torch.randn(n, n, device=dev).to(dtype)
                B = torch.randn(n, n, device=dev).to(dtype)
            times.append(ms(lambda: q(A=A, B=B, f32_math=mode)))
            _, st = q.run({"A": A, "B": B}, f32_math=mode)
            line = f"{st['math']} on {st['mainloop']}"
        r = times[1] / times[0]
        print(f"{label:24s} {sizes[0]}^3 {times[0]:8.3f} ms  {sizes[1]}^3 {times[1]:8.3f} ms  ratio {r:5.2f} "
              f"(sizes {(sizes[1] / sizes[0]) ** 3:.3f})  [{line}]", flush=True)

    product_case("product bf16", prod, torch.bfloat16, "ieee", (4096, 4097))
    product_case("product i8", i8, torch.int8, "ieee", (4096, 4097))
    product_case("product f32 ieee", prod, torch.float32, "ieee", (4096, 4097))
    product_case("product f32 tf32", prod, torch.float32, "tf32", (4096, 4097))
    N = 16384
    times = []
    for K in (1024, 1023):
        Q = torch.randn(N, K, device=dev).to(torch.bfloat16)
        X = torch.randn(N, K, device=dev).to(torch.bfloat16)
        qn = (Q.float() ** 2).sum(1)
        xn = (X.float() ** 2).sum(1)
        times.append(ms(lambda: knn(Q=Q, X=X, qn=qn, xn=xn)))
        _, st = knn.run({"Q": Q, "X": X, "qn": qn, "xn": xn})
    print(f"{'kNN expanded bf16':24s} K=1024 {times[0]:8.3f} ms  K=1023 {times[1]:8.3f} ms  ratio "
          f"{times[1] / times[0]:5.2f} (sizes 0.999)  [{st['math']} on {st['mainloop']}]", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
