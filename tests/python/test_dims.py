"""dims=: the extents of aggregate outputs that no input sizes, as the command line's --dim."""
import numpy as np
import pytest

import gamut

HIST = "where (i, j) { a = 0; reduce (k) { a += A[i, k] * B[k, j]; } Hist[g[i]] += a; }"


def data():
    rng = np.random.default_rng(5)
    A = rng.integers(-3, 4, (7, 5)).astype(np.float32)
    B = rng.integers(-3, 4, (5, 6)).astype(np.float32)
    g = np.array([0, 2, 2, 1, 0, 2, 1], np.int32)
    return A, B, g


def reference(A, B, g, extent):
    want = np.zeros(extent, np.float32)
    np.add.at(want, g, (A @ B).sum(axis=1))
    return want


def test_dims_sets_the_extent_of_an_aggregate_output():
    A, B, g = data()
    q = gamut.compile(HIST)
    got = q(A=A, B=B, g=g, backend="cpu")["Hist"]
    assert got.shape == (3,)      # from the largest index value
    for dims in ({"Hist": [9]}, {"Hist": (9,)}, {"Hist": 9}):
        got = q(A=A, B=B, g=g, backend="cpu", dims=dims)["Hist"]
        want = reference(A, B, g, 9)
        assert got.shape == (9,) and np.array_equal(got, want) and want.any()
    outs, _ = q.run({"A": A, "B": B, "g": g}, backend="cpu", dims={"Hist": [4]})
    assert outs["Hist"].shape == (4,)
    assert "Hist" in q.explain(A=A, B=B, g=g, dims={"Hist": [9]})


def test_an_extent_below_the_index_values_is_a_data_error_naming_the_output():
    A, B, g = data()
    q = gamut.compile(HIST)
    with pytest.raises(gamut.DataError, match="Hist"):
        q(A=A, B=B, g=g, backend="cpu", dims={"Hist": [2]})   # index value 2 needs 3


@pytest.mark.parametrize("bad", [[1.5], "9", {"Hist": "x"}, {"Hist": [-1]}, {3: [4]}, {"Hist": [[2]]}])
def test_malformed_dims_is_a_usage_error(bad):
    A, B, g = data()
    q = gamut.compile(HIST)
    dims = bad if isinstance(bad, dict) else {"Hist": bad} if isinstance(bad, list) else bad
    with pytest.raises(gamut.UsageError, match="dims"):
        q(A=A, B=B, g=g, backend="cpu", dims=dims)


def test_a_binding_called_dims_goes_through_a_mapping():
    q = gamut.compile("where (i, j) { a = 0; reduce (k) { a += dims[i, k] * B[k, j]; } C[i, j] = a; }")
    A, B, _ = data()
    with pytest.raises(gamut.UsageError, match="mapping"):
        q(dims=A, B=B, backend="cpu")
    outs, _ = q.run({"dims": A, "B": B}, backend="cpu")
    assert np.array_equal(outs["C"], A @ B)
