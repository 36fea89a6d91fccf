#!/usr/bin/env python3
"""Cold compile of the generated tensor-core kernels (issue 12: at most 1 s each).

Each case runs in its own process with an empty kernel cache (GAMUT_CACHE_DIR), one call on
small torch tensors; the run's statistics give the compile time of the main kernel (NVRTC +
module load, the engine's `compile_ms`: the target), the cache outcome (must be "compiled") and
the mainloop that ran; "first call" is that call's wall time (every module it compiles: a top /
bottom list's selection kernels too, a rewritten program's stages). Cases run one after
another so that NVRTC has the host to itself. --ahead both runs each case twice, with the
kernels compiled ahead on helper threads (the default) and without (GAMUT_COMPILE_AHEAD=0), and
prints the first calls' ratio. Run on the device:

    PYTHONPATH=.devcarry/site python3 bench/tc_cold_compile.py [--ahead on|off|both]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tensor_queries import I8, KNN, KNN_NATURAL, PRODUCT, Q5, Q7  # noqa: E402

# (label, query, operand dtype, f32_math)
CASES = [
    ("product bf16", "PRODUCT", "bfloat16", "ieee"),
    ("product f16", "PRODUCT", "float16", "ieee"),
    ("product i8", "I8", "int8", "ieee"),
    ("product f32 tf32", "PRODUCT", "float32", "tf32"),
    ("product f32 tf32x3", "PRODUCT", "float32", "tf32x3"),
    ("Q5 select bf16", "Q5", "bfloat16", "ieee"),
    ("Q7 top 128 bf16", "Q7", "bfloat16", "ieee"),
    ("kNN expanded bf16", "KNN", "bfloat16", "ieee"),
    ("Q7 top 128 f32", "Q7", "float32", "ieee"),
    ("kNN written bf16", "KNN_NATURAL", "bfloat16", "ieee"),
    ("kNN written tf32", "KNN_NATURAL", "float32", "tf32"),
]

CHILD = r"""
import json, sys, torch, gamut
label, text, dtype, mode = sys.argv[1:5]
dev, n, k = torch.device("cuda"), 1024, 256
dt = getattr(torch, dtype)
def mat(r, c):
    return torch.randint(-3, 4, (r, c), device=dev).to(dt) if dt == torch.int8 else torch.randn(r, c, device=dev).to(dt)
q = gamut.compile(text)
names = set(q.inputs)
b = {}
if "A" in names: b.update(A=mat(n, k), B=mat(k, n))
if "P" in names: b.update(P=mat(n, k), R=mat(k, n))
if "thres" in text: b["thres"] = 1.0
if "Q" in names:
    b.update(Q=mat(n, k), X=mat(n, k))
if "qn" in names: b.update(qn=torch.rand(n, device=dev), xn=torch.rand(n, device=dev))
torch.cuda.synchronize()
import time
t0 = time.perf_counter()
out, st = q.run(b, f32_math=mode)
torch.cuda.synchronize()
first = (time.perf_counter() - t0) * 1e3
print(json.dumps({"compile_ms": st["compile_ms"], "cache": st["cache"], "mainloop": st["mainloop"],
                  "math": st["math"], "tile": st["tile"], "first_call_ms": first}))
"""


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", default="")
    ap.add_argument("--limit-ms", type=float, default=1000.0)
    ap.add_argument("--ahead", choices=["on", "off", "both"], default="on",
                    help="kernels compiled ahead on helper threads (GAMUT_COMPILE_AHEAD)")
    a = ap.parse_args()
    texts = {"PRODUCT": PRODUCT, "Q5": Q5, "Q7": Q7, "KNN": KNN, "KNN_NATURAL": KNN_NATURAL, "I8": I8}
    rows, worst = [], 0.0
    modes = {"on": ["1"], "off": ["0"], "both": ["0", "1"]}[a.ahead]
    for label, qname, dtype, mode in CASES:
        first = {}
        for ahead in modes:
            with tempfile.TemporaryDirectory() as cache:
                env = dict(os.environ, GAMUT_CACHE_DIR=cache, GAMUT_COMPILE_AHEAD=ahead)
                p = subprocess.run([sys.executable, "-c", CHILD, label, texts[qname], dtype, mode], env=env,
                                   capture_output=True, text=True, timeout=300)
            tag = f"{label} (ahead {'on' if ahead == '1' else 'off'})"
            if p.returncode != 0:
                print(f"{tag:34s} failed: {p.stderr.strip().splitlines()[-1] if p.stderr.strip() else p.returncode}")
                rows.append({"case": label, "ahead": ahead == "1", "error": p.stderr[-2000:]})
                continue
            r = json.loads(p.stdout.strip().splitlines()[-1])
            r["case"] = label
            r["ahead"] = ahead == "1"
            rows.append(r)
            first[ahead] = r["first_call_ms"]
            worst = max(worst, r["compile_ms"])
            cold = r["cache"] == "compiled"
            ok = "NOT COLD" if not cold else "ok" if r["compile_ms"] <= a.limit_ms else "OVER"
            print(f"{tag:34s} {r['compile_ms']:8.1f} ms  first call {r['first_call_ms']:7.1f} ms  cache {r['cache']:8s}  "
                  f"{r['math']} on {r['mainloop']}, tile {r['tile']}  [{ok}]", flush=True)
        if len(first) == 2:
            print(f"{label:34s} first call, ahead off / on: {first['0'] / first['1']:.2f}x", flush=True)
    print(f"worst cold compile {worst:.1f} ms, the kernels' NVRTC time summed (target <= {a.limit_ms:.0f} ms)")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(rows, f, indent=1)
    return 0 if all("error" not in r for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
