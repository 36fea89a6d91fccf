"""Every error class of the Python package: the CLI's categories, exit codes and messages."""
import numpy as np
import pytest

import gamut

SGEMM = "where (i, j) { a = 0; reduce (k) { a += A[i, k] * B[k, j]; } C[i, j] = a; }"


@pytest.fixture
def q():
    return gamut.compile(SGEMM)


@pytest.fixture
def ab():
    rng = np.random.default_rng(1)
    return rng.integers(-3, 4, (4, 3)).astype(np.float32), rng.integers(-3, 4, (3, 5)).astype(np.float32)


def test_hierarchy():
    for cls, code in [(gamut.QueryError, 1), (gamut.UsageError, 2), (gamut.DataError, 3), (gamut.DeviceError, 4)]:
        assert issubclass(cls, gamut.GamutError)
        assert cls.exit_code == code


def test_query_error_has_place():
    with pytest.raises(gamut.QueryError) as e:
        gamut.compile("where (i, j) {\n  a = 0;\n  reduce (k) { a += A[i, j]; }\n  C[i, j] = a;\n}", "bad.mmlt")
    assert str(e.value).startswith("bad.mmlt:3:")
    assert (e.value.file, e.value.line) == ("bad.mmlt", 3)
    assert e.value.column > 0
    assert "^" in str(e.value)   # the source line and a caret follow
    with pytest.raises(gamut.QueryError, match=r"<query>:1:\d+: error: .*missing|expected"):
        gamut.compile("where (i, j) { a = 0 reduce (k) { a += A[i, k]; } C[i, j] = a; }")


def test_usage_errors(q, ab, tmp_path):
    A, B = ab
    with pytest.raises(gamut.UsageError, match="cannot read query file"):
        gamut.load(str(tmp_path / "missing.mmlt"))
    with pytest.raises(gamut.UsageError, match="binding 'Z' matches no input"):
        q(A=A, B=B, Z=np.zeros(3, np.float32), backend="cpu")
    with pytest.raises(gamut.UsageError, match="backend 'tpu'"):
        q(A=A, B=B, backend="tpu")
    with pytest.raises(gamut.UsageError, match="f32_math 'fast'"):
        q(A=A, B=B, f32_math="fast")
    with pytest.raises(gamut.UsageError, match="neither an array"):
        q(A=A, B="not an array", backend="cpu")
    with pytest.raises(gamut.UsageError, match="None"):
        q(A=A, B=None, backend="cpu")
    with pytest.raises(gamut.UsageError, match="unknown option"):
        q.run({"A": A, "B": B}, colour="red")
    with pytest.raises(ValueError):   # UsageError is a ValueError too
        q(A=A, B=B, threads=-1, backend="cpu")


def test_data_errors(q, ab):
    A, B = ab
    with pytest.raises(gamut.DataError, match="^data error: B: input array is not bound"):
        q(A=A, backend="cpu")
    with pytest.raises(gamut.DataError, match="^data error: B: expected 2 dimensions"):
        q(A=A, B=B.ravel(), backend="cpu")
    with pytest.raises(gamut.DataError, match="^data error: B: extent 4 along axis 'k' disagrees"):
        q(A=A, B=np.zeros((4, 5), np.float32), backend="cpu")
    with pytest.raises(gamut.DataError, match="^data error: B: element type uint16 is not supported"):
        q(A=A, B=B.astype(np.uint16), backend="cpu")
    with pytest.raises(gamut.DataError, match="does not fit in 64 bits"):
        gamut.compile("where (i, j) { a = 0; reduce (k) { a += A[i, k] * B[k, j]; } C[i, j] = a * s; }")(
            A=A, B=B, s=2**70, backend="cpu")
    agg = gamut.compile("where (i, j) { a = 0; reduce (k) { a += P[i, k] * R[k, j]; } C[g[i], h[j]] += a; }")
    g = np.array([0, 1, -1, 0], np.int32)
    h = np.zeros(5, np.int64)
    with pytest.raises(gamut.DataError, match="^data error: g: index value -1 at position 2 is negative"):
        agg(P=A, R=B, g=g, h=h, backend="cpu")
    with pytest.raises(gamut.DataError, match="is a scalar parameter"):
        gamut.compile("where (i, j) { a = 0; reduce (k) { a += A[i, k] * B[k, j]; } C[i, j] = a * s; }")(
            A=A, B=B, s=np.ones(2, np.float32), backend="cpu")


def test_device_error_without_gpu(q, ab):
    if gamut.gpu_available():
        pytest.skip("a GPU is present")
    A, B = ab
    with pytest.raises(gamut.DeviceError, match="no usable CUDA device"):
        q(A=A, B=B, backend="gpu")


def test_errors_leave_the_query_usable(q, ab):
    A, B = ab
    for _ in range(3):
        with pytest.raises(gamut.DataError):
            q(A=A, B=B[:2], backend="cpu")
    np.testing.assert_array_equal(q(A=A, B=B, backend="cpu")["C"], A.astype(np.float64) @ B)
