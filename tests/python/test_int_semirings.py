"""Integer max-plus / min-plus with the type's limits as infinities (docs/language.md section 5),
against NumPy: "no edge" as INT_MIN (max-plus) or INT_MAX (min-plus) never wraps into a path,
sums past the limits saturate. The engine is whichever runs here (the GPU where present)."""
import numpy as np
import pytest

import gamut

MAXPLUS = "where (i, j) { a = -inf; reduce (k) { a max= A[i, k] + B[k, j]; } C[i, j] = a; }"
MINPLUS = "where (i, j) { a = inf; reduce (k) { a min= A[i, k] + B[k, j]; } C[i, j] = a; }"
REACH = "where (i, j) { best: i32 = -inf; reduce (k) { best max= W[i, k] + W[k, j]; } Reach[i, j] = best > -inf; }"


def tropical(A, B, max_plus):
    """The step of the docs' table in Python integers (no wrapping), then the fold over k."""
    info = np.iinfo(A.dtype)
    zero, other = (info.min, info.max) if max_plus else (info.max, info.min)
    a = A.astype(object)[:, :, None]
    b = B.astype(object)[None, :, :]
    s = np.clip(a + b, info.min, info.max)
    s = np.where((a == other) | (b == other), other, s)
    s = np.where((a == zero) | (b == zero), zero, s)
    r = s.max(axis=1) if max_plus else s.min(axis=1)
    return r.astype(A.dtype)


def weights(rng, shape, dtype, max_plus, absent):
    info = np.iinfo(dtype)
    r = rng.random(shape)
    w = rng.integers(-50, 51, shape).astype(dtype)
    w = np.where(r < absent + 0.17, rng.integers(info.min + 10, info.min + 110, shape).astype(dtype), w)
    w = np.where(r < absent + 0.10, rng.integers(info.max - 110, info.max - 10, shape).astype(dtype), w)
    w = np.where(r < absent + 0.03, dtype(info.max if max_plus else info.min), w)
    return np.where(r < absent, dtype(info.min if max_plus else info.max), w).astype(dtype)


@pytest.mark.parametrize("dtype", [np.int32, np.int64])
@pytest.mark.parametrize("max_plus", [True, False])
def test_sentinels_absorb_and_sums_saturate(dtype, max_plus):
    q = gamut.compile(MAXPLUS if max_plus else MINPLUS)
    rng = np.random.default_rng(3)
    for m, n, k, absent in [(1, 1, 1, 0.3), (9, 7, 5, 0.3), (40, 33, 21, 0.6)]:
        A = weights(rng, (m, k), dtype, max_plus, absent)
        B = weights(rng, (k, n), dtype, max_plus, absent)
        C = q(A=A, B=B)["C"]
        assert C.dtype == dtype
        np.testing.assert_array_equal(C, tropical(A, B, max_plus))


def test_reachability_with_int_min_as_no_edge():
    rng = np.random.default_rng(4)
    n = 60
    W = np.where(rng.random((n, n)) < 0.04, rng.integers(-9, 10, (n, n)), np.iinfo(np.int32).min).astype(np.int32)
    reach = gamut.compile(REACH)(W=W)["Reach"]
    edge = (W != np.iinfo(np.int32).min).astype(np.int64)
    want = (edge @ edge) > 0
    np.testing.assert_array_equal(reach.astype(bool), want)
    assert 0 < want.sum() < n * n   # (wrapping sums made all 3600 pairs reachable)
