"""gamut.dask on GPU workers (issue 40; the device machine, two GPUs): a cluster of one worker per
GPU (gamut.dask.gpu_cluster: dask-cuda's LocalCUDACluster where it imports, else a worker process
per GPU with CUDA_VISIBLE_DEVICES set), the GPU engine in every task; every kind of output over
chunks that do not divide the sizes equals the CPU engine's one call (integer-valued data: exact).
With CuPy, CuPy chunks are read in place and the placed outputs stay CuPy on the workers.
Skips without dask/distributed (not installable there: carry them, tools/device_prebuild.sh
WITH_DASK=1) and without two GPUs."""
import os

import numpy as np
import pytest

da = pytest.importorskip("dask.array")
distributed = pytest.importorskip("distributed")

import gamut  # noqa: E402
import gamut.dask  # noqa: E402
from test_dask import BATCHED, KNN, QUERIES, assert_same, chunked, data, pick  # noqa: E402

pytestmark = pytest.mark.gpu


@pytest.fixture(scope="module")
def client():
    if not gamut.gpu_available():
        pytest.skip("no usable GPU: " + gamut.gpu_unavailable_reason())
    if gamut.dask._device_count() < 2:
        pytest.skip("needs two CUDA devices")
    cluster = gamut.dask.gpu_cluster(2)
    c = distributed.Client(cluster)
    c.wait_for_workers(2, timeout=120)
    yield c
    c.close()
    cluster.close()


def test_one_worker_per_gpu(client):
    seen = client.run(lambda: os.environ.get("CUDA_VISIBLE_DEVICES", ""))
    assert sorted(v.split(",")[0] for v in seen.values()) == ["0", "1"], seen


@pytest.mark.parametrize("name", list(QUERIES))
def test_every_output_kind_on_gpu_workers(client, name):
    q = gamut.compile(QUERIES[name])
    d = data(m=301, n=203, k=37)
    want = q(**pick(q, d), backend="cpu")
    for rows, cols in ((97, None), (97, 80)):
        got = gamut.dask.run(q, **chunked(d, q, rows, cols), backend="gpu", client=client)
        assert_same(got, want, f"{name} rows {rows} cols {cols}")


def test_batched_on_gpu_workers(client):
    qb = gamut.compile(BATCHED)
    rng = np.random.default_rng(3)
    A, B = rng.integers(0, 9, (3, 70, 5)).astype(np.int32), rng.integers(0, 9, (3, 5, 61)).astype(np.int32)
    got = gamut.dask.run(qb, A=da.from_array(A, chunks=(3, 33, 5)), B=da.from_array(B, chunks=(3, 5, 40)),
                         backend="gpu", client=client)
    assert_same(got, qb(A=A, B=B, backend="cpu"), "batched")


def test_knn_blocks_keep_the_one_sided_rewrite_on_gpu_workers(client):
    """kNN under tf32 (issue 40): every block runs norms and a tensor-core cross term (the
    one-sided rewrite, kept under provenance), and the merged lists equal the CPU engine's one
    call (integer-valued data: every form's sums exact, many ties, decided by (b, i, j))."""
    q = gamut.compile(KNN)
    rng = np.random.default_rng(5)
    Q = rng.integers(-3, 4, (301, 64)).astype(np.float32)
    X = rng.integers(-3, 4, (203, 64)).astype(np.float32)
    out, stats = q.run({"Q": Q[:97], "X": X}, provenance=True, backend="gpu", f32_math="tf32")
    assert stats["rewrites"][-1] == "expand-squares" and stats["math"] == "tf32", stats
    want = q(Q=Q, X=X, backend="cpu", as_written=True)
    for cols in (None, 80):
        xs = X if cols is None else da.from_array(X, chunks=(cols, -1))
        got = gamut.dask.run(q, Q=da.from_array(Q, chunks=(97, -1)), X=xs, backend="gpu", f32_math="tf32",
                             client=client)
        assert_same(got, want, f"kNN, X chunks {cols}")


def test_cupy_chunks_stay_on_the_gpus(client):
    cupy = pytest.importorskip("cupy")
    q = gamut.compile(QUERIES["mixed"])
    d = data(m=301, n=203, k=37)
    want = q(**pick(q, d), backend="cpu")
    A = da.from_array(d["A"], chunks=(97, 37)).map_blocks(cupy.asarray)
    g = da.from_array(d["g"], chunks=97).map_blocks(cupy.asarray)
    out = gamut.dask.submit(q, A=A, B=d["B"], g=g, backend="gpu", client=client)   # persisted on the workers
    blocks = client.compute(list(out["C"].to_delayed().ravel()))
    kinds = client.gather([client.submit(lambda x: type(x).__module__.split(".")[0], b) for b in blocks])
    assert set(kinds) == {"cupy"}, kinds
    got = gamut.dask.run(q, A=A, B=d["B"], g=g, backend="gpu", client=client)
    assert isinstance(got["C"], cupy.ndarray)
    assert_same({k: (v.get() if isinstance(v, cupy.ndarray) else {c: x.get() for c, x in v.items()} if isinstance(v, dict)
                     else v) for k, v in got.items()}, want, "cupy")


@pytest.mark.parametrize("name", ["select", "top_ties", "bottom_per_i", "distinct", "groups"])
def test_persisted_cupy_chunks_run_without_a_graph(client, name, monkeypatch):
    """CuPy chunks persisted on the workers' GPUs, every output merged: run() submits a future per
    block on the chunks (no graph; test_dask.py's CPU test covers every output kind) and the
    result equals the CPU engine's one call, on a grid merged here and one merged on the workers."""
    cupy = pytest.importorskip("cupy")
    q = gamut.compile(QUERIES[name])
    d = data(m=301, n=203, k=37)
    want = q(**pick(q, d), backend="cpu")
    took = []
    direct = gamut.dask._direct
    monkeypatch.setattr(gamut.dask, "_direct", lambda *a: took.append(direct(*a)) or took[-1])
    for rows, cols in ((97, None), (60, 80)):
        inputs = {k: (client.persist(v.map_blocks(cupy.asarray)) if isinstance(v, da.Array) else v)
                  for k, v in chunked(d, q, rows, cols).items()}
        got = gamut.dask.run(q, **inputs, backend="gpu", client=client)
        assert took[-1] is not None, (name, rows, cols)
        host = {k: ({c: x.get() for c, x in v.items()} if isinstance(v, dict) else v.get() if isinstance(v, cupy.ndarray)
                    else v) for k, v in got.items()}
        assert_same(host, want, f"{name} persisted CuPy, rows {rows} cols {cols}")
