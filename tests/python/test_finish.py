"""Finishing steps (`finish { ... }`, docs/language.md section 9) from Python: means per group, a
share of the total and rows normalised by their sums against NumPy (integer data: exact), the
outputs' order, finish=False, and a query error at its place."""
import numpy as np
import pytest

import gamut

QUERY = """where (i, j) {
  d = 0;
  reduce (k) { d += A[i, k] * B[k, j]; }
  S[g[i]] += d;
  C[g[i]] += 1;
  P[i, j] = d;
  R[i] += d;
} finish {
  Mean[x] = S[x] / max(C[x], 1);
  Share[x] = f64(S[x]) / sum(S);
  Norm[r, c] = P[r, c] / R[r];
  Scaled[x] = S[x] * scale;
}"""


def data():
    rng = np.random.default_rng(3)
    A = rng.integers(1, 5, (29, 6)).astype(np.float32)
    B = rng.integers(1, 4, (6, 11)).astype(np.float32)
    g = rng.integers(0, 5, 29).astype(np.int32)
    g[0] = 6   # groups 5 (and perhaps others) are empty: max(C, 1) keeps their mean 0
    return A, B, g


def test_finished_outputs_equal_numpy():
    A, B, g = data()
    q = gamut.compile(QUERY)
    assert q.outputs == ["S", "C", "P", "R", "Mean", "Share", "Norm", "Scaled"]
    out = q(A=A, B=B, g=g, scale=0.25, backend="cpu")
    assert list(out) == q.outputs
    P = A.astype(np.float64) @ B.astype(np.float64)         # integer values: exact in f32 too
    S = np.zeros(7)
    np.add.at(S, g, P.sum(axis=1))
    C = np.bincount(g, weights=np.full(len(g), P.shape[1]), minlength=7).astype(np.int64)
    assert (C == 0).any()
    np.testing.assert_array_equal(out["S"], S.astype(np.float32))
    np.testing.assert_array_equal(out["C"], C)
    assert out["Mean"].dtype == np.float32
    np.testing.assert_array_equal(out["Mean"], (S.astype(np.float32) / np.maximum(C, 1).astype(np.float32)))
    assert out["Share"].dtype == np.float64
    np.testing.assert_allclose(out["Share"], S / S.sum(), rtol=1e-12)
    R = P.sum(axis=1)
    np.testing.assert_allclose(out["Norm"], P / R[:, None], rtol=1e-6)
    np.testing.assert_array_equal(out["Scaled"], S * 0.25)


def test_finish_false_returns_only_the_runs_outputs():
    A, B, g = data()
    q = gamut.compile(QUERY)
    out, _ = q.run({"A": A, "B": B, "g": g, "scale": 1.0}, backend="cpu", finish=False)
    assert list(out) == ["S", "C", "P", "R"]
    with pytest.raises(gamut.UsageError, match="finish=1: give True or False"):
        q(A=A, B=B, g=g, scale=1.0, backend="cpu", finish=1)


def test_explain_shows_the_steps():
    text = gamut.compile(QUERY).explain()
    assert "finish (per element, on the host once every output is final):\n  Mean[x]: " in text


def test_a_bad_step_is_a_query_error_at_its_place():
    with pytest.raises(gamut.QueryError, match=r"q.mmlt:3:14: error: list 'L' cannot be read in 'finish'"):
        gamut.compile("where (i, j) { d = 0; reduce (k) { d += A[i, k]; }\n emit L(i, j); S[i] += d; }\n"
                      "finish { M = L; }", "q.mmlt")
