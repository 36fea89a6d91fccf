"""Ctrl-C during a long GPU call (issue 34): host inputs, the GPU engine. A kernel in flight runs to
its end; the call then raises KeyboardInterrupt instead of going on, and the query is usable
afterwards. Runs in a child process, as test_interrupt.py. Skips without a GPU (fails under
GAMUT_REQUIRE_GPU=1, conftest.py)."""
import signal
import subprocess
import sys
import time

import pytest

CHILD = r"""
import signal, sys, time
import numpy as np
import gamut

# Python's own Ctrl-C handler even where the test runner inherited SIGINT ignored (test_interrupt.py).
signal.signal(signal.SIGINT, signal.default_int_handler)

q = gamut.compile("where (i, j) { a: f64 = 0; reduce (k) { let x = f64(A[i, k]) + f64(B[k, j]); a += exp(x) / (x + 3.0); } C[i, j] = a; }")
M = 2048
# Grow the reduction until one call takes at least a second (f64 exp and division on the SIMT pipe).
K, took = 2048, 0.0
while True:
    A = np.ones((M, K), np.float32)
    B = np.ones((K, M), np.float32)
    q(A=A, B=B, backend="gpu")          # compiles the kernel for these sizes
    t = time.monotonic()
    q(A=A, B=B, backend="gpu")
    took = time.monotonic() - t
    if took >= 1.0 or K >= 1 << 17:
        break
    K *= 2
print("started", took, flush=True)
t0 = time.monotonic()
try:
    q(A=A, B=B, backend="gpu")
    print("finished", time.monotonic() - t0, flush=True)
except KeyboardInterrupt:
    print("interrupted", time.monotonic() - t0, flush=True)
r = q(A=A[:3, :5], B=B[:5, :4], backend="gpu")
assert np.allclose(r["C"], np.exp(2.0), rtol=1e-12), r["C"]
print("second ok", flush=True)
"""


@pytest.mark.gpu
def test_sigint_during_a_gpu_call_stops_it_at_the_kernel_end():
    p = subprocess.Popen([sys.executable, "-c", CHILD], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        first = p.stdout.readline().split()
        assert first and first[0] == "started", first + [p.stderr.read()]
        one_call = float(first[1])
        time.sleep(min(0.3, one_call / 4))
        p.send_signal(signal.SIGINT)
        out, err = p.communicate(timeout=120)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert p.returncode == 0, err
    lines = out.splitlines()
    assert lines[0].split()[0] == "interrupted", out + err
    # At most the kernel in flight (about one call) plus the 50 ms polling slice after the signal.
    assert float(lines[0].split()[1]) < one_call + 0.5, (one_call, lines)
    assert lines[-1] == "second ok", out + err
