"""Computed output indices (`Hist[b] += 1`, docs/language.md section 9) from Python: the extent
from dims=, against NumPy on integer data (exact); out-of-range values and a missing extent as
DataErrors naming the output; the same on the GPU where there is one."""
import numpy as np
import pytest

import gamut

COUNTS = ("where (i, j) { s = 0; reduce (k) { s += A[i, k] * B[k, j]; }"
          " let b = s + 12; if (b >= 0 && b < 25) Hist[b] += 1; }")
PER_GROUP = ("where (i, j) { s = 0; reduce (k) { s += A[i, k] * B[k, j]; }"
             " H[g[i], clamp(s, -4, 4) + 4] max= s * (j % 3 + 1); }")


def data(m=37, n=53, k=5, seed=1):
    rng = np.random.default_rng(seed)
    A = rng.integers(-2, 3, (m, k)).astype(np.int32)
    B = rng.integers(-2, 3, (k, n)).astype(np.int32)
    g = rng.integers(0, 4, m).astype(np.int32)
    return A, B, g


def counts_reference(A, B):
    b = (A.astype(np.int64) @ B.astype(np.int64) + 12).ravel()
    return np.bincount(b[(b >= 0) & (b < 25)], minlength=25)


def per_group_reference(A, B, g):
    s = A.astype(np.int64) @ B.astype(np.int64)
    want = np.full((4, 9), np.iinfo(np.int32).min, np.int64)
    j = np.arange(B.shape[1])
    v = s * (j % 3 + 1)[None, :]
    rows = np.repeat(g, B.shape[1])
    np.maximum.at(want, (rows, (np.clip(s, -4, 4) + 4).ravel()), v.ravel())
    return want


BACKENDS = ["cpu"] + (["gpu"] if gamut.gpu_available() else [])


@pytest.mark.parametrize("backend", BACKENDS)
def test_counts_by_computed_bin_match_numpy(backend):
    A, B, _ = data()
    got = gamut.compile(COUNTS)(A=A, B=B, dims={"Hist": [25]}, backend=backend)["Hist"]
    assert got.shape == (25,) and got.dtype == np.int64   # counts of `+= 1`: an integer literal is i64
    assert np.array_equal(got, counts_reference(A, B))


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_computed_index_beside_an_index_vector(backend):
    A, B, g = data(seed=2)
    got = gamut.compile(PER_GROUP)(A=A, B=B, g=g, dims={"H": [4, 9]}, backend=backend)["H"]
    assert np.array_equal(got, per_group_reference(A, B, g))


@pytest.mark.parametrize("backend", BACKENDS)
def test_out_of_range_is_a_data_error(backend):
    A, B, _ = data()
    q = gamut.compile("where (i, j) { s = 0; reduce (k) { s += A[i, k] * B[k, j]; } Hist[s + 3] += 1; }")
    s = (A.astype(np.int64) @ B.astype(np.int64) + 3).ravel()
    bad = s[(s < 0) | (s >= 7)]
    assert bad.size > 1
    with pytest.raises(gamut.DataError) as e:
        q(A=A, B=B, dims={"Hist": [7]}, backend=backend)
    msg = str(e.value)
    assert f"{bad.size} pairs gave the computed index of Hist a value outside [0, 7) (from {bad.min()} to {bad.max()})" in msg
    assert msg.count("outside") == 1   # said once


def test_the_extent_must_be_given():
    A, B, _ = data()
    with pytest.raises(gamut.DataError, match=r'Hist.*dims=\{"Hist": \[D\]\}'):
        gamut.compile(COUNTS)(A=A, B=B, backend="cpu")


def test_a_float_index_is_a_query_error():
    A, B, _ = data()
    q = "where (i, j) { s = 0; reduce (k) { s += A[i, k] * B[k, j]; } Hist[s * 0.5] += 1; }"
    with pytest.raises(gamut.QueryError, match="must be an integer"):
        gamut.compile(q)(A=A, B=B, dims={"Hist": [4]}, backend="cpu")
