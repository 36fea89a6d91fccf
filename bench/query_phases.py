#!/usr/bin/env python3
"""Where a fused query's time goes on the GPU (issue 12): one query through the Python package
on CUDA tensors, profiled with torch.profiler (CUPTI sees gamut's kernels and copies too), next
to the same query's CUDA-event time and gamut's own product of the same operands.

Prints the device activities of `--calls` warm calls by total device time (the main kernel, list
ordering, memsets, copies), and the wall-clock time per call on the host.

    python bench/query_phases.py [--query Q5|Q3|Q7|kNN|areas] [--n 16384] [--k 256] [--calls 10] [--timeline]
"""
import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tensor_queries import AREAS, KNN, Q3, Q5, Q7  # noqa: E402
from benchlib import cuda_time  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--query", default="Q5")
    ap.add_argument("--n", type=int, default=16384)
    ap.add_argument("--k", type=int, default=256)
    ap.add_argument("--calls", type=int, default=10)
    ap.add_argument("--timeline", action="store_true", help="also one call's host and device events in time order")
    a = ap.parse_args()
    import torch
    from torch.profiler import ProfilerActivity, profile

    import gamut

    dev, N, K = "cuda", a.n, a.k
    P = torch.rand(N, K, device=dev).to(torch.bfloat16)
    R = torch.rand(K, N, device=dev).to(torch.bfloat16)
    sample = (P[:256].float() @ R.float()).flatten()
    thres = float(torch.quantile(sample[:1 << 20], 1 - 1e-4))
    if a.query == "kNN":
        X = R.t().contiguous()
        qn, xn = (P.float() ** 2).sum(1), (X.float() ** 2).sum(1)
        q, args = gamut.compile(KNN), dict(Q=P, X=X, qn=qn, xn=xn)
    else:
        text = {"Q5": Q5, "Q7": Q7, "Q3": Q3, "areas": AREAS}[a.query]
        args = dict(P=P, R=R)
        if a.query in ("Q5", "Q3", "areas"):  # (Q3, areas: about half of the pairs pass the median)
            args["thres"] = thres if a.query == "Q5" else float(torch.median(sample[:1 << 20]))
        if a.query in ("Q3", "areas"):
            args["Pzip"] = torch.randint(0, 16, (N,), device=dev, dtype=torch.int32)
            args["Rzip"] = torch.randint(0, 16, (N,), device=dev, dtype=torch.int32)
        q = gamut.compile(text)
    prod = gamut.compile("where (i, j) { a = 0; reduce (k) { a += P[i, k] * R[k, j]; } C[i, j] = a; }")
    call = lambda: q(**args)  # noqa: E731
    t_query = cuda_time(call, 10, 2)[0]
    t_prod = cuda_time(lambda: prod(P=P, R=R if a.query != "kNN" else args["X"].t()), 10, 2)[0]
    out, st = q.run(args)
    print(f"{a.query} bf16 {N}x{N} K={K}: query {t_query:.3f} ms (CUDA events), product {t_prod:.3f} ms, "
          f"ratio {t_query / t_prod:.2f}; mainloop {st.get('mainloop')}, tile {st.get('tile')}")
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(a.calls):
        call()
    torch.cuda.synchronize()
    print(f"host wall per call: {(time.perf_counter() - t0) * 1e3 / a.calls:.3f} ms")
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(a.calls):
            call()
        torch.cuda.synchronize()
    print(prof.key_averages().table(sort_by="cuda_time_total", row_limit=14, max_name_column_width=60))
    if a.timeline:
        timeline(call, profile, ProfilerActivity, torch)


def timeline(call, profile, ProfilerActivity, torch):
    """One call's host and device events in time order (us from the call's start): which runtime
    calls the host makes, where it waits, and where the device is idle."""
    from torch.profiler import record_function

    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for _ in range(3):
            with record_function("gamut_call"):
                call()
            torch.cuda.synchronize()
    events = list(prof.events())
    calls = [e for e in events if e.name == "gamut_call"]
    if not calls:
        print("timeline: no gamut_call range recorded")
        return
    c = calls[-1]
    t0, t1 = c.time_range.start, c.time_range.end
    rows = []
    for e in events:
        s, d = e.time_range.start, e.time_range.end - e.time_range.start
        if e is c or s < t0 or s > t1 + 3000:
            continue
        where = "gpu" if "cuda" in str(getattr(e, "device_type", "")).lower() else "cpu"
        rows.append((s - t0, d, where, e.name[:70]))
    rows.sort()
    print(f"timeline of one call: {t1 - t0:.0f} us on the host")
    for s, d, where, name in rows[:800]:
        print(f"{s:9.1f} {d:9.1f}  {where}  {name}")


if __name__ == "__main__":
    main()
