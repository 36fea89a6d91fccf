"""Finishing steps (docs/language.md section 9) on the GPU engine (marked gpu): with NumPy inputs,
and with torch CUDA inputs whose outputs, the finished ones too, come back as CUDA tensors; each
equal to the CPU engine's (integer-valued data: exact)."""
import numpy as np
import pytest

import gamut

pytestmark = pytest.mark.gpu

QUERY = """where (i, j) {
  d = 0;
  reduce (k) { d += A[i, k] * B[k, j]; }
  S[g[i]] += d; C[g[i]] += 1; P[i, j] = d; R[i] += d;
} finish {
  Mean[x] = S[x] / max(C[x], 1);
  Share[x] = f64(S[x]) / sum(S);
  Norm[r, c] = P[r, c] / (R[r] + 1000000);
}"""


def data():
    rng = np.random.default_rng(11)
    A = rng.integers(-3, 4, (300, 40)).astype(np.float32)
    B = rng.integers(-3, 4, (40, 260)).astype(np.float32)
    g = (np.arange(300) * 5 % 7).astype(np.int32)
    return A, B, g


def test_numpy_inputs_equal_the_cpu_engine():
    A, B, g = data()
    q = gamut.compile(QUERY)
    want = q(A=A, B=B, g=g, backend="cpu")
    got, stats = q.run({"A": A, "B": B, "g": g}, backend="gpu")
    assert stats["backend"] == "gpu"
    assert list(got) == list(want)
    for k in want:
        assert got[k].dtype == want[k].dtype
        np.testing.assert_array_equal(got[k], want[k], err_msg=k)


def test_torch_cuda_inputs_finished_outputs_on_the_device():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch has no CUDA device")
    A, B, g = data()
    q = gamut.compile(QUERY)
    want = q(A=A, B=B, g=g, backend="cpu")
    got = q(A=torch.from_numpy(A).cuda(), B=torch.from_numpy(B).cuda(), g=torch.from_numpy(g).cuda())
    assert list(got) == list(want)
    for k in want:
        assert got[k].is_cuda, k
        np.testing.assert_array_equal(got[k].cpu().numpy(), want[k], err_msg=k)
