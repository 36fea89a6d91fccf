#!/usr/bin/env python3
"""Differential fuzzing of gamut: random queries over the whole language (tests/fuzz/mmlt_gen.py),
each run by two engines and compared as its rules say.

  --backend-pair cpu,gpu    the CPU engine against the GPU engine (exit 77 without a GPU; exit 1 when
                            GAMUT_REQUIRE_GPU=1, as the device scripts set)
  --backend-pair cpu,numpy  the CPU engine against the NumPy model (tests/fuzz/mmlt_model.py)
  --backend-pair cpu,cpu    the CPU engine on --threads against itself on one thread
  --nvrtc TOOL              also compile every case's kernels with NVRTC (tests/fuzz/fuzz_nvrtc.cpp):
                            exit 77 (a skip) when the tool says this build has no NVRTC; a failure
                            when a case compiled no kernel or fewer than --min-kernels were compiled

Seeds: a fresh block every run unless --seed (or GAMUT_FUZZ_SEED) names its first seed; the block is
printed first, so a failing run is reproduced with `--seed S --count N` (one case: `--seed S --count 1`).
With the GPU in the pair each case's GPU side runs one of --f32-maths (ieee, tf32x3, tf32; chosen
from the seed), the generator keeps its exact values exact under that math, and inexact f32 outputs
are compared with that math's bound (RTOL_F32_MATH).

One line per mismatch, with the seed (`--keep DIR` writes the case as query + .npy + case.json),
then a summary with the counts. Exit 1 when anything mismatched or failed.

The GPU side: the command line (30% of the cases with a forced tile), or with --python-share the
Python package on device tensors (tests/fuzz/python_side.py), or with --gpu-parts the multi-device
runner (--gpus); with several GPUs each worker's single-GPU runs go to its own GPU. --gpu-env-share
of the cases set one of --gpu-env's code-generator experiments (default: the ping-pong selects) for
the GPU side and the NVRTC check.

usage: differential.py --gamut build/gamut [--count N] [--seed S] [--backend-pair cpu,gpu]
                       [--jobs J] [--device-sizes] [--keep DIR] [--nvrtc TOOL [--min-kernels K]]
                       [--gpu-args ARGS] [--f32-maths ieee,tf32x3,tf32]
                       [--python-share F] [--gpu-parts F] [--no-cli-checks]
"""
import argparse
import hashlib
import multiprocessing
import os
import random
import shlex
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import mmlt_case  # noqa: E402
from mmlt_case import binding_args, compare, gamut_args, load_inputs, run_gamut, write_case  # noqa: E402
from mmlt_gen import F32_MATHS, Generator  # noqa: E402
from mmlt_model import Model, ModelError  # noqa: E402
from python_side import PythonSide  # noqa: E402

OPTS = None
# Relative bound on the norm for inexact f32 (and f64) outputs per --f32-math of the GPU side: TF32
# keeps 11 significant bits of each operand (a product off by up to about 2^-10 relative), tf32x3
# is about IEEE f32's error.
RTOL_F32_MATH = {"ieee": 1e-4, "tf32x3": 1e-4, "tf32": 5e-3}
SEED_BLOCKS = 10 ** 9   # fresh seeds come from [1, SEED_BLOCKS)


def fresh_seed(count):
    """The first seed of a fresh block (GAMUT_FUZZ_SEED pins it)."""
    pinned = os.environ.get("GAMUT_FUZZ_SEED", "")
    if pinned:
        return int(pinned)
    return random.SystemRandom().randrange(1, SEED_BLOCKS - count)


def case_f32_math(o, seed):
    """The GPU side's --f32-math of one case ("ieee" without the GPU or with --f32-math in --gpu-args)."""
    if "gpu" not in o.pair or o.fixed_f32_math:
        return o.fixed_f32_math or "ieee"
    return random.Random(seed * 104729 + 7).choice(o.f32_maths)


PYSIDE = None   # this worker's Python-package server (python_side.py), started on first use
WORKER_GPU = None   # this worker's GPU for single-GPU runs (CUDA_VISIBLE_DEVICES), with several


def init_worker(opts):
    global OPTS, WORKER_GPU
    OPTS = opts
    ident = multiprocessing.current_process()._identity
    if opts.ngpus > 1:
        WORKER_GPU = str((ident[0] if ident else 0) % opts.ngpus)
    if opts.rtol:
        mmlt_case.RTOL["f4"] = opts.rtol


def run_case(seed):
    """One case: (seed, query hash, tags, mismatch lines, error lines, nvrtc kernels, seconds by part:
    {"total", and each side's run ("cpu", "gpu", "gpu-python", "numpy"), "nvrtc"})."""
    try:
        return _run_case(seed)
    except Exception as e:   # a fuzzer bug: report it with the seed, go on
        import traceback
        tb = traceback.extract_tb(e.__traceback__)[-1]
        return seed, f"crash{seed}", ["fuzzer-crash"], [], [f"fuzzer: {type(e).__name__}: {e} "
                                                            f"({os.path.basename(tb.filename)}:{tb.lineno})"], 0, {"total": 0.0}


def _run_case(seed):
    o = OPTS
    t0 = time.time()
    f32_math = case_f32_math(o, seed)
    gen = Generator(seed, device_sizes=o.device_sizes, known_defects=o.known_defects, f32_math=f32_math,
                    mid_sizes=not o.no_mid_sizes)
    case = gen.generate()
    qhash = hashlib.sha1(case.text.split("\n", 1)[1].encode()).hexdigest()[:12]
    variant = random.Random(seed * 7919 + 1)
    # Some cases force a tile on the GPU side (and in the NVRTC check): partial tiles of every size.
    tile = variant.choice(o.gpu_tiles) if o.gpu_tiles and variant.random() < 0.3 else None
    # Some cases run the GPU side through the Python package on device tensors, others over
    # several GPUs (the multi-device runner; `--gpus 0,0` on one GPU: two parts on GPU 0).
    route = random.Random(seed * 31337 + 3)
    via_python = route.random() < o.python_share and not case.dims
    devices = None
    if not via_python and route.random() < o.gpu_parts:
        devices = route.choice(["2", "all", "0,1,0"] if o.ngpus > 1 else ["0,0"])
    # Some cases run the GPU side (and the NVRTC check) under a code-generator experiment's
    # variable (--gpu-env): kernels the choice does not make by default, on fresh queries.
    exp = random.Random(seed * 104729 + 5)
    gpu_env = exp.choice(o.gpu_env) if o.gpu_env and exp.random() < o.gpu_env_share else None
    gpu_vars = dict([gpu_env.split("=", 1)]) if gpu_env else {}
    d = tempfile.mkdtemp(prefix=f"gamut_fuzz_{seed}_", dir=o.tmp)
    mism, errs, kernels = [], [], 0
    parts = {}   # seconds by part of the case (where a case's time goes)
    try:
        desc = write_case(case, d)
        a_name, b_name = o.pair
        outs, labels = [], []
        for side, be in enumerate((a_name, b_name)):
            ts = time.time()
            part = be + ("-python" if be == "gpu" and via_python else "")
            if be == "numpy":
                try:
                    res = Model(case.query, load_inputs(d, desc), desc["params"], desc["dims"]).run()
                except ModelError as e:
                    errs.append(f"numpy model: {e}")
                    res = None
                outs.append(res)
                labels.append("numpy")
                parts[part] = parts.get(part, 0) + time.time() - ts
                continue
            if be == "gpu" and via_python:
                out_dir = os.path.join(d, f"out_{side}_python")
                err = python_side().run({"dir": d, "out": out_dir, "backend": "gpu", "f32_math": f32_math})
                if err:
                    errs.append(err)
                outs.append(None if err else read_outputs(out_dir))
                labels.append(f"gpu (python, {python_side().framework})")
                parts[part] = parts.get(part, 0) + time.time() - ts
                continue
            extra = list(o.gpu_args) + (["--tile", tile] if tile else []) if be == "gpu" else []
            if be == "gpu" and f32_math != "ieee" and not o.fixed_f32_math:
                extra += ["--f32-math", f32_math]
            if be == "gpu" and devices:
                extra += ["--gpus", devices]
            # Vary what is compared: a rewritten plan on one side, the query as written on the other.
            # (Not with NaN or inf in the data: push-down may then differ from the query as
            # written, docs/semantics.md.)
            if variant.random() < 0.3 and "special" not in case.tags:
                extra.append("--no-rewrite")
            out_dir = os.path.join(d, f"out_{side}_{be}")
            # cpu,cpu: one side on one thread (the engine's result must not depend on the split).
            threads = (1 if side == 1 and o.pair == ("cpu", "cpu") else o.threads) if be == "cpu" else None
            env = None
            if be == "gpu" and WORKER_GPU is not None and not devices:
                env = dict(os.environ, CUDA_VISIBLE_DEVICES=WORKER_GPU)
            if be == "gpu" and gpu_env:
                env = dict(env or os.environ, **gpu_vars)
                extra_label = f" {gpu_env}"
            else:
                extra_label = ""
            res, err = run_gamut(o.gamut, d, desc, be, out_dir, threads=threads, extra=extra, timeout=o.timeout,
                                 env=env)
            if err:
                errs.append(err)
            outs.append(res)
            labels.append(be + "".join(f" {x}" for x in extra) + extra_label)
            parts[part] = parts.get(part, 0) + time.time() - ts
        if outs[0] is not None and outs[1] is not None:
            rtol = None
            if f32_math != "ieee":
                r = max(o.rtol or 0, RTOL_F32_MATH[f32_math])
                rtol = {"f4": r, "f8": r}
            mism = compare(outs[0], outs[1], desc["rules"], labels=tuple(labels), rtol=rtol)
        # `check` (no data) and `explain --source` (the plan and the generated kernel) succeed too.
        q = os.path.join(d, "query.mmlt")
        # (A query without inputs or parameters: `explain --source` asks for bindings there are none of.)
        bound = binding_args(d, desc)
        for args in [] if o.no_cli_checks else [[o.gamut, "check", q]] + (
                [[o.gamut, "explain", q] + bound + ["--source"]] if bound else []):
            p = subprocess.run(args, capture_output=True, text=True, timeout=o.timeout)
            if p.returncode != 0:
                errs.append(f"{args[1]}: exit {p.returncode}: {(p.stderr.strip().splitlines() or [''])[0]}")
        if o.nvrtc:
            ts = time.time()
            args = [o.nvrtc] + (["--tile", tile] if tile else []) + [q] + binding_args(d, desc)
            try:
                p = subprocess.run(args, capture_output=True, text=True, timeout=2 * o.timeout,
                                   env=dict(os.environ, **gpu_vars) if gpu_vars else None)
            except subprocess.TimeoutExpired:
                p = subprocess.CompletedProcess(args, 1, f"FAIL timed out after {2 * o.timeout} s", "")
            if p.returncode == 77:
                kernels = -1   # this build has no NVRTC
            else:
                kernels = sum(1 for ln in p.stdout.splitlines() if ln.startswith("ok "))
                if p.returncode != 0:
                    fail = [ln for ln in p.stdout.splitlines() if ln.startswith("FAIL")] or [p.stderr.strip()[:300]]
                    errs.append(f"nvrtc: {fail[0][:400]}")
                elif kernels == 0:
                    errs.append(f"nvrtc: exit 0 but no kernel compiled ({p.stdout.strip()[:200]!r})")
            parts["nvrtc"] = time.time() - ts
        if (mism or errs) and o.keep:
            keep = os.path.join(o.keep, f"seed_{seed}")
            shutil.rmtree(keep, ignore_errors=True)
            shutil.copytree(d, keep, ignore=shutil.ignore_patterns("out_*"))
            with open(os.path.join(keep, "run.sh"), "w") as f:
                for be in (a_name, b_name):
                    if be != "numpy":
                        f.write((gpu_env + " " if be == "gpu" and gpu_env else "") +
                                shlex.join(gamut_args(o.gamut, keep, desc, be, os.path.join(keep, "out_" + be))) + "\n")
    finally:
        shutil.rmtree(d, ignore_errors=True)
    tags = case.tags + ([f"f32math-{f32_math}"] if f32_math != "ieee" else []) + (["python"] if via_python else []) \
        + (["gpus"] if devices else []) + (["tile"] if tile and "gpu" in o.pair else []) \
        + ([gpu_env] if gpu_env and ("gpu" in o.pair or o.nvrtc) else [])
    parts["total"] = time.time() - t0
    return seed, qhash, tags, mism, errs, kernels, parts


def python_side():
    global PYSIDE
    if PYSIDE is None:
        env = dict(os.environ)
        if WORKER_GPU is not None:
            env["CUDA_VISIBLE_DEVICES"] = WORKER_GPU
        PYSIDE = PythonSide(env=env, timeout=OPTS.timeout)
    return PYSIDE


def read_outputs(out_dir):
    import numpy as np
    return {f[:-4]: np.load(os.path.join(out_dir, f)) for f in sorted(os.listdir(out_dir)) if f.endswith(".npy")}


def gpu_count():
    """GPUs visible to this process (GAMUT_FUZZ_GPUS overrides; 1 when nvidia-smi cannot tell)."""
    if os.environ.get("GAMUT_FUZZ_GPUS"):
        return int(os.environ["GAMUT_FUZZ_GPUS"])
    try:
        p = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=30)
        n = sum(1 for ln in p.stdout.splitlines() if ln.startswith("GPU "))
    except (OSError, subprocess.TimeoutExpired):
        n = 0
    vis = os.environ.get("CUDA_VISIBLE_DEVICES")
    if vis is not None and vis.strip():
        n = min(n, len(vis.split(","))) if n else len(vis.split(","))
    return max(n, 1)


def gpu_present(gamut):
    return subprocess.run([gamut, "device"], capture_output=True).returncode == 0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--gamut", required=True)
    ap.add_argument("--count", type=int, default=100)
    ap.add_argument("--seed", type=int, default=None,
                    help="first seed (default: a fresh block, printed; GAMUT_FUZZ_SEED pins it)")
    ap.add_argument("--backend-pair", default="cpu,gpu")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--threads", type=int, default=2, help="CPU engine threads per run")
    ap.add_argument("--device-sizes", action="store_true", help="also tile multiples +-1 up to 257")
    ap.add_argument("--keep", help="write failing cases here")
    ap.add_argument("--nvrtc", help="fuzz_nvrtc binary: compile every case's kernels for sm_90a")
    ap.add_argument("--min-kernels", type=int, default=None,
                    help="with --nvrtc: fail below this many compiled kernels (default: one per case run)")
    ap.add_argument("--f32-maths", default=",".join(F32_MATHS),
                    help="with the GPU in the pair: the --f32-math values cases choose from (per seed)")
    ap.add_argument("--no-mid-sizes", action="store_true", help="no extents of 48..129 (mmlt_gen.SIZES_MID)")
    ap.add_argument("--gpu-args", default="", help="extra gamut run arguments for the GPU side")
    # (Not 128x256x16/8x16 by default: forced on a query with an `if` in its reduce body, NVRTC takes
    # 20-40 s for it, which the automatic choice never asks for.)
    ap.add_argument("--gpu-tiles", default="128x128x8/8x8,128x64x8/8x4,64x64x8/4x4,64x32x8/4x4,32x32x8/4x4",
                    help="tiles that 30%% of the cases force on the GPU side ('' for none)")
    ap.add_argument("--timeout", type=int, default=300, help="seconds per gamut run")
    ap.add_argument("--max-seconds", type=float, default=0,
                    help="start no new case after this many seconds (the summary counts what ran)")
    ap.add_argument("--min-cases", type=int, default=0,
                    help="fail when fewer cases ran (--max-seconds cut the run short)")
    ap.add_argument("--rtol", type=float, default=0,
                    help="relative bound for inexact f32 outputs (default 1e-4; e.g. 3e-3 with --f32-math tf32)")
    ap.add_argument("--quiet", action="store_true", help="only mismatches and the summary")
    ap.add_argument("--python-share", type=float, default=0.0,
                    help="share of the cases whose GPU side runs through the Python package on device "
                         "tensors (torch CUDA tensors where torch is installed; python_side.py)")
    ap.add_argument("--gpu-parts", type=float, default=0.0,
                    help="share of the cases whose GPU side runs over several GPUs (--gpus 2, all or 0,1,0; "
                         "0,0 with one GPU)")
    ap.add_argument("--gpu-env", default="GAMUT_EXPERIMENT_PINGPONG=256,GAMUT_EXPERIMENT_PINGPONG=128",
                    help="code-generator experiments (VAR=VALUE, comma-separated) that --gpu-env-share of the "
                         "cases set for the GPU side and the NVRTC check ('' for none)")
    ap.add_argument("--gpu-env-share", type=float, default=0.15,
                    help="share of the cases run under one of --gpu-env")
    ap.add_argument("--no-cli-checks", action="store_true",
                    help="skip `check` and `explain --source` per case (CI's fuzz runs them)")
    ap.add_argument("--known-defects", action="store_true",
                    help="also generate what open defects break (mmlt_gen.KNOWN_DEFECTS)")
    o = ap.parse_args()
    o.pair = tuple(o.backend_pair.split(","))
    o.gpu_args = shlex.split(o.gpu_args)
    o.gpu_env = [e.strip() for e in o.gpu_env.split(",") if "=" in e]
    o.fixed_f32_math = None
    for k, a in enumerate(o.gpu_args):   # --f32-math given for every case
        if a == "--f32-math" and k + 1 < len(o.gpu_args):
            o.fixed_f32_math = o.gpu_args[k + 1]
        elif a.startswith("--f32-math="):
            o.fixed_f32_math = a.split("=", 1)[1]
    if o.fixed_f32_math and o.fixed_f32_math not in F32_MATHS:
        ap.error(f"--f32-math {o.fixed_f32_math}: one of {', '.join(F32_MATHS)}")
    if o.fixed_f32_math == "tf32" and not o.rtol:
        o.rtol = RTOL_F32_MATH["tf32"]
    o.f32_maths = [m for m in o.f32_maths.split(",") if m]
    if any(m not in F32_MATHS for m in o.f32_maths) or not o.f32_maths:
        ap.error(f"--f32-maths takes some of {', '.join(F32_MATHS)}")
    o.gpu_tiles = [t for t in o.gpu_tiles.split(",") if t]
    o.gamut = os.path.abspath(o.gamut)
    if o.nvrtc:
        o.nvrtc = os.path.abspath(o.nvrtc)
    if len(o.pair) != 2 or any(b not in ("cpu", "gpu", "numpy") for b in o.pair):
        ap.error("--backend-pair takes two of cpu, gpu, numpy")
    if "gpu" in o.pair and not gpu_present(o.gamut):
        if os.environ.get("GAMUT_REQUIRE_GPU", "") not in ("", "0"):
            print("differential: FAILED: GAMUT_REQUIRE_GPU=1 but no GPU (gamut device failed)")
            return 1
        print("differential: no GPU (gamut device failed): skipped")
        return 77
    o.ngpus = gpu_count() if "gpu" in o.pair else 1
    o.tmp = tempfile.mkdtemp(prefix="gamut_fuzz_")
    if "gpu" in o.pair and not os.environ.get("GAMUT_CACHE_DIR"):
        os.environ["GAMUT_CACHE_DIR"] = os.path.join(o.tmp, "kernel-cache")   # not the user's cache
    if o.keep:
        os.makedirs(o.keep, exist_ok=True)
    fresh = o.seed is None
    if fresh:
        o.seed = fresh_seed(o.count)
    print(f"differential: seeds {o.seed}..{o.seed + o.count - 1} ({'a fresh block' if fresh else 'given'}; "
          f"reproduce with --seed {o.seed} --count {o.count})", flush=True)
    t0 = time.time()
    seeds = list(range(o.seed, o.seed + o.count))
    n_mism = n_err = kernels = ran = 0
    spent = {}   # seconds by part, summed over the cases
    no_nvrtc = with_nvrtc = 0
    hashes, tags = set(), {}
    try:
        with multiprocessing.Pool(o.jobs, initializer=init_worker, initargs=(o,)) as pool:
            for seed, qh, tg, mism, errs, nk, parts in pool.imap_unordered(run_case, seeds):
                secs = parts["total"]
                for k, v in parts.items():
                    spent[k] = spent.get(k, 0.0) + v
                ran += 1
                hashes.add(qh)
                no_nvrtc += nk < 0
                with_nvrtc += nk >= 0
                kernels += max(nk, 0)
                for t in tg:
                    tags[t] = tags.get(t, 0) + 1
                if mism:
                    n_mism += 1
                    print(f"MISMATCH seed={seed} [{','.join(tg)}] {o.pair[0]} vs {o.pair[1]}: " + " | ".join(mism[:3]),
                          flush=True)
                if errs:
                    n_err += 1
                    print(f"ERROR seed={seed} [{','.join(tg)}]: " + " | ".join(errs[:3]), flush=True)
                if not o.quiet and not mism and not errs and secs > 30:
                    print(f"slow seed={seed}: {secs:.1f} s", flush=True)
                if o.max_seconds and time.time() - t0 > o.max_seconds:
                    print(f"differential: --max-seconds {o.max_seconds:.0f} reached; stopping", flush=True)
                    pool.terminate()
                    break
    finally:
        shutil.rmtree(o.tmp, ignore_errors=True)
    print(f"differential {o.pair[0]} vs {o.pair[1]}: {ran} cases run of {len(seeds)} (seeds {o.seed}..{o.seed + o.count - 1}), "
          f"{len(hashes)} distinct queries, {n_mism} mismatches, {n_err} with errors"
          + (f", {o.ngpus} GPUs" if "gpu" in o.pair else "")
          + (f", {kernels} kernels compiled with NVRTC" if o.nvrtc else "")
          + f", {time.time() - t0:.0f} s")
    print("templates: " + ", ".join(f"{k} {v}" for k, v in sorted(tags.items())))
    if ran:
        print(f"seconds per case (mean, {o.jobs} jobs at once): " +
              ", ".join(f"{k} {v / ran:.2f}" for k, v in sorted(spent.items(), key=lambda kv: kv[0] != "total")))
    if n_mism or n_err:
        return 1
    if ran < o.min_cases:
        print(f"differential: FAILED: {ran} cases ran, fewer than --min-cases {o.min_cases}")
        return 1
    if o.nvrtc:
        if no_nvrtc and with_nvrtc:
            print(f"differential: FAILED: {o.nvrtc} said 'no NVRTC' (exit 77) for {no_nvrtc} cases and compiled "
                  f"for {with_nvrtc}")
            return 1
        if no_nvrtc:
            print("differential: this build has no NVRTC: the compile check was skipped")
            return 77
        want = ran if o.min_kernels is None else o.min_kernels
        if kernels < want or ran == 0:
            print(f"differential: FAILED: {kernels} kernels compiled with NVRTC, fewer than the minimum {want}"
                  + (" (no case ran)" if ran == 0 else ""))
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
