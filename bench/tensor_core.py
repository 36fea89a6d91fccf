#!/usr/bin/env python3
"""Tensor-core benchmark (issue 12): gamut's tensor-core mainloop against cuBLAS through PyTorch.

Section `mainloop` (phase 1): the mma.sync mainloop alone, through its test kernel (products
written through the accumulator map to a dense M x N output), at M = N = K = 4096, 8192, 16384
and 4097, for bf16, f16, i8 (vs torch._int_mm), tf32 (vs torch.matmul with TF32 allowed) and
tf32x3 (vs cuBLAS SGEMM, TF32 off), operands A[i, k] with B[k, j] ("NN") and B[j, k] ("NT"):

- ours: `tests/gamut_gpu_tests --gtest_filter=TensorMainloopBench.*` with GAMUT_TC_BENCH=1
  (median CUDA-event time of 10 launches after a warm-up). The tile of each configuration is chosen
  before the reported timing: by a pilot run over every tile whose times are then discarded (or
  given with --tiles, e.g. a previous run's JSON), and that tile alone is timed again in a
  separate run (GAMUT_TC_BENCH_ONLY): the figure is one measurement of a fixed tile, not the
  minimum over tiles of one noisy run;
- torch: the same product in the same run, CUDA events, warm-up, median;
- ratio = torch ms / ours ms (> 1: gamut faster). The issue's targets: >= 0.9 for bf16, f16,
  i8 and tf32 at 8192 and above; tf32x3 >= 2 against SGEMM.

Prints a table (device named) and writes JSON; exit 1 when a gtest run failed (a sampled output
was wrong) or a chosen configuration gave no timing. usage:
  bench/tensor_core.py [--tests build/tests/gamut_gpu_tests] [--json OUT.json] [--reps 10] [--tiles CHOICE.json]
"""
import argparse
import json
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchlib import cuda_time  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
LINE = re.compile(r"\[ tc-bench \] (\S+) (NN|NT) (\S+) n=(\d+) ms=([\d.]+) tflops=([\d.]+)")

try:
    import torch
    HAVE_TORCH = torch.cuda.is_available()
except Exception:
    torch = None
    HAVE_TORCH = False


def run_mainloop_bench(tests, maths="", only=""):
    """Runs the gtest benchmark (ONLY: one configuration, "MATH ORIENT TILE N"); returns
    {(math, orient, n): [(tile, ms, tflops), ...]}, the exit status and the log's end."""
    env = dict(os.environ, GAMUT_TC_BENCH="1")
    if maths:
        env["GAMUT_TC_BENCH_MATHS"] = maths
    if only:
        env["GAMUT_TC_BENCH_ONLY"] = only
    p = subprocess.run([tests, "--gtest_filter=TensorMainloopBench.*"], capture_output=True, text=True, env=env)
    rows = {}
    for line in p.stdout.splitlines():
        m = LINE.search(line)
        if m:
            key = (m.group(1), m.group(2), int(m.group(4)))
            rows.setdefault(key, []).append((m.group(3), float(m.group(5)), float(m.group(6))))
    return rows, p.returncode, p.stdout[-4000:]


def torch_product_ms(math, orient, n, reps):
    """cuBLAS time of the same product: A (n, n) times B (n, n) (NN) or B^T of a (n, n) (NT)."""
    dev = "cuda"
    torch.backends.cuda.matmul.allow_tf32 = math == "tf32"
    gen = torch.Generator(device=dev).manual_seed(1)
    if math == "i8":
        a = torch.randint(-64, 64, (n, n), dtype=torch.int8, device=dev, generator=gen)
        b = torch.randint(-64, 64, (n, n), dtype=torch.int8, device=dev, generator=gen)
        # torch._int_mm wants b column-major on some versions: NT is that layout; NN falls back to
        # timing it on a column-major copy when the row-major call is refused.
        if orient == "NT":
            fn = lambda: torch._int_mm(a, b.t())  # noqa: E731
        else:
            try:
                torch._int_mm(a, b)
                fn = lambda: torch._int_mm(a, b)  # noqa: E731
            except RuntimeError:
                bc = b.t().contiguous().t()
                fn = lambda: torch._int_mm(a, bc)  # noqa: E731
    else:
        dt = {"bf16": torch.bfloat16, "f16": torch.float16}.get(math, torch.float32)
        a = torch.empty((n, n), dtype=dt, device=dev).uniform_(-1, 1, generator=gen)
        b = torch.empty((n, n), dtype=dt, device=dev).uniform_(-1, 1, generator=gen)
        fn = (lambda: torch.matmul(a, b)) if orient == "NN" else (lambda: torch.matmul(a, b.t()))
    ms, _ = cuda_time(fn, reps, 3)
    torch.backends.cuda.matmul.allow_tf32 = False
    return ms


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tests", default=os.path.join(HERE, "..", "build", "tests", "gamut_gpu_tests"))
    ap.add_argument("--json", default="")
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--maths", default="", help="comma list (bf16,f16,i8,tf32,tf32x3); default all")
    ap.add_argument("--tiles", default="", help="the tile of each configuration, chosen beforehand: a JSON file "
                    "with a list of {math, orient, n, tile} (this script's --json output will do); default: a pilot run")
    args = ap.parse_args()

    device = torch.cuda.get_device_name() if HAVE_TORCH else "(no CUDA device for PyTorch)"
    print(f"device: {device}")
    rc = 0
    if args.tiles:
        with open(args.tiles) as f:
            given = json.load(f)
        given = given.get("mainloop", given) if isinstance(given, dict) else given
        choice = {(g["math"], g["orient"], int(g["n"])): g["tile"] for g in given
                  if not args.maths or g["math"] in args.maths.split(",")}
        pilot = {}
        print(f"tiles: as given in {args.tiles} ({len(choice)} configurations)")
    else:
        # The pilot: every tile once; only the choice survives, its times are not reported.
        pilot, rc, log = run_mainloop_bench(args.tests, args.maths)
        if not pilot:
            print(f"no benchmark lines from {args.tests} (rc={rc}): no GPU here?\n{log}")
            return 1
        choice = {key: min(tiles, key=lambda t: t[1])[0] for key, tiles in pilot.items()}
        print(f"tiles: chosen by a pilot run over every tile ({len(choice)} configurations); each is timed again alone")
    results = []
    missing = 0
    print("| math | B | n | tile (chosen before timing) | ours ms | ours TFLOP/s | torch ms | ratio torch/ours | pilot (ms) |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for (math, orient, n), tile in sorted(choice.items()):
        rows, r, log = run_mainloop_bench(args.tests, only=f"{math} {orient} {tile} {n}")
        got = rows.get((math, orient, n), [])
        if r != 0:
            rc = r
            print(f"the timed run of {math} {orient} {tile} n={n} failed (rc={r})\n{log}")
        if not got:
            missing += 1
            print(f"no timing for {math} {orient} {tile} n={n} (rc={r})")
            continue
        _, ms, tflops = got[0]
        try:
            tms = torch_product_ms(math, orient, n, args.reps) if HAVE_TORCH else float("nan")
        except RuntimeError as e:  # torch._int_mm refuses sizes that are not multiples of 8
            print(f"torch refuses {math} {orient} n={n}: {str(e).splitlines()[0]}")
            tms = float("nan")
        ratio = tms / ms
        seen = ", ".join(f"{t}: {m:.3f}" for t, m, _ in pilot.get((math, orient, n), []))
        print(f"| {math} | {orient} | {n} | {tile} | {ms:.3f} | {tflops:.1f} | {tms:.3f} | {ratio:.2f} | {seen or '-'} |")
        results.append(dict(math=math, orient=orient, n=n, tile=tile, ms=ms, tflops=tflops, torch_ms=tms, ratio=ratio,
                            pilot=[dict(tile=t, ms=m, tflops=tf) for t, m, tf in pilot.get((math, orient, n), [])]))
    print("torch: bf16/f16 torch.matmul; i8 torch._int_mm; tf32 torch.matmul with allow_tf32; "
          "tf32x3 against torch.matmul f32 with TF32 off (cuBLAS SGEMM)")
    if rc != 0:
        print(f"a gtest run failed (rc={rc}): a sampled output was wrong")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(dict(device=device, tile_choice="given" if args.tiles else "pilot", mainloop=results), f, indent=1)
    return 0 if rc == 0 and missing == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
