"""Arrays of other frameworks on the host (skipped where the framework is missing): JAX and
torch CPU tensors in, the same framework out, bf16 included, equal to the NumPy run."""
import numpy as np
import pytest

import gamut

SGEMM = "where (i, j) { a = 0; reduce (k) { a += A[i, k] * B[k, j]; } C[i, j] = a; }"
SELECT = "where (i, j) { a = 0; reduce (k) { a += P[i, k] * R[k, j]; } if (a > t) emit L(i, j, a); }"


def data(seed=21):
    rng = np.random.default_rng(seed)
    return rng.integers(-3, 4, (9, 7)).astype(np.float32), rng.integers(-3, 4, (7, 5)).astype(np.float32)


def test_jax_in_jax_out():
    jnp = pytest.importorskip("jax.numpy")
    A, B = data()
    q = gamut.compile(SGEMM)
    out = q(A=jnp.asarray(A), B=jnp.asarray(B), backend="cpu")["C"]
    assert type(out).__module__.startswith("jax")
    np.testing.assert_array_equal(np.asarray(out), A.astype(np.float64) @ B)
    cols = gamut.compile(SELECT)(P=jnp.asarray(A), R=jnp.asarray(B), t=1, backend="cpu")["L"]
    assert all(type(c).__module__.startswith("jax") for c in cols.values())
    want = gamut.compile(SELECT)(P=A, R=B, t=1, backend="cpu")["L"]
    for k in want:
        np.testing.assert_array_equal(np.asarray(cols[k]), want[k])
    assert len(want["i"]) > 0


def test_jax_bf16():
    jnp = pytest.importorskip("jax.numpy")
    A, B = data(22)
    q = gamut.compile(SGEMM)
    got = q(A=jnp.asarray(A, jnp.bfloat16), B=jnp.asarray(B, jnp.bfloat16), backend="cpu")["C"]
    np.testing.assert_array_equal(np.asarray(got), A.astype(np.float64) @ B)   # small integers: exact in bf16


def test_torch_cpu_in_torch_out():
    torch = pytest.importorskip("torch")
    A, B = data(23)
    q = gamut.compile(SGEMM)
    out = q(A=torch.from_numpy(A), B=torch.from_numpy(B).requires_grad_(), backend="cpu")["C"]
    assert isinstance(out, torch.Tensor) and out.device.type == "cpu"
    np.testing.assert_array_equal(out.numpy(), A.astype(np.float64) @ B)
    bf = q(A=torch.from_numpy(A).bfloat16(), B=torch.from_numpy(B).bfloat16().t().contiguous().t(), backend="cpu")
    np.testing.assert_array_equal(bf["C"].numpy(), A.astype(np.float64) @ B)
