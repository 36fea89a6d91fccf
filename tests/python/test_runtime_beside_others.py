"""The package lives beside another C++ runtime in the process (PyTorch's, NumPy's): a
libstdc++.so.6 loaded with RTLD_GLOBAL before gamut must not take over part of gamut's own
(a build that links libstdc++ statically crashed in `ostream << double` otherwise)."""
import subprocess
import sys
import textwrap

import pytest

SCRIPT = textwrap.dedent('''
    import ctypes, ctypes.util
    name = ctypes.util.find_library("stdc++") or "libstdc++.so.6"
    ctypes.CDLL(name, mode=ctypes.RTLD_GLOBAL)
    import numpy as np, gamut
    q = gamut.compile("where (i, j) { a = 0.25; reduce (k) { a += A[i, k] * B[k, j] * 1.5; } C[i, j] = a * t; }")
    A = np.arange(6, dtype=np.float32).reshape(2, 3); B = np.ones((3, 2), np.float32)
    text = q.explain(A=A, B=B, t=0.75)
    assert "0.25" in text and "1.5" in text, text
    for backend in ["cpu"] + (["gpu"] if gamut.gpu_available() else []):
        C = q(A=A, B=B, t=0.75, backend=backend)["C"]
        assert np.allclose(C, (A @ B * 1.5 + 0.25) * 0.75), (backend, C)
    print("ok")
''')


def test_a_global_libstdcxx_loaded_first_leaves_gamut_whole():
    p = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0 and p.stdout.strip().endswith("ok"), (p.returncode, p.stdout[-2000:], p.stderr[-2000:])
