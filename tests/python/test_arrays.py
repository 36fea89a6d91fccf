"""How arrays and scalars come in and go out: layouts (views, transposes, offsets, negative
strides), element types, scalars, list outputs, ownership of the results."""
import gc
import weakref

import numpy as np
import pytest

import gamut

SGEMM = "where (i, j) { a = 0; reduce (k) { a += A[i, k] * B[k, j]; } C[i, j] = a; }"


def ints(rng, shape, dtype=np.float32, lo=-3, hi=3):
    return rng.integers(lo, hi + 1, shape).astype(dtype)


@pytest.fixture
def q():
    return gamut.compile(SGEMM)


def run(q, **kw):
    out, stats = q.run(kw, backend="cpu", threads=1)
    return out, stats


def test_c_order_inputs_are_used_in_place(q):
    rng = np.random.default_rng(2)
    A, B = ints(rng, (20, 9)), ints(rng, (9, 7))
    out, stats = run(q, A=A, B=B)
    np.testing.assert_array_equal(out["C"], A.astype(np.float64) @ B)
    assert stats["copies"] == []
    assert "A: f32 (20, 9) on host, used in place" in q.explain(A=A, B=B)


@pytest.mark.parametrize("view", ["transpose", "fortran", "step", "offset", "negative"])
def test_views(q, view):
    rng = np.random.default_rng(3)
    base = ints(rng, (30, 24))
    A = {"transpose": base[:12, :9].T, "fortran": np.asfortranarray(base[:9, :12]), "step": base[::3, ::2][:9, :12],
         "offset": base[5:14, 7:19], "negative": base[:9, :12][::-1, ::-1]}[view]
    assert A.shape == (9, 12)
    B = ints(rng, (12, 5))
    out, stats = run(q, A=A, B=B)
    assert out["C"].shape == (9, 5)
    np.testing.assert_array_equal(out["C"], A.astype(np.float64) @ B)
    assert np.count_nonzero(out["C"])
    if view == "offset":   # rows are not contiguous: a copy
        assert stats["copies"] and stats["copies"][0].startswith("A: strides")


def test_contiguous_offset_view_is_not_copied(q):
    rng = np.random.default_rng(4)
    base = ints(rng, (40, 6))
    A = base[10:30]          # C-contiguous, not at the start of its buffer
    B = ints(rng, (6, 4))
    out, stats = run(q, A=A, B=B)
    np.testing.assert_array_equal(out["C"], A.astype(np.float64) @ B)
    assert stats["copies"] == []


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64, np.int8, np.int16, np.int32, np.int64,
                                   np.uint8, np.bool_])
def test_element_types(q, dtype):
    rng = np.random.default_rng(5)
    lo = 0 if dtype in (np.uint8, np.bool_) else -3
    hi = 1 if dtype == np.bool_ else 3
    A, B = ints(rng, (8, 6), dtype, lo, hi), ints(rng, (6, 5), dtype, lo, hi)
    C = q(A=A, B=B, backend="cpu")["C"]
    want = A.astype(np.float64) @ B.astype(np.float64)
    np.testing.assert_array_equal(C, want.astype(C.dtype))
    assert C.dtype == (np.float64 if dtype == np.float64 else np.float32 if dtype in (np.float16, np.float32)
                       else np.int64 if dtype == np.int64 else np.int32)


def test_scalars_python_and_numpy(q):
    scaled = gamut.compile("where (i, j) { a = 0; reduce (k) { a += A[i, k] * B[k, j]; } C[i, j] = a * s + t; }")
    rng = np.random.default_rng(6)
    A, B = ints(rng, (3, 4), np.float64), ints(rng, (4, 2), np.float64)
    base = A @ B
    for s, t in [(2, 0.5), (np.float32(0.25), np.int64(3)), (True, -1e300), (0.1, 7)]:
        C = scaled(A=A, B=B, s=s, t=t, backend="cpu")["C"]
        np.testing.assert_array_equal(C, base * float(s) + float(t))


def test_list_output_is_a_dict_of_columns():
    q5 = gamut.compile("where (i, j) { a = 0; reduce (k) { a += P[i, k] * R[k, j]; } "
                       "if (a > t) emit Pairs(i, j, a as score); }")
    rng = np.random.default_rng(7)
    P, R = ints(rng, (10, 4)), ints(rng, (4, 6))
    out = q5(P=P, R=R, t=2, backend="cpu")
    cols = out["Pairs"]
    assert list(cols) == ["i", "j", "score"]
    assert cols["i"].dtype == np.int32 and cols["score"].dtype == np.float32
    acc = P.astype(np.float64) @ R
    ii, jj = np.nonzero(acc > 2)
    assert len(ii) > 0
    np.testing.assert_array_equal(cols["i"], ii)
    np.testing.assert_array_equal(cols["j"], jj)
    np.testing.assert_array_equal(cols["score"], acc[ii, jj])


def test_outputs_own_their_memory():
    q = gamut.compile(SGEMM)
    rng = np.random.default_rng(8)
    A, B = ints(rng, (5, 3)), ints(rng, (3, 4))
    C = q(A=A, B=B, backend="cpu")["C"]
    ref = weakref.ref(q)
    del q
    gc.collect()
    assert ref() is None                      # the output does not keep the query alive
    A[:] = 0                                  # nor does it alias the inputs
    np.testing.assert_array_equal(C, ints(np.random.default_rng(8), (5, 3)).astype(np.float64) @ B)
    C += 1                                    # and it is an ordinary writable array
    assert C.flags.writeable


def test_empty_and_zero_size(q):
    A, B = np.zeros((0, 3), np.float32), np.ones((3, 4), np.float32)
    C = q(A=A, B=B, backend="cpu")["C"]
    assert C.shape == (0, 4)
    A, B = np.ones((2, 0), np.float32), np.ones((0, 3), np.float32)
    np.testing.assert_array_equal(q(A=A, B=B, backend="cpu")["C"], np.zeros((2, 3)))


def test_inputs_named_like_options_bind_through_run():
    q = gamut.compile("where (i, j) { a = 0; reduce (k) { a += backend[i, k] * threads[k, j]; } C[i, j] = a; }")
    x = np.ones((2, 3), np.float32)
    y = np.ones((3, 2), np.float32)
    out, stats = q.run({"backend": x, "threads": y}, backend="cpu")
    np.testing.assert_array_equal(out["C"], np.full((2, 2), 3.0))
    assert stats["backend"] == "cpu" and stats["M"] == 2
    # f32 sums of products under the default f32_math: IEEE (spec section 10), on the CPU engine
    assert stats["math"] == "ieee" and stats["mainloop"] == "cpu"


def test_query_properties(examples):
    import os
    q = gamut.load(os.path.join(examples, "q3_count_pairs.mmlt"))
    assert q.inputs == ["P", "R", "Pzip", "Rzip"]
    assert q.params == ["thres"]
    assert q.outputs == ["Cnt"]
    assert q.name.endswith("q3_count_pairs.mmlt")
    assert "Cnt" in repr(q)
    assert "plan" in q.explain()
