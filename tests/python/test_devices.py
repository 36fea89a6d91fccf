"""devices= (several GPUs of one host, docs/multi-gpu.md): malformed values are usage errors
anywhere; on a GPU, devices=[0, 0] and [0, 0, 0] (the parts share GPU 0, each from its own
thread) give a single run's outputs for every kind of output, and the statistics name the
partition. More GPUs than visible is a DeviceError naming the count."""
import numpy as np
import pytest

import gamut

SGEMM_TOTAL = "where (i, j) { s = 0; reduce (k) { s += A[i, k] * B[k, j]; } C[i, j] = s; t += s; hi max= s; }"
QUERIES = {
    "project_and_aggregates": SGEMM_TOTAL,
    "groups": "where (i, j) { s = 0; reduce (k) { s += A[i, k] * B[k, j]; } T[g[i], h[j]] += s; }",
    "select": "where (i, j) { s = 0; reduce (k) { s += A[i, k] * B[k, j]; } if (s > 3) emit L(i, j, s); }",
    "top": "where (i, j) { s = 0; reduce (k) { s += A[i, k] * B[k, j]; } emit L(j, s) top 17 by s; }",
    "bottom_per_i": "where (i, j) { s = 0; reduce (k) { s += A[i, k] * B[k, j]; } emit L(i, j, s) bottom 3 by s per i; }",
    "distinct": "where (i, j) { s = 0; reduce (k) { s += A[i, k] * B[k, j]; } emit D(g[i], h[j], s > 0) distinct; }",
}


def data(m=37, n=29, k=11):
    rng = np.random.default_rng(7)
    return dict(A=rng.integers(-3, 4, (m, k)).astype(np.float32), B=rng.integers(-2, 5, (k, n)).astype(np.float32),
                g=rng.integers(0, 5, m).astype(np.int32), h=rng.integers(0, 5, n).astype(np.int32))


def bindings(name, d):
    q = gamut.compile(QUERIES[name])
    return q, {x: d[x] for x in q.inputs}


@pytest.mark.parametrize("bad", [0, -1, True, "two", "0,1", [], [0, -1], [0, "1"], 1.5])
def test_malformed_devices_are_usage_errors(bad):
    q = gamut.compile(SGEMM_TOTAL)
    d = data()
    with pytest.raises(gamut.UsageError) as e:
        q(A=d["A"], B=d["B"], devices=bad)
    assert "devices=" in str(e.value) and "\n" not in str(e.value)


def test_one_device_is_the_normal_run():
    q = gamut.compile(SGEMM_TOTAL)
    d = data()
    plain = q(A=d["A"], B=d["B"])
    one = q(A=d["A"], B=d["B"], devices=1)
    none = q(A=d["A"], B=d["B"], devices=None)
    for k in plain:
        np.testing.assert_array_equal(np.asarray(one[k]), np.asarray(plain[k]))
        np.testing.assert_array_equal(np.asarray(none[k]), np.asarray(plain[k]))


def test_explain_shows_the_partition_without_a_gpu():
    q = gamut.compile(SGEMM_TOTAL)
    d = data(m=40)
    text = q.explain(A=d["A"], B=d["B"], devices=[0, 0])
    assert "partition: 2 parts along i (0..20, 20..40) on GPUs 0,0\n" in text
    assert "partition" not in q.explain(A=d["A"], B=d["B"])


def test_several_devices_on_the_cpu_backend_is_a_usage_error():
    q = gamut.compile(SGEMM_TOTAL)
    d = data()
    with pytest.raises(gamut.UsageError, match=r"not backend='cpu'\)"):
        q(A=d["A"], B=d["B"], devices=2, backend="cpu")


def test_more_devices_than_visible_is_a_device_error():
    q = gamut.compile(SGEMM_TOTAL)
    d = data()
    with pytest.raises(gamut.DeviceError) as e:
        q(A=d["A"], B=d["B"], devices=99)
    assert str(e.value).startswith("device error: devices=99: ")
    assert "\n" not in str(e.value)


def _same(a, b):
    if isinstance(a, dict):
        assert a.keys() == b.keys()
        for c in a:
            np.testing.assert_array_equal(np.asarray(a[c]), np.asarray(b[c]))
    else:
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


@pytest.mark.gpu
@pytest.mark.parametrize("name", sorted(QUERIES))
@pytest.mark.parametrize("devices", [[0, 0], [0, 0, 0]])
def test_parts_sharing_one_gpu_equal_one_run(name, devices):
    q, b = bindings(name, data())
    one = q(**b)
    outputs, stats = q.run(b, devices=devices)
    assert stats["devices"] == devices
    assert stats["partition"].startswith(f"partition: {len(devices)} parts along ")
    assert stats["merge"].startswith("host")
    for k in one:
        _same(one[k], outputs[k])
