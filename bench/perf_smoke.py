#!/usr/bin/env python3
"""A regression guard for the device: the reference queries of `gamut tune` (and kNN natural, the
README's query) at one size, per call (CUDA events, the median of --calls after a warm-up, the
heuristics' kernels), against the floors measured on this kind of GPU (bench/perf_floors.json).
A query more than --tolerance slower than its floor fails the run (exit 1) and is named. Why: the
integer max-plus step ran 17x slower for five sessions (eae940c .. 5a76dbb) and no check noticed.

usage: python3 bench/perf_smoke.py [--size 16384x256] [--calls 15] [--tolerance 1.25] [--json OUT]
       python3 bench/perf_smoke.py --record   # print this GPU's figures as a floors entry

Floors are per GPU name (a key of perf_floors.json found in torch.cuda.get_device_name()); on a
GPU without floors the figures are printed and nothing fails. Needs torch with CUDA.
"""
import argparse
import json
import os
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
FLOORS = os.path.join(HERE, "perf_floors.json")


def floors_for(device_name, table):
    """The floors entry whose key the device's name contains (the longest such key), or None."""
    keys = [k for k in table if k in device_name]
    return table[max(keys, key=len)] if keys else None


def verdicts(measured, floors, tolerance):
    """[(name, ms, floor or None, ok)] for every measured query: ok when ms <= floor * tolerance
    (a query without a floor is ok). `measured` and `floors` map names to milliseconds."""
    out = []
    for name, ms in measured.items():
        floor = floors.get(name) if floors else None
        out.append((name, ms, floor, floor is None or ms <= floor * tolerance))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size", default="16384x256", help="M = N x K (batched queries: M halved, batch 4)")
    ap.add_argument("--calls", type=int, default=15)
    ap.add_argument("--tolerance", type=float, default=1.25, help="fail above floor x this")
    ap.add_argument("--json", default=None, help="write the figures and verdicts here")
    ap.add_argument("--record", action="store_true", help="print the figures as a perf_floors.json entry")
    a = ap.parse_args()
    import torch

    import gamut
    from tensor_queries import KNN_NATURAL
    from tune_ab import REFS, data, timed

    m, k = (int(x) for x in a.size.split("x"))
    name = torch.cuda.get_device_name()
    with open(FLOORS) as f:
        table = json.load(f)
    entry = floors_for(name, table)
    floors = (entry or {}).get(a.size)
    print(f"device {name}, gamut {gamut.__version__}, size {a.size}, floors: "
          f"{'none for this GPU' if floors is None else 'perf_floors.json'}", flush=True)
    refs = list(REFS) + [("knn-natural-bf16", KNN_NATURAL, "bf16", "ieee")]
    measured = {}
    for ref, text, dtype, f32 in refs:
        q = gamut.compile(text, ref)
        if ref.startswith("knn"):
            g = torch.Generator(device="cuda").manual_seed(7)
            kw = {"Q": torch.rand(m, k, generator=g, device="cuda").to(torch.bfloat16),
                  "X": torch.rand(m, k, generator=g, device="cuda").to(torch.bfloat16)}
        else:
            kw = data(ref, text, dtype, m, k)
        ms, stats = timed(q, kw, {"f32_math": f32, "tuned": False}, a.calls)
        measured[ref] = ms
        floor = floors.get(ref) if floors else None
        print(f"  {ref:22s} {ms:8.3f} ms" + (f"  floor {floor:8.3f}  x{ms / floor:5.2f}" if floor else "")
              + f"  [{stats.get('tile')}]", flush=True)
        del kw
        torch.cuda.empty_cache()
    result = verdicts(measured, floors, a.tolerance)
    slow = [(n, ms, fl) for n, ms, fl, ok in result if not ok]
    for n, ms, fl in slow:
        print(f"SLOWER {n}: {ms:.3f} ms against a floor of {fl:.3f} ms (x{ms / fl:.2f} > x{a.tolerance})")
    if a.record:
        print(json.dumps({a.size: {n: round(ms, 3) for n, ms in measured.items()}}, indent=2))
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"device": name, "size": a.size, "tolerance": a.tolerance,
                       "rows": [{"query": n, "ms": ms, "floor": fl, "ok": ok} for n, ms, fl, ok in result]}, f, indent=1)
    print(f"{len(slow)} of {len(result)} slower than their floors x{a.tolerance}")
    return 1 if slow else 0


if __name__ == "__main__":
    sys.path.insert(0, HERE)
    sys.exit(main())
