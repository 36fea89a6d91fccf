#!/usr/bin/env python3
"""Semiring benchmark (issue 5): tropical products in GOPS against the measured DPX/ALU ceilings.

- ceilings: `gamut peak --json` once at the start (add-max i32 DPX 'both smem' and 'registers',
  add-max i16x2 DPX, add-min f32);
- int32 max-plus (examples/maxplus.mmlt, data in [-1000, 1000]) at n = 2048, 4096, 8192, 16384
  (M = N = K = n); int16 max-plus (the same query, i16 inputs); fp32 min-plus (bench/minplus.mmlt,
  data in [0, 10)); 20 x 1024^3 batched int32 max-plus (bench/maxplus_batched.mmlt) against the
  large-matrix rate; or-and on 0/1 bool data, bit-packed (bench/orand.mmlt) and as written
  (--no-rewrite), against the LOP3 ceiling (64 ops per 32-bit word step);
- ours: `gamut run ... --backend gpu --json --repeat 5` (median CUDA-event kernel time of 5 launches
  after a warm-up); GOPS = 2 * batch * M * N * K / time (one add and one max per step, as MPMML and
  `gamut peak` count);
- PyTorch yardstick in the same run, n = 2048 and 4096: chunked max-plus
  C = max(C, (A[:, k0:k1, None] + B[None, k0:k1, :]).amax(1)), chunks of at most 2^29 elements;
- check: gamut's int32 result equal to the torch result at n = 2048 (and the other cases at their
  smallest size against a chunked reference, untimed).

Prints a table and writes JSON. usage:
  bench/semiring.py [--gamut build-dev/gamut] [--json OUT.json] [--dry-run] [--sizes 2048,4096,8192,16384]
--dry-run: n in (128, 256), batch 4 x 128, gamut --backend cpu, no `gamut peak` result (it needs a
GPU; the failure is recorded), torch skipped when not importable (a NumPy reference checks instead).
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchlib import cuda_time, run_gamut  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
EXAMPLES = os.path.join(HERE, "..", "examples")
CHUNK_ELEMS = 1 << 29   # torch chunk temporaries: at most this many elements (2 GiB of int32)

try:
    import torch
    HAVE_TORCH = torch.cuda.is_available()
except Exception:
    torch = None
    HAVE_TORCH = False

# case -> (query file, numpy dtype, semiring op, ceiling key)
CASES = {
    "maxplus_i32": (os.path.join(EXAMPLES, "maxplus.mmlt"), np.int32, "max", "i32"),
    "maxplus_i16": (os.path.join(EXAMPLES, "maxplus.mmlt"), np.int16, "max", "i16x2"),
    "minplus_f32": (os.path.join(HERE, "minplus.mmlt"), np.float32, "min", "f32"),
    "maxplus_batched_i32": (os.path.join(HERE, "maxplus_batched.mmlt"), np.int32, "max", "i32"),
    # Boolean product on 0/1 bool data: bit-packed (the bitpack-orand rewrite), and as written.
    "orand_bool": (os.path.join(HERE, "orand.mmlt"), np.bool_, "orand", "b32"),
    "orand_bool_unpacked": (os.path.join(HERE, "orand.mmlt"), np.bool_, "orand", "b32"),
}
EXTRA_ARGS = {"orand_bool_unpacked": ["--no-rewrite"]}


# ----------------------------------------------------------------------------- gamut


def measure_peaks(gamut, path, timeout):
    """`gamut peak --json`: (entries, ceilings dict, error text)."""
    try:
        p = subprocess.run([gamut, "peak", "--json", path], capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return [], {}, f"gamut peak: timeout after {timeout} s"
    except OSError as e:
        return [], {}, f"cannot run gamut: {e}"
    if p.returncode != 0:
        msg = (p.stderr.strip() or p.stdout.strip()).splitlines()
        return [], {}, f"gamut peak rc={p.returncode}: {msg[0] if msg else '(no message)'}"
    print(p.stdout.rstrip(), flush=True)
    with open(path) as f:
        rep = json.load(f)
    entries = rep.get("entries", [])

    def pick(op, typ, operands):
        # The DPX form where there is one (add-max i32 is measured both as DPX and as plain IADD+IMNMX).
        c = [e for e in entries if e["op"] == op and e["type"] == typ and e["operands"] == operands]
        dpx = [e for e in c if "DPX" in e.get("instruction", "")]
        best = max(dpx or c, key=lambda e: e["gops"], default=None)
        return best["gops"] if best else None

    ceil = {}
    for key, op, typ in (("i32", "add-max", "i32"), ("i16x2", "add-max", "i16x2"), ("f32", "add-min", "f32"),
                         ("b32", "or-and", "b32")):
        ceil[key] = {"both smem": pick(op, typ, "both smem"), "registers": pick(op, typ, "registers")}
    return rep, ceil, None


# ----------------------------------------------------------------------------- references


def torch_chunked(A, B, op):
    """C = op_k A[:, k] + B[k, :], k in chunks whose (M, kc, N) temporary has <= CHUNK_ELEMS elements."""
    M, K = A.shape
    N = B.shape[1]
    kc = max(1, min(K, CHUNK_ELEMS // max(M * N, 1)))
    if A.dtype.is_floating_point:
        C = torch.full((M, N), float("-inf") if op == "max" else float("inf"), dtype=A.dtype, device=A.device)
    else:
        info = torch.iinfo(A.dtype)
        C = torch.full((M, N), info.min if op == "max" else info.max, dtype=A.dtype, device=A.device)
    for k0 in range(0, K, kc):
        T = A[:, k0:k0 + kc, None] + B[None, k0:k0 + kc, :]
        C = torch.maximum(C, T.amax(1)) if op == "max" else torch.minimum(C, T.amin(1))
        del T
    return C


def numpy_chunked(A, B, op):
    M, K = A.shape
    N = B.shape[1]
    kc = max(1, min(K, (1 << 24) // max(M * N, 1)))
    f = np.maximum if op == "max" else np.minimum
    C = None
    for k0 in range(0, K, kc):
        T = (A[:, k0:k0 + kc, None] + B[None, k0:k0 + kc, :])
        T = T.max(1) if op == "max" else T.min(1)
        C = T if C is None else f(C, T)
    return C


def reference(A, B, op, use_torch):
    """The exact result (int inputs widened to int32; f32 stays f32: one rounded add, then min/max)."""
    if op == "orand":   # counts of common k are exact in f32 up to 2^24
        if use_torch:
            c = torch.from_numpy(A.astype(np.float32)).cuda() @ torch.from_numpy(B.astype(np.float32)).cuda()
            return (c > 0).to(torch.int32).cpu().numpy()
        return ((A.astype(np.float32) @ B.astype(np.float32)) > 0).astype(np.int32)
    wide = np.float32 if A.dtype == np.float32 else np.int32
    A, B = A.astype(wide), B.astype(wide)
    if A.ndim == 3:
        return np.stack([reference(A[b], B[b], op, use_torch) for b in range(A.shape[0])])
    if use_torch:
        return torch_chunked(torch.from_numpy(A).cuda(), torch.from_numpy(B).cuda(), op).cpu().numpy()
    return numpy_chunked(A, B, op)


# ----------------------------------------------------------------------------- main


def make_inputs(rng, dtype, shape_a, shape_b):
    if dtype == np.bool_:
        # Sparse enough that about half of C is 1 at K = n: P(a & b) = p^2, 1 - (1 - p^2)^K ~ 1/2.
        p = min(0.5, (0.7 / shape_a[-1]) ** 0.5)
        return rng.random(shape_a) < p, rng.random(shape_b) < p
    if dtype == np.float32:
        return (rng.random(shape_a, dtype=np.float32) * 10).astype(np.float32), \
               (rng.random(shape_b, dtype=np.float32) * 10).astype(np.float32)
    return rng.integers(-1000, 1001, shape_a, dtype=dtype), rng.integers(-1000, 1001, shape_b, dtype=dtype)


def gops(batch, m, n, k, ms):
    return 2.0 * batch * m * n * k / (ms * 1e-3) / 1e9 if ms else None


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--gamut", default=os.path.join(HERE, "..", "build-dev", "gamut"))
    ap.add_argument("--json", default="semiring.json", help="write the results here")
    ap.add_argument("--dry-run", action="store_true")
    ap.add_argument("--sizes", default=None, help="n values (default 2048,4096,8192,16384; dry run 128,256)")
    ap.add_argument("--torch-sizes", default=None, help="torch chunked max-plus sizes (default 2048,4096)")
    ap.add_argument("--batch", default=None, help="BxN of the batched case (default 20x1024; dry run 4x128)")
    ap.add_argument("--cases", default=",".join(CASES), help="comma-separated: " + ",".join(CASES))
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--timeout", type=float, default=180.0, help="seconds per gamut run")
    ap.add_argument("--tmp", default=None, help="folder for the .npy inputs (default: a temp dir)")
    ap.add_argument("--sweep", action="append", default=[],
                    help="CASE=TILE,TILE,...: also time CASE with each --tile at --sweep-size (tile search)")
    ap.add_argument("--sweep-size", type=int, default=8192)
    a = ap.parse_args()

    sizes = [int(s) for s in (a.sizes or ("128,256" if a.dry_run else "2048,4096,8192,16384")).split(",")]
    torch_sizes = [int(s) for s in (a.torch_sizes or ("128,256" if a.dry_run else "2048,4096")).split(",")]
    nb, bn = (int(x) for x in (a.batch or ("4x128" if a.dry_run else "20x1024")).split("x"))
    verify_n = 2048 if 2048 in sizes else min(sizes)
    backend = "cpu" if a.dry_run else "gpu"
    use_torch = HAVE_TORCH
    if not use_torch and not a.dry_run:
        sys.exit("semiring.py: PyTorch with CUDA is needed (or use --dry-run)")
    gamut = os.path.abspath(a.gamut)
    cases = a.cases.split(",")
    info = {"sizes": sizes, "batch": [nb, bn], "backend": backend, "repeat": a.repeat, "dry_run": a.dry_run,
            "torch": torch.__version__ if torch else None,
            "device": torch.cuda.get_device_name(0) if use_torch else None, "results": []}
    print(f"semiring: n={sizes} batch={nb}x{bn} backend={backend} verify at n={verify_n} "
          f"torch={'yes' if use_torch else 'no (NumPy reference)'}", flush=True)

    tmp = a.tmp or tempfile.mkdtemp(prefix="gamut-semibench-")
    os.makedirs(tmp, exist_ok=True)
    rep, ceil, err = measure_peaks(gamut, os.path.join(tmp, "peak.json"), 300)
    info["peak"], info["ceilings"], info["peak_error"] = rep, ceil, err
    if err:
        print(f"ceilings: none ({err})", flush=True)
    else:
        print("ceilings (GOPS): " + ", ".join(f"{k} {v['both smem']:.0f} (both smem) / {v['registers']:.0f} (registers)"
                                              for k, v in ceil.items() if v["both smem"] and v["registers"]), flush=True)
    if use_torch:
        torch.backends.cuda.matmul.allow_tf32 = False

    rng = np.random.default_rng(5)

    def record(case, size_text, b, m, n, k, ms, extra):
        key = extra.get("ceiling_key") or (CASES[case][3] if case in CASES else "i32")
        c = ceil.get(key, {}) if ceil else {}
        g = gops(b, m, n, k, ms)
        r = {"case": case, "size": size_text, "batch": b, "M": m, "N": n, "K": k, "ms": ms, "gops": g,
             "ceiling_key": key, "ceiling_both_smem": c.get("both smem"), "ceiling_registers": c.get("registers")}
        r["pct_both_smem"] = 100 * g / r["ceiling_both_smem"] if g and r["ceiling_both_smem"] else None
        r["pct_registers"] = 100 * g / r["ceiling_registers"] if g and r["ceiling_registers"] else None
        r.update(extra)
        info["results"].append(r)
        print(f"  {case:20s} {size_text:>12s}: {fmt(ms)} ms  {fmt(g, 0)} GOPS  "
              f"{r.get('error') or r.get('check') or ''}", flush=True)
        return r

    try:
        for case in [c for c in CASES if c in cases]:
            qfile, dtype, op, _ = CASES[case]
            shapes = [(nb, bn)] if case == "maxplus_batched_i32" else [(1, n) for n in sizes]
            for b, n in shapes:
                batched = case == "maxplus_batched_i32"
                sa = (b, n, n) if batched else (n, n)
                A, B = make_inputs(rng, dtype, sa, sa)
                fa, fb = os.path.join(tmp, "A.npy"), os.path.join(tmp, "B.npy")
                np.save(fa, A)
                np.save(fb, B)
                verify = batched or n == verify_n
                j, err, outs = run_gamut(gamut, qfile, {"A": fa, "B": fb}, backend, a.repeat, a.timeout,
                                         extra=EXTRA_ARGS.get(case, ()),
                                         outdir=os.path.join(tmp, "out") if verify else None)
                extra = {"error": err}
                if j:
                    extra.update(tile=j.get("tile"), device_peak_bytes=j.get("device_peak_bytes"),
                                 rewrites=j.get("rewrites"),
                                 wall_ms=j.get("wall_ms"), compile_ms=j.get("compile_ms"))
                # The torch yardstick (int32 max-plus only), timed in this process.
                tC = tms = None
                if case == "maxplus_i32" and n in torch_sizes and use_torch:
                    tA, tB = torch.from_numpy(A).cuda(), torch.from_numpy(B).cuda()
                    tms, tC = cuda_time(lambda: torch_chunked(tA, tB, "max"), a.repeat, warmup=1)
                    tC = tC.cpu().numpy()
                    del tA, tB
                    torch.cuda.empty_cache()
                if j and verify:
                    got = outs.get("C")
                    want = tC if tC is not None else reference(A, B, op, use_torch)
                    if got is None:
                        extra.update(check_ok=False, check="no output C")
                    else:
                        same = got.shape == want.shape and np.array_equal(got, want.astype(got.dtype))
                        bad = int(np.count_nonzero(got != want.astype(got.dtype))) if got.shape == want.shape else -1
                        ref_name = "torch" if use_torch else "numpy"
                        extra.update(check_ok=bool(same),
                                     check=f"exact vs {ref_name}" if same else f"MISMATCH vs {ref_name}: {bad} elements")
                size_text = f"{b}x{n}^3" if batched else f"{n}^3"
                record(case, size_text, b, n, n, n, j["time_ms"] if j else None, extra)
                # Tile search: the same inputs under other tiles (untimed checks: the default run
                # above checks the query; these only time).
                for sw in a.sweep:
                    sc, tiles = sw.split("=", 1)
                    if sc != case or n != a.sweep_size or batched:
                        continue
                    for t in tiles.split(","):
                        js, es, _ = run_gamut(gamut, qfile, {"A": fa, "B": fb}, backend, a.repeat, a.timeout,
                                              extra=["--tile", t])
                        record(case + "@" + t, size_text, b, n, n, n, js["time_ms"] if js else None,
                               {"error": es, "tile": js.get("tile") if js else t, "ceiling_key": CASES[case][3]})
                if tms is not None:
                    kc = max(1, min(n, CHUNK_ELEMS // (n * n)))
                    record("torch_chunked_i32", f"{n}^3", 1, n, n, n, tms, {"chunk": kc, "error": None})
                del A, B
                for f in (fa, fb):
                    os.remove(f)
    finally:
        if not a.tmp:
            shutil.rmtree(tmp, ignore_errors=True)

    # The batched rate against the large-matrix int32 rate; ours against the torch yardstick.
    res = info["results"]
    big = [r for r in res if r["case"] == "maxplus_i32" and r["gops"]]
    big = max(big, key=lambda r: r["M"], default=None)
    for r in res:
        if r["case"] == "maxplus_batched_i32" and r["gops"] and big:
            r["vs_large"] = r["gops"] / big["gops"]
            r["note"] = f"{r['vs_large']:.2f}x the {big['size']} rate"
        if r["case"] == "torch_chunked_i32" and r["ms"]:
            ours = [o for o in res if o["case"] == "maxplus_i32" and o["M"] == r["M"] and o["ms"]]
            if ours:
                r["ours_speedup"] = r["ms"] / ours[0]["ms"]
                r["note"] = f"gamut {r['ours_speedup']:.1f}x faster"
    table = make_table(res)
    print(table)
    info["table"] = table
    with open(a.json, "w") as f:
        json.dump(info, f, indent=1, default=lambda o: o.tolist() if hasattr(o, "tolist") else str(o))
    print(f"wrote {a.json}")


def fmt(v, d=3):
    return "-" if v is None else f"{v:.{d}f}"


def make_table(results):
    head = (f"{'case':30s} {'size':>12s} {'ms':>10s} {'GOPS':>8s} {'ceiling':>8s} {'% ceil':>7s}"
            f" {'% regs':>7s}  note")
    lines = [head, "-" * len(head)]
    for r in results:
        note = r.get("error") and "FAILED: " + r["error"][:70]
        note = note or "; ".join(x for x in (r.get("check"), r.get("note"), r.get("chunk") and f"chunk {r['chunk']}",
                                     r.get("tile") and f"tile {r['tile']}") if x)
        lines.append(f"{r['case']:30s} {r['size']:>12s} {fmt(r['ms']):>10s} {fmt(r['gops'], 0):>8s}"
                     f" {fmt(r['ceiling_both_smem'], 0):>8s} {fmt(r['pct_both_smem'], 1):>7s}"
                     f" {fmt(r['pct_registers'], 1):>7s}  {note}")
    lines.append("GOPS = 2*batch*M*N*K / time; ceiling = `gamut peak` add-max i32 (DPX) / add-max i16x2 (DPX) / "
                 "add-min f32 with both operands from shared memory; % regs: of the registers-only ceiling")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
