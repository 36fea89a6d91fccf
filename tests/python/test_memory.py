"""Reference counts and memory across many calls: 100,000 calls of a cached query on NumPy
arrays must not grow the process, leak the inputs, or keep the outputs alive."""
import gc
import sys

import numpy as np

import gamut


def rss_bytes():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096


def test_hundred_thousand_calls_no_growth():
    q = gamut.compile("where (i, j) { a = 0; reduce (k) { a += A[i, k] * B[k, j]; } "
                      "if (a > t) emit L(i, j, a); C[i, j] = a; }")
    A = np.arange(12, dtype=np.float32).reshape(3, 4)
    B = np.ones((4, 5), np.float32)
    refs = sys.getrefcount(A), sys.getrefcount(B)
    want = A.astype(np.float64) @ B

    def calls(n):
        for _ in range(n):
            out = q(A=A, B=B, t=10.0, backend="cpu", threads=1)
        return out

    out = calls(5_000)            # warm up: allocator pools, typed-plan cache
    gc.collect()
    before = rss_bytes()
    out = calls(95_000)
    gc.collect()
    grown = rss_bytes() - before
    np.testing.assert_array_equal(out["C"], want)
    assert len(out["L"]["i"]) == int((want > 10).sum()) > 0
    assert (sys.getrefcount(A), sys.getrefcount(B)) == refs
    # A leak of even one small object per call would be several MB here.
    assert grown < 2 * 2**20, f"RSS grew by {grown / 2**20:.1f} MiB over 95,000 calls"


def test_outputs_are_freed():
    q = gamut.compile("where (i, j) { a = 0; reduce (k) { a += A[i, k] * B[k, j]; } C[i, j] = a; }")
    A = np.ones((256, 64), np.float32)
    B = np.ones((64, 256), np.float32)
    gc.collect()
    before = rss_bytes()
    for _ in range(200):           # 256 KiB per output: 50 MiB if outputs were kept
        q(A=A, B=B, backend="cpu", threads=1)
    gc.collect()
    assert rss_bytes() - before < 8 * 2**20
