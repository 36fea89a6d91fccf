#!/usr/bin/env python3
"""The fused kernel's own device time (gamut_main, torch.profiler over warm calls) for the
queries of tensor_queries.py: what a kernel change moves, without the list queries' host path
and device finalisation that the call's time also holds (bench/NOTES.md, session 13).

One line per (query, data, K): the mean device time of gamut_main per call, and the tile and
mainloop of the run. Run it once per variant to compare (another package on PYTHONPATH, or
GAMUT_EXPERIMENT_PERSISTENT=0), alternating the variants so that drift shows.

    python bench/kernel_times.py [--n 16384] [--ks 256,1024] [--data bf16,tf32]
        [--queries product,Q3,Q5,Q7,kNN,areas] [--calls 20] [--label NAME] [--q5-selected 1e-4,0.1]

--data f32 is IEEE f32 (the SIMT mainloop). --q5-selected: the fractions of pairs Q5 keeps (its
threshold is that quantile of a sample of the products), one line each.
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tensor_queries import AREAS, GROUPS, KNN, PRODUCT, Q3, Q5, Q7  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=16384)
    ap.add_argument("--ks", default="256,1024")
    ap.add_argument("--data", default="bf16,tf32")
    ap.add_argument("--queries", default="product,Q3,Q5,Q7")
    ap.add_argument("--calls", type=int, default=20)
    ap.add_argument("--label", default="")
    ap.add_argument("--q5-selected", default="1e-4")
    a = ap.parse_args()
    import torch
    from torch.profiler import ProfilerActivity, profile

    import gamut

    texts = {"product": PRODUCT, "Q3": Q3, "Q5": Q5, "Q7": Q7, "kNN": KNN, "areas": AREAS}
    g = torch.Generator(device="cuda").manual_seed(11)
    for k in [int(x) for x in a.ks.split(",")]:
        for data in a.data.split(","):
            dt, mode = {"bf16": (torch.bfloat16, "ieee"), "tf32": (torch.float32, "tf32"),
                        "f32": (torch.float32, "ieee")}[data]
            P = torch.rand(a.n, k, device="cuda", generator=g).to(dt)
            R = torch.rand(k, a.n, device="cuda", generator=g).to(dt)
            sample = (P[:256].float() @ R.float()).flatten()[: 1 << 20]
            mid = float(torch.median(sample))
            Pz = torch.randint(0, GROUPS, (a.n,), device="cuda", dtype=torch.int32)
            Rz = torch.randint(0, GROUPS, (a.n,), device="cuda", dtype=torch.int32)
            runs = [(n, None) for n in a.queries.split(",") if n != "Q5"]
            if "Q5" in a.queries.split(","):
                runs += [("Q5", float(f)) for f in a.q5_selected.split(",")]
            for name, selected in runs:
                q = gamut.compile(texts[name])
                args = dict(A=P, B=R) if name == "product" else dict(P=P, R=R)
                if name == "kNN":   # Q = P, X = R^T: the expanded distance, 10 nearest per row
                    X = R.t().contiguous()
                    args = dict(Q=P, X=X, qn=(P.float() ** 2).sum(1), xn=(X.float() ** 2).sum(1))
                if name == "areas":
                    args.update(Pzip=Pz, Rzip=Rz, thres=mid)
                if name == "Q5":
                    args["thres"] = float(torch.quantile(sample, 1 - selected))
                if name == "Q3":
                    args.update(Pzip=Pz, Rzip=Rz, thres=mid)
                call = lambda: q(**args, f32_math=mode)  # noqa: E731
                for _ in range(3):
                    call()
                _, st = q.run(args, f32_math=mode)
                torch.cuda.synchronize()
                with profile(activities=[ProfilerActivity.CUDA]) as prof:
                    for _ in range(a.calls):
                        call()
                    torch.cuda.synchronize()
                us = [e.device_time_total / e.count for e in prof.key_averages() if e.key == "gamut_main"]
                kernel = f"{us[0] / 1e3:7.3f} ms" if us else "   none  "
                shown = name if selected is None else f"Q5@{selected:g}"
                print(f"{a.label:6s} {shown:9s} {data:4s} K={k:<5d} gamut_main {kernel}  "
                      f"[{st.get('mainloop')}, {st.get('tile')}] rows appended {st.get('list_rows_appended')}", flush=True)


if __name__ == "__main__":
    main()
