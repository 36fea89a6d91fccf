#!/usr/bin/env python3
"""Where one warm call's time goes, per query of tensor_queries.py (issue 37: "every miss stated with
the profile that explains it"): torch.profiler over --calls warm calls on CUDA tensors, then per
call

  wall        CUDA-event time of a call (as tensor_queries.py times it)
  device      the sum of the GPU activities the call launched (kernels, memsets, copies)
  gap         wall - device: host work and launch gaps the GPU waited through
  kernels     each GPU activity's device time per call, largest first (gamut_main, the norm
              stages, list finalisation, sorts, copies)

and gamut's own product of the same operands (its `gamut_main` is the floor a fused query stands on).

    python bench/call_anatomy.py [--n 16384] [--k 256] [--data bf16|tf32]
        [--queries product,kNN,kNN-natural,cosine,Q5,Q7] [--calls 10]
"""
import argparse
import collections
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchlib import cuda_time  # noqa: E402
from tensor_queries import COSINE, KNN, KNN_NATURAL, PRODUCT, Q5, Q7  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=16384)
    ap.add_argument("--k", type=int, default=256)
    ap.add_argument("--data", default="bf16", choices=["bf16", "tf32"])
    ap.add_argument("--queries", default="product,kNN,kNN-natural,cosine,Q5,Q7")
    ap.add_argument("--calls", type=int, default=10)
    a = ap.parse_args()
    import torch
    from torch.profiler import ProfilerActivity, profile

    import gamut

    dev = torch.device("cuda")
    torch.manual_seed(0)
    dt, mode = (torch.bfloat16, "ieee") if a.data == "bf16" else (torch.float32, "tf32")
    N, K = a.n, a.k
    P = torch.rand(N, K, device=dev).to(dt)
    R = torch.rand(K, N, device=dev).to(dt)
    Q, X = P, R.t().contiguous()
    sample = (P[:256].float() @ R.float()).flatten()
    thres = float(torch.quantile(sample[:1 << 20], 1 - 1e-4))
    qn, xn = (Q.float() ** 2).sum(1), (X.float() ** 2).sum(1)
    calls = {
        "product": (PRODUCT, dict(A=P, B=R)),
        "kNN": (KNN, dict(Q=Q, X=X, qn=qn, xn=xn)),
        "kNN-natural": (KNN_NATURAL, dict(Q=Q, X=X)),
        "cosine": (COSINE, dict(Q=Q, X=X)),
        "Q5": (Q5, dict(P=P, R=R, thres=thres)),
        "Q7": (Q7, dict(P=P, R=R)),
    }
    print(f"device: {torch.cuda.get_device_name()}, torch {torch.__version__}; {a.data} {N}x{N} K={K}, "
          f"{a.calls} profiled calls")
    for name in a.queries.split(","):
        text, kw = calls[name]
        q = gamut.compile(text)

        def call():
            return q(**kw, f32_math=mode)
        wall = cuda_time(call, 9, 3)[0]
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            for _ in range(a.calls):
                call()
            torch.cuda.synchronize()
        per = collections.Counter()
        count = collections.Counter()
        for ev in prof.events():
            if ev.device_type == torch.autograd.DeviceType.CUDA:
                key = ev.name[:60]
                per[key] += ev.device_time_total if hasattr(ev, "device_time_total") else ev.cuda_time_total
                count[key] += 1
        device = sum(per.values()) / a.calls / 1000.0
        _, st = q.run(kw, f32_math=mode)
        print(f"{name:12s} wall {wall:8.3f} ms  device {device:8.3f} ms  gap {wall - device:7.3f} ms  "
              f"[{st.get('math', '?')}, tile {st.get('tile', '?')}]", flush=True)
        for key, us in per.most_common(8):
            print(f"{'':14s}{us / a.calls / 1000.0:8.3f} ms  x{count[key] / a.calls:4.1f}  {key}")


if __name__ == "__main__":
    main()
