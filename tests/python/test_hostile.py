"""Python under hostile use (issue 34): every value NumPy can view is an input, unsupported ones
are errors that name the binding, and every error is a gamut exception in Python's words."""
import array
import subprocess
import sys

import numpy as np
import pytest

import gamut

SGEMM = "where (i, j) { a = 0; reduce (k) { a += A[i, k] * B[k, j]; } C[i, j] = a; }"
SCALED = "where (i, j) { a = 0; reduce (k) { a += A[i, k] * B[k, j]; } C[i, j] = a * t; }"
AGG = "where (i, j) { a = 0; reduce (k) { a += P[i, k] * R[k, j]; } C[g[i], h[j]] += a; D[g[i], j] += a; }"


@pytest.fixture
def q():
    return gamut.compile(SGEMM)


@pytest.fixture
def ab():
    rng = np.random.default_rng(7)
    return rng.integers(-3, 4, (2, 3)).astype(np.float32), rng.integers(-3, 4, (3, 4)).astype(np.float32)


def reference(A, B):
    return np.asarray(A, np.float64) @ np.asarray(B, np.float64)


def run_isolated(code):
    """Runs `code` in a child interpreter: a segfault there is a failed test, not a dead suite."""
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, f"exit {r.returncode}: {r.stderr[-2000:]}"
    return r.stdout


# 1. Anything NumPy can view is an input.

def test_ctypes_arrays_are_inputs_not_a_crash():
    out = run_isolated(f"""
import ctypes, numpy as np, gamut
q = gamut.compile({SGEMM!r})
A = (ctypes.c_float * 3 * 2)()
B = (ctypes.c_float * 4 * 3)()
for i in range(2):
    for k in range(3):
        A[i][k] = i + k
for k in range(3):
    for j in range(4):
        B[k][j] = k - j
C = q(A=A, B=B, backend="cpu")["C"]
want = np.ctypeslib.as_array(A).astype(np.float64) @ np.ctypeslib.as_array(B)
assert isinstance(C, np.ndarray) and np.array_equal(C, want), (C, want)
assert "A: f32 (2, 3) on host" in q.explain(A=A, B=B, backend="cpu")
vq = gamut.compile("where (i, j) {{ a = 0; reduce (k) {{ a += X[i, k] * Y[k, j]; }} C[i, j] = a + v[i]; }}")
v = (ctypes.c_double * 2)(1, 2)
C = vq(X=np.ones((2, 3), np.float32), Y=np.ones((3, 2), np.float32), v=v, backend="cpu")["C"]
assert np.array_equal(C, [[4, 4], [5, 5]]), C
print("ok")
""")
    assert out.strip() == "ok"


@pytest.mark.parametrize("kind", ["memoryview", "array.array", "bytearray"])
def test_buffer_protocol_objects_are_inputs(kind):
    vq = gamut.compile("where (i, j) { a = 0; reduce (k) { a += X[i, k] * Y[k, j]; } C[i, j] = a + v[i]; }")
    X, Y = np.ones((3, 2), np.float32), np.ones((2, 2), np.float32)
    v = {"memoryview": lambda: memoryview(np.array([1, 2, 3], np.float64)),
         "array.array": lambda: array.array("d", [1, 2, 3]),
         "bytearray": lambda: bytearray(b"\x01\x02\x03")}[kind]()
    out = vq(X=X, Y=Y, v=v, backend="cpu")["C"]
    np.testing.assert_array_equal(out, np.array([[3, 3], [4, 4], [5, 5]]))


def test_memmap_is_an_array(q, ab, tmp_path):
    A, B = ab
    M = np.memmap(tmp_path / "a.bin", dtype=np.float32, mode="w+", shape=A.shape)
    M[:] = A
    np.testing.assert_array_equal(q(A=M, B=B, backend="cpu")["C"], reference(A, B))
    assert "A: f32 (2, 3) on host, used in place" in q.explain(A=M, B=B, backend="cpu")


def test_masked_array_is_an_error_naming_it(q, ab):
    A, B = ab
    for call in (q, q.explain):
        with pytest.raises(gamut.UsageError, match=r"^usage error: A: a masked array \(numpy.ma.MaskedArray\)"):
            call(A=np.ma.masked_array(A, mask=A > 0), B=B, backend="cpu")


# 2. Byte order and element types.

@pytest.mark.parametrize("dtype", [">f4", ">f8", ">i4", ">i2", ">i8"])
def test_big_endian_arrays_are_byte_swapped(q, ab, dtype):
    A, B = ab
    out, stats = q.run({"A": A.astype(dtype), "B": B}, backend="cpu")
    np.testing.assert_array_equal(out["C"], reference(A, B))
    assert any(c.startswith(f"A: big-endian '{dtype}': byte-swapped") for c in stats["copies"])
    assert "byte-swapped to native order" in q.explain(A=A.astype(dtype), B=B, backend="cpu")


@pytest.mark.parametrize("make, shown", [
    (lambda A: A.astype(object), "element type object (NumPy dtype '|O')"),
    (lambda A: A.astype(str), "element type str"),
    (lambda A: A.astype(bytes), "element type bytes"),
    (lambda A: A.astype("datetime64[s]"), "element type datetime64[s]"),
    (lambda A: np.zeros(A.shape, "i4,f4"), "a structured array (NumPy dtype [('f0', '<i4'), ('f1', '<f4')])"),
    (lambda A: A.view("V4"), "element type void32"),
])
def test_unsupported_numpy_dtypes_name_binding_and_dtype(q, ab, make, shown):
    A, B = ab
    with pytest.raises(gamut.DataError) as e:
        q(A=make(A), B=B, backend="cpu")
    assert str(e.value).startswith("data error: A: " + shown), str(e.value)
    assert "neither an array nor a number" not in str(e.value)


def bf16_void(x):
    return (np.asarray(x, np.float32).view(np.uint32) >> 16).astype(np.uint16).view("V2")


def test_bf16_as_two_byte_void(q, ab):
    A, B = ab   # small integers: exact in bf16
    out, _ = q.run({"A": bf16_void(A), "B": bf16_void(B)}, backend="cpu")
    np.testing.assert_array_equal(out["C"], reference(A, B))
    text = q.explain(A=bf16_void(A), B=B, backend="cpu")
    assert "A: bf16 (2, 3) on host" in text


def test_bf16_from_ml_dtypes(q, ab):
    ml_dtypes = pytest.importorskip("ml_dtypes")
    A, B = ab
    out = q(A=A.astype(ml_dtypes.bfloat16), B=B.astype(ml_dtypes.bfloat16), backend="cpu")
    np.testing.assert_array_equal(out["C"], reference(A, B))
    s = gamut.compile(SCALED)
    np.testing.assert_array_equal(s(A=A, B=B, t=ml_dtypes.bfloat16(1.5), backend="cpu")["C"], reference(A, B) * 1.5)


# 4. Options and errors in Python's words.

@pytest.mark.parametrize("threads", [2.5, "4", 2**31, -1, 1025, True, [2]])
def test_threads_must_be_an_integer_in_range(q, ab, threads):
    A, B = ab
    with pytest.raises(gamut.UsageError, match=r"threads must be an integer from 1 to 1024"):
        q(A=A, B=B, threads=threads, backend="cpu")
    with pytest.raises(ValueError):
        q.run({"A": A, "B": B}, threads=threads, backend="cpu")


def test_threads_in_range_run(q, ab):
    A, B = ab
    for t in (0, 1, 1024, np.int64(3), None):
        np.testing.assert_array_equal(q(A=A, B=B, threads=t, backend="cpu")["C"], reference(A, B))


@pytest.mark.parametrize("kw, match", [
    ({"stream": -1}, "stream=-1"),
    ({"stream": 2**70}, "stream="),
    ({"backend": 3}, "backend=3: give a string"),
    ({"f32_math": None}, "f32_math=None: give a string"),
    ({"devices": 2**70}, "devices="),
    ({"devices": [0, 2**70]}, "devices="),
])
def test_malformed_options_are_usage_errors(q, ab, kw, match):
    A, B = ab
    with pytest.raises(gamut.UsageError, match=match):
        q(A=A, B=B, **kw)


def test_messages_use_keywords_not_command_line_words():
    s = gamut.compile(SCALED)
    A, B = np.ones((2, 3), np.float32), np.ones((3, 4), np.float32)
    cases = [
        (dict(A=A, t=1.0), gamut.DataError, "B: input array is not bound; pass an array as the keyword argument B"),
        (dict(A=A, B=B), gamut.DataError, "t: parameter is not bound; pass a number as the keyword argument t"),
        (dict(A=A, B=2.0, t=1.0), gamut.DataError, "B: is an array in the query"),
        (dict(A=A, B=B, t=np.ones(2)), gamut.DataError,
         "t: an array is not a number (t is a scalar parameter of the query"),
        (dict(A=A, B=B, t=1.0, backend="gpu"), None, None),
    ]
    for kw, cls, text in cases:
        kw.setdefault("backend", "cpu")
        if cls is None and gamut.gpu_available():
            continue
        with pytest.raises(gamut.GamutError) as e:
            s(**kw)
        msg = str(e.value)
        for cli in ("FILE.npy", "=VALUE", ".npy file", "--backend", "--"):
            assert cli not in msg, msg
        if cls is not None:
            assert isinstance(e.value, cls) and text in msg, msg
        else:
            assert "backend='gpu'" in msg, msg


def test_devices_on_the_cpu_says_backend_keyword(q, ab):
    A, B = ab
    with pytest.raises(gamut.UsageError) as e:
        q(A=A, B=B, devices=2, backend="cpu")
    assert "--backend" not in str(e.value) and "backend='cpu'" in str(e.value)


def test_out_of_host_memory_is_a_device_error_naming_the_input(q):
    A = np.broadcast_to(np.float32(1), (1 << 20, 1 << 26))   # 256 TiB once copied to C order
    B = np.broadcast_to(np.float32(1), (1 << 26, 1))
    with pytest.raises(gamut.DeviceError, match=r"^resource error: out of host memory running the query: "
                                                r"copying input A \(f32, 256.00 TiB\) to C order"):
        q(A=A, B=B, backend="cpu", threads=1)


def test_binding_named_like_an_option_points_to_run():
    q = gamut.compile("where (i, j) { a = 0; reduce (k) { a += backend[i, k] * threads[k, j]; } C[i, j] = a; }")
    A, B = np.ones((2, 3), np.float32), np.ones((3, 4), np.float32)
    for call in (q, q.explain):
        with pytest.raises(gamut.UsageError, match=r"'backend' is an option of q.*also a binding.*q.run\(\{'backend'"):
            call(backend=A, threads=B)
    out, _ = q.run({"backend": A, "threads": B}, backend="cpu", threads=1)
    np.testing.assert_array_equal(out["C"], reference(A, B))
    assert "backend: f32 (2, 3)" in q.explain({"backend": A, "threads": B}, backend="cpu")
    assert q.kernel_source({"backend": A, "threads": B}).startswith("// kernel source")


def test_more_than_1024_keywords():
    n = 1100
    # (s0 + ... + s99) + (s100 + ...) + ...: chains short enough for the parser's nesting limit
    terms = " + ".join("(" + " + ".join(f"s{p}" for p in range(g, min(g + 100, n))) + ")" for g in range(0, n, 100))
    q = gamut.compile(f"where (i, j) {{ a = 0; reduce (k) {{ a += A[i, k] * B[k, j]; }} C[i, j] = a + {terms}; }}")
    A, B = np.ones((2, 3), np.float32), np.ones((3, 4), np.float32)
    bindings = {f"s{p}": 1 for p in range(n)}
    out, _ = q.run({"A": A, "B": B, **bindings}, backend="cpu")
    np.testing.assert_array_equal(out["C"], np.full((2, 4), 3.0 + n))
    np.testing.assert_array_equal(q(A=A, B=B, backend="cpu", **bindings)["C"], np.full((2, 4), 3.0 + n))
    assert "bound:" in q.explain(A=A, B=B, **bindings)
    with pytest.raises(gamut.UsageError, match="binding 'x0' matches no input"):
        q(**{f"x{p}": 1 for p in range(n)})


def test_positional_arguments_are_a_usage_error(q, ab):
    A, B = ab
    with pytest.raises(gamut.UsageError, match=r"keywords, q\(A=a, B=b\)"):
        q(A, B)


# 5. Did you mean; a float index vector.

def test_misspelt_binding_gets_did_you_mean(ab):
    s = gamut.compile(SCALED)
    A, B = ab
    for call in (s, s.explain):
        with pytest.raises(gamut.UsageError, match=r"binding 'tt' matches no input or parameter of the query "
                                                   r"\(did you mean 't'\?\)"):
            call(A=A, B=B, tt=1.0)
    with pytest.raises(gamut.UsageError, match=r"binding 'AA' .*\(did you mean 'A'\?\)"):
        s.run({"AA": A, "B": B, "t": 1.0})
    with pytest.raises(gamut.UsageError, match=r"binding 'zebra' matches no input or parameter of the query$"):
        s(A=A, B=B, t=1.0, zebra=2)
    with pytest.raises(gamut.UsageError, match=r"binding 'thread' .*\(did you mean the option 'threads'\?\)"):
        s(A=A, B=B, t=1.0, thread=2)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
def test_float_index_vector_is_one_data_error(dtype):
    agg = gamut.compile(AGG)
    P, R = np.ones((2, 3), np.float32), np.ones((3, 2), np.float32)
    g, h = np.zeros(2, dtype), np.zeros(2, np.int32)
    for call in (agg, agg.explain):
        with pytest.raises(gamut.DataError) as e:
            call(P=P, R=R, g=g, h=h, backend="cpu")
        msg = str(e.value)
        assert msg.startswith("data error: g: an index vector must hold integers, got f"), msg
        assert "used as an output index at <query>:1:" in msg
        assert msg.count("must hold integers") == 1, msg


# 6. Scalars: overflow, NumPy 0-d arrays.

def test_scalar_parameter_that_overflows_f32_is_an_error(ab):
    s = gamut.compile(SCALED)
    A, B = ab
    with pytest.raises(gamut.DataError, match=r"^data error: t: 1e\+39 is too large for f32, the type it takes at "
                                              r"<query>:1:\d+ \(it would become inf\)"):
        s(A=A, B=B, t=1e39, backend="cpu")
    with pytest.raises(gamut.DataError, match="too large for f32"):
        s(A=A, B=B, t=-3.5e38, backend="cpu")
    # the same literal in the query is a query error
    with pytest.raises(gamut.QueryError, match="too large for f32"):
        gamut.compile(SCALED.replace("a * t", "a * 1e39"))(A=A, B=B, backend="cpu")
    # f64 math takes it; inf itself is a value, not an overflow
    np.testing.assert_array_equal(s(A=A.astype(np.float64), B=B, t=1e39, backend="cpu")["C"], reference(A, B) * 1e39)
    assert np.isinf(s(A=A, B=B, t=float("inf"), backend="cpu")["C"]).any()
    assert s(A=A, B=B, t=3e38, backend="cpu")["C"].dtype == np.float32   # fits f32: no error


@pytest.mark.parametrize("t", [np.float32(2.5), np.array(2.5), np.array(2.5, np.float32), np.float16(2.5),
                               np.array(5, np.int64), np.int8(5), np.array(True)])
def test_numpy_0d_arrays_and_scalars_are_numbers(ab, t):
    s = gamut.compile(SCALED)
    A, B = ab
    np.testing.assert_array_equal(s(A=A, B=B, t=t, backend="cpu")["C"],
                                  (reference(A, B) * float(t)).astype(np.float32))


def test_unsupported_numpy_scalars_name_their_type(ab):
    s = gamut.compile(SCALED)
    A, B = ab
    with pytest.raises(gamut.DataError, match=r"^data error: t: element type complex128"):
        s(A=A, B=B, t=np.complex128(1 + 2j), backend="cpu")
    with pytest.raises(gamut.DataError, match=r"^data error: t: element type str"):
        s(A=A, B=B, t=np.str_("2.5"), backend="cpu")


def test_lists_and_other_objects_say_what_they_are(q, ab):
    A, B = ab
    with pytest.raises(gamut.UsageError, match=r"B: a list is neither an array .* convert it with numpy.asarray"):
        q(A=A, B=[[1.0]], backend="cpu")
    with pytest.raises(gamut.UsageError, match=r"B: a\w* object is neither an array"):
        q(A=A, B=object(), backend="cpu")
