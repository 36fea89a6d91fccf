#!/usr/bin/env python3
"""Where NVRTC's time goes for gamut's kernels: the cold compile (no cache) of a generated source
with the options the engine uses, the cost of each device header on its own, and of option
changes. Needs NVRTC (libnvrtc.so) and no GPU: NVRTC compiles for sm_90a anywhere.

usage: bench/nvrtc_cost.py [--repeats N] [--arch sm_90a] [--device DIR] [KERNEL.cu ...]
       (default kernels: the golden SGEMM sources, tests/golden/; default headers: src/cuda/device)

Every compile is a fresh nvrtcProgram in this process (the first one also pays NVRTC's
initialisation, reported apart); times are the best of the repeats, in milliseconds (the best,
not the median: on a shared machine the others measure the neighbours).
"""
import argparse
import ctypes
import glob
import os
import sys
import time

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
DEVICE = os.path.join(ROOT, "src", "cuda", "device")
CUDA = os.environ.get("CUDA_HOME", "/usr/local/cuda")
DEFAULT_KERNELS = ["tests/golden/tiles/sgemm.128x256x16_8x16.cu", "tests/golden/queries/sgemm.cu"]


def load_nvrtc():
    for name in [os.path.join(CUDA, "lib64", "libnvrtc.so.13"), os.path.join(CUDA, "lib64", "libnvrtc.so"),
                 "libnvrtc.so.13", "libnvrtc.so"]:
        try:
            return ctypes.CDLL(name)
        except OSError:
            continue
    sys.exit("NVRTC (libnvrtc.so) not found; set CUDA_HOME")


NVRTC = load_nvrtc()


def headers(device=DEVICE):
    """The embedded device headers, as tools/embed_headers.cmake names them (file names)."""
    out = {}
    paths = glob.glob(os.path.join(device, "**", "*.cuh"), recursive=True)
    if device == DEVICE:   # (the outputs' own device headers live beside their code generators)
        paths += glob.glob(os.path.join(ROOT, "src", "cuda", "outputs", "**", "device", "*.cuh"), recursive=True)
    for path in sorted(paths):
        with open(path) as f:
            out[os.path.basename(path)] = f.read()
    return out


def base_options(arch):
    """What src/cuda/runtime/nvrtc_compile.cpp passes (base_options + the arch)."""
    opts = ["--gpu-architecture=" + arch, "-std=c++17", "-default-device"]
    for d in [os.path.join(CUDA, "include"), os.path.join(CUDA, "include", "cccl")]:
        if os.path.isdir(d):
            opts.append("-I" + d)
    return opts


def compile_ms(source, options, hdrs):
    """One NVRTC compile to a cubin; returns (wall, cpu) milliseconds (raises with the log on
    failure). NVRTC runs in this process, so the process's CPU time is the compile's, and on a
    busy machine it is the steadier of the two."""
    prog = ctypes.c_void_p()
    names = list(hdrs.keys())
    texts = [hdrs[n].encode() for n in names]
    n = len(names)
    c_texts = (ctypes.c_char_p * n)(*texts)
    c_names = (ctypes.c_char_p * n)(*[x.encode() for x in names])
    c_opts = (ctypes.c_char_p * len(options))(*[o.encode() for o in options])
    t0, c0 = time.perf_counter(), time.process_time()
    if NVRTC.nvrtcCreateProgram(ctypes.byref(prog), source.encode(), b"kernel.cu", n, c_texts, c_names) != 0:
        raise RuntimeError("nvrtcCreateProgram failed")
    rc = NVRTC.nvrtcCompileProgram(prog, len(options), c_opts)
    size = ctypes.c_size_t()
    NVRTC.nvrtcGetCUBINSize(prog, ctypes.byref(size))
    ms = ((time.perf_counter() - t0) * 1e3, (time.process_time() - c0) * 1e3)
    if rc != 0:
        log_size = ctypes.c_size_t()
        NVRTC.nvrtcGetProgramLogSize(prog, ctypes.byref(log_size))
        log = ctypes.create_string_buffer(log_size.value)
        NVRTC.nvrtcGetProgramLog(prog, log)
        NVRTC.nvrtcDestroyProgram(ctypes.byref(prog))
        raise RuntimeError("compile failed:\n" + log.value.decode(errors="replace"))
    NVRTC.nvrtcDestroyProgram(ctypes.byref(prog))
    return ms


def best_ms(source, options, hdrs, repeats):
    """(wall, cpu): the best of `repeats` compiles each."""
    runs = [compile_ms(source, options, hdrs) for _ in range(repeats)]
    return min(r[0] for r in runs), min(r[1] for r in runs)


def fmt(t):
    return f"{t[0]:8.1f} ms wall {t[1]:8.1f} ms cpu"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--arch", default="sm_90a")
    ap.add_argument("--device", default=DEVICE, help="the device headers (a checkout of src/cuda/device)")
    ap.add_argument("kernels", nargs="*")
    a = ap.parse_args()
    hdrs = headers(a.device)
    opts = base_options(a.arch)
    major, minor = ctypes.c_int(), ctypes.c_int()
    NVRTC.nvrtcVersion(ctypes.byref(major), ctypes.byref(minor))
    print(f"NVRTC {major.value}.{minor.value}, {a.arch}, best of {a.repeats}; options: {' '.join(opts)}")

    empty = 'extern "C" __global__ void k() {}\n'
    print(f"first compile in the process (NVRTC initialisation included): {fmt(compile_ms(empty, opts, hdrs))}")
    base = best_ms(empty, opts, hdrs, a.repeats)
    print(f"an empty kernel:                                              {fmt(base)}")

    print("\neach device header alone (with what it includes), over the empty kernel:")
    for name in hdrs:
        src = f'#include "{name}"\n' + empty
        t = best_ms(src, opts, hdrs, a.repeats)
        print(f"  {name:32s} {t[0] - base[0]:+8.1f} ms wall {t[1] - base[1]:+8.1f} ms cpu")

    kernels = a.kernels or [os.path.join(ROOT, k) for k in DEFAULT_KERNELS]
    variants = [
        ("the engine's options", opts),
        ("without the toolkit -I paths", [o for o in opts if not o.startswith("-I")]),
        ("+ -minimal", opts + ["-minimal"]),
        ("+ --extra-device-vectorization", opts + ["--extra-device-vectorization"]),
        ("-std=c++20", [o if o != "-std=c++17" else "-std=c++20" for o in opts]),
    ]
    for path in kernels:
        with open(path) as f:
            src = f.read()
        first = src.splitlines()[0] if src else ""
        print(f"\n{os.path.relpath(path, ROOT)}  ({first[:100]})")
        for label, o in variants:
            try:
                print(f"  {label:34s} {fmt(best_ms(src, o, hdrs, a.repeats))}")
            except RuntimeError as e:
                print(f"  {label:34s} fails: {str(e).splitlines()[1] if len(str(e).splitlines()) > 1 else e}")


if __name__ == "__main__":
    main()
