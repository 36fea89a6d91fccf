"""gamut.dask (issue 40, docs/scale-out.md) on a LocalCluster of two worker processes, CPU engine:
every kind of output over dask arrays whose chunks do not divide the sizes equals one q(...)
call on the whole data (integer-valued data: exact), also split along j and on a grid of both;
plain arrays and scalars beside dask arrays; submit() leaves dask collections; queries that
cannot split run as one block; a worker killed mid-run is survived. One cluster for the module
(starting one takes seconds)."""
import os
import signal
import time

import numpy as np
import pytest

dask = pytest.importorskip("dask")
da = pytest.importorskip("dask.array")
distributed = pytest.importorskip("distributed")

import gamut  # noqa: E402
import gamut.dask  # noqa: E402

S = "where (i, j) { s = 0; reduce (k) { s += A[i, k] * B[k, j]; } "
QUERIES = {
    "project": S + "C[i, j] = s; }",
    "project_transposed": S + "C[j, i] = s; }",
    "row_and_scalar_aggregates": S + "R[i] += s; lo min= s; hi max= s; total += s; }",
    "column_aggregate": S + "Col[j] max= s; }",
    "groups": S + "T[g[i], h[j]] += s; }",
    "any_all": S + "Any[g[i]] |= s > 4; All[h[j]] &= s > -30; }",
    "join": "where (i, j) when (g[i] == h[j]) { s = 0; reduce (k) { s += A[i, k] * B[k, j]; } Area[g[i]] += s; }",
    "select": S + "if (s > 3) emit L(i, j, s); }",
    "select_none": S + "if (s > 1000) emit L(i, j, s); }",                   # every block's list empty
    "select_first_rows": S + "if (i < 10 && s > 0) emit L(i, j, s); }",      # the later blocks' empty
    "top_ties": S + "emit L(j, s) top 17 by s; }",
    "bottom_per_i": S + "emit L(i, j, s) bottom 3 by s per i; }",
    "top_per_j": S + "emit L(i, s) top 2 by s per j; }",
    "top_n_param": S + "emit L(i, j, s) top n by s; }",
    "distinct": S + "emit D(g[i], h[j], s > 0) distinct; }",
    "mixed": S + "C[i, j] = s; T[g[i]] += s; if (s > 5) emit L(i, j); emit B1(i, j, s) bottom 4 by s; }",
    # Finishing steps run once on the merged outputs (a placed one, C, among them).
    "finish": S + "C[i, j] = s; R[i] += s; T[g[i]] += s; Cnt[g[i]] += 1; } finish { Mean[x] = T[x] / max(Cnt[x], 1); "
              "Share[x] = f64(T[x]) / sum(T); Norm[r, c] = C[r, c] / (R[r] + 1000); Pairs = sum(Cnt) * n; }",
}
BATCHED = ("batch (b) where (i, j) { d = inf; reduce (k) { d min= A[b, i, k] + B[b, k, j]; } O[b, i, j] = d; "
           "emit L(b, i, j, d) bottom 5 by d; }")
M, N, K = 53, 41, 7


def data(m=M, n=N, k=K, seed=7):
    rng = np.random.default_rng(seed)
    return dict(A=rng.integers(-3, 4, (m, k)).astype(np.float32), B=rng.integers(-2, 5, (k, n)).astype(np.float32),
                g=rng.integers(0, 6, m).astype(np.int32), h=rng.integers(0, 6, n).astype(np.int32), n=9)


def pick(q, d):
    return {x: d[x] for x in q.inputs + q.params}


def assert_same(got, want, what):
    assert list(got) == list(want), what
    for name, w in want.items():
        g = got[name]
        if isinstance(w, dict):
            assert list(g) == list(w), f"{what}: columns of {name}"
            for c in w:
                assert g[c].dtype == w[c].dtype, f"{what}: {name}[{c}]"
                np.testing.assert_array_equal(g[c], w[c], err_msg=f"{what}: {name}[{c}]")
        else:
            g = np.asarray(g)
            assert g.dtype == w.dtype and g.shape == w.shape, f"{what}: {name} {g.dtype}{g.shape} vs {w.dtype}{w.shape}"
            np.testing.assert_array_equal(g, w, err_msg=f"{what}: {name}")


@pytest.fixture(scope="module")
def client():
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0",
                                       silence_logs=40)
    c = distributed.Client(cluster)
    yield c
    c.close()
    cluster.close()


def chunked(d, q, rows=None, cols=None):
    """The inputs as dask arrays: A and g in row chunks, B and h in column chunks."""
    out = dict(pick(q, d))
    for name, dim, chunks in (("A", 0, rows), ("g", 0, rows), ("B", 1, cols), ("h", 0, cols)):
        if name in out and chunks is not None:
            c = tuple(chunks if k == dim else -1 for k in range(out[name].ndim))
            out[name] = da.from_array(out[name], chunks=c)
    return out


def worker_holding_a_block(client):
    """The first worker seen holding a finished block's result (waits up to 60 s for one)."""
    deadline = time.time() + 60
    while time.time() < deadline:
        held = [w for w, keys in client.has_what().items() if any("run_block" in str(k) for k in keys)]
        if held:
            return held[0]
        time.sleep(0.01)
    raise AssertionError("no block finished within 60 s")


@pytest.mark.parametrize("name", list(QUERIES))
def test_every_output_kind_equals_one_call(client, name):
    q = gamut.compile(QUERIES[name])
    d = data()
    want = q(**pick(q, d), backend="cpu")
    # Rows in chunks of 17 (53 = 17 + 17 + 17 + 2), columns whole: four blocks, merged in this
    # process where every output merges; then a grid with columns in 12s (the tree on the workers).
    for rows, cols in ((17, None), (17, 12)):
        got = gamut.dask.run(q, **chunked(d, q, rows, cols), backend="cpu", threads=1, client=client)
        assert_same(got, want, f"{name} rows {rows} cols {cols}")


@pytest.mark.parametrize("name", list(QUERIES))
def test_persisted_inputs_run_without_a_graph(client, name, monkeypatch):
    """Inputs persisted in the grid's chunks: run() submits a future per block on the chunks'
    futures (no graph built, optimized and sent each call) wherever every output merges, merged in
    this process (four blocks) or as a tree of futures on the workers (a grid of 16); the result
    is one call's either way. Queries with placed or finished outputs keep the graph."""
    q = gamut.compile(QUERIES[name])
    d = data()
    want = q(**pick(q, d), backend="cpu")
    took = []
    direct = gamut.dask._direct
    monkeypatch.setattr(gamut.dask, "_direct", lambda *a: took.append(direct(*a)) or took[-1])
    for rows, cols in ((17, None), (17, 12)):
        inputs = {k: (client.persist(v) if isinstance(v, da.Array) else v) for k, v in chunked(d, q, rows, cols).items()}
        with distributed.get_task_stream(client) as ts:
            got = gamut.dask.run(q, **inputs, backend="cpu", threads=1, client=client)
        assert_same(got, want, f"{name} persisted, rows {rows} cols {cols}")
        # Without a graph where every output merges and the inputs' chunks are the grid's (a
        # query that keeps i whole, select_first_rows, rechunks A in the graph).
        g = gamut.dask._Grid(q, inputs, {"backend": "cpu"}, client)
        fits = all(v.chunks == g.wanted[k] for k, v in inputs.items() if isinstance(v, da.Array))
        expected = fits and not gamut.dask._placed(g) and not g.layout["finish"]
        assert expected or name not in ("select", "top_ties", "bottom_per_i", "top_per_j", "distinct", "groups")
        assert (took[-1] is not None) == expected, (name, rows, cols)
        if took[-1] is not None:
            blocks = [t for t in ts.data if "_run_block" in str(t["key"])]
            merges = [t for t in ts.data if "_merge" in str(t["key"])]
            assert len(blocks) == 4 * (1 if cols is None else 4), len(blocks)
            assert (len(merges) > 0) == (cols is not None), len(merges)


def test_run_takes_the_current_client(client, monkeypatch):
    """Without client=, run() computes on Dask's current scheduler: where that is a distributed
    client (the default one), as if it were given: persisted inputs take the path without a graph
    there, and the blocks are placed where their chunks lie."""
    q = gamut.compile(QUERIES["bottom_per_i"])
    d = data()
    called = []
    direct = gamut.dask._direct
    monkeypatch.setattr(gamut.dask, "_direct", lambda *a: called.append(a[2]) or direct(*a))
    inputs = {k: (client.persist(v) if isinstance(v, da.Array) else v) for k, v in chunked(d, q, 17, None).items()}
    with client.as_current():
        got = gamut.dask.run(q, **inputs, backend="cpu")
    assert called == [client]
    assert_same(got, q(**pick(q, d), backend="cpu"), "the current client")
    with dask.config.set(scheduler="sync"):   # another scheduler asked: the graph, computed there
        assert gamut.dask._current_client() is None
        got = gamut.dask.run(q, **chunked(d, q, 17, None), backend="cpu")
    assert_same(got, q(**pick(q, d), backend="cpu"), "the synchronous scheduler")


def test_direct_run_raises_a_blocks_error(client, monkeypatch):
    """A block's own error on the path without a graph comes back as the library raised it."""
    q = gamut.compile(QUERIES["select"])
    d = data()
    called = []
    direct = gamut.dask._direct
    monkeypatch.setattr(gamut.dask, "_direct", lambda *a: called.append(1) or direct(*a))
    A = client.persist(da.from_array(d["A"], chunks=(10, K)))
    with pytest.raises(gamut.DataError, match="B"):
        gamut.dask.run(q, A=A, B=d["B"][:3], backend="cpu", client=client)
    assert called == [1]   # (raised by a block, through _direct's gather)


def test_direct_run_survives_a_killed_worker(client):
    """The futures of run() without a graph: a worker killed while its blocks run, Dask reruns
    what it held (its chunks of the persisted inputs included) and the result is the whole call's."""
    import threading
    q = gamut.compile(S + "T[g[i]] += s; if (s > 40) emit L(i, j, s); }")
    d = data(m=1200, n=600, k=400, seed=11)
    want = q(**pick(q, d), backend="cpu")
    inputs = {k: (client.persist(v) if isinstance(v, da.Array) else v) for k, v in chunked(d, q, 50).items()}
    distributed.wait([v for v in inputs.values() if isinstance(v, da.Array)])
    pids = client.run(os.getpid)
    got = {}
    t = threading.Thread(target=lambda: got.update(gamut.dask.run(q, **inputs, backend="cpu", threads=1, client=client)))
    t.start()
    victim = worker_holding_a_block(client)
    assert t.is_alive(), "the run ended before the kill: make it longer"
    os.kill(pids[victim], signal.SIGKILL)
    t.join(120)
    assert not t.is_alive()
    assert_same(got, want, "after a killed worker")
    client.wait_for_workers(2, timeout=60)


def test_columns_alone_and_batches(client):
    q = gamut.compile(QUERIES["bottom_per_i"])
    d = data()
    got = gamut.dask.run(q, **chunked(d, q, None, 9), backend="cpu", client=client)
    assert_same(got, q(**pick(q, d), backend="cpu"), "columns only")
    assert "5 blocks along j" in gamut.dask.plan(q, **chunked(d, q, None, 9))
    qb = gamut.compile(BATCHED)
    rng = np.random.default_rng(3)
    A, B = rng.integers(0, 9, (3, 23, 5)).astype(np.int32), rng.integers(0, 9, (3, 5, 19)).astype(np.int32)
    got = gamut.dask.run(qb, A=da.from_array(A, chunks=(3, 7, 5)), B=da.from_array(B, chunks=(3, 5, 8)),
                         backend="cpu", client=client)
    assert_same(got, qb(A=A, B=B, backend="cpu"), "batched")


def test_plain_arrays_scalars_and_the_mapping_form(client):
    q = gamut.compile(QUERIES["top_n_param"])
    d = data()
    # B is a NumPy array (sent once); n a NumPy integer.
    got = gamut.dask.run(q, {"A": da.from_array(d["A"], chunks=(10, K)), "B": d["B"], "n": np.int64(9)},
                         backend="cpu", client=client)
    assert_same(got, q(A=d["A"], B=d["B"], n=9, backend="cpu"), "plain B")


def test_every_call_runs_its_blocks(client):
    """Two calls on the same (persisted) inputs run their blocks twice: a second call must not
    take the first one's results from the scheduler (pure task keys did, and a benchmark of
    repeated calls then timed nothing)."""
    q = gamut.compile(QUERIES["mixed"])
    d = data()
    inputs = {k: (client.persist(v) if isinstance(v, da.Array) else v) for k, v in chunked(d, q, 20, None).items()}
    want = q(**pick(q, d), backend="cpu")
    with distributed.get_task_stream(client) as ts:
        for _ in range(2):
            assert_same(gamut.dask.run(q, **inputs, backend="cpu", client=client), want, "repeated call")
    blocks = [t for t in ts.data if "_run_block" in str(t["key"])]
    assert len(blocks) == 2 * 3, [str(t["key"]) for t in ts.data]


def test_blocks_run_where_their_row_chunks_lie(client):
    """Persisted row chunks, one on each worker, and a column operand on the first worker alone:
    each block runs on the worker that holds its row chunk (its task names that worker), not
    beside the column operand, where Dask would put both blocks by the bytes it would move."""
    a, b = sorted(client.scheduler_info()["workers"])[:2]
    q = gamut.compile(QUERIES["select"])
    d = data()
    parts = [client.scatter(d["A"][:30], workers=[a]), client.scatter(d["A"][30:], workers=[b])]
    A = client.persist(da.concatenate([da.from_delayed(f, (n, K), dtype=np.float32) for f, n in zip(parts, (30, M - 30))]))
    B = client.persist(da.from_delayed(client.scatter(d["B"], workers=[a]), (K, N), dtype=np.float32))
    distributed.wait([A, B])
    _, _, _, grid = gamut.dask._graph(q, None, dict(A=A, B=B, backend="cpu"), client)
    placed = [next(iter(cell.dask.layers.values())).annotations for cell in (grid[0][0], grid[1][0])]
    assert [p.get("workers") for p in placed] == [[a], [b]], placed
    with distributed.get_task_stream(client) as ts:
        assert_same(gamut.dask.run(q, A=A, B=B, backend="cpu", client=client), q(A=d["A"], B=d["B"], backend="cpu"),
                    "placed blocks")
    ran = sorted(t["worker"] for t in ts.data if "_run_block" in str(t["key"]))
    assert ran == sorted([a, b]), ran


def test_the_last_merge_keeps_only_the_lists_own_columns():
    """Blocks.merge(..., own_only=True), the last merge of a run: the lists' own columns, equal to
    those of a merge that keeps the provenance (a per-i list along i, read in place; and a
    global top list, merged by key)."""
    d = data()
    for text, axis in ((QUERIES["bottom_per_i"], "i"), (QUERIES["top_ties"], "i"), (QUERIES["mixed"], "j")):
        q = gamut.compile(text)
        dtypes = {k: gamut.dask._gamut_dtype(k, d[k].dtype) for k in q.inputs}
        blocks = gamut._gamut.Blocks(q, dtypes)
        cut = 30 if axis == "i" else 20
        parts = []
        for lo, hi in ((0, cut), (cut, M if axis == "i" else N)):
            inputs = pick(q, d)
            if axis == "i":
                inputs["A"] = d["A"][lo:hi]
            else:
                inputs["B"] = d["B"][:, lo:hi]
            out, _ = q.run(inputs, provenance=True, finish=False, backend="cpu")
            lists = {k: v for k, v in out.items() if isinstance(v, dict)}
            parts.append(blocks.to_whole(lists, lo if axis == "i" else 0, lo if axis == "j" else 0))
        limits = blocks.limits({k: d[k] for k in q.params})
        full = blocks.merge(axis, parts, limits)
        own = blocks.merge(axis, parts, limits, own_only=True)
        for name, cols in own.items():
            assert list(cols) == [c for c in full[name] if not c.startswith("__")], (text, list(cols))
            for c in cols:
                np.testing.assert_array_equal(cols[c], full[name][c])
            assert len(next(iter(cols.values()))) > 0


def test_repeated_calls_on_a_plain_array(client):
    """A plain array is scattered on every call. With its content's hash as the key, a call right
    after another on the same array got the key the previous call was releasing, and now and then
    (about 1 call in 60 here) lost it: "cancelled for reason: lost dependencies"."""
    q = gamut.compile(QUERIES["mixed"])
    d = data()
    inputs = chunked(d, q, 20, None)
    assert any(not isinstance(v, da.Array) and np.ndim(v) > 0 for v in inputs.values())
    want = q(**pick(q, d), backend="cpu")
    for r in range(60):
        assert_same(gamut.dask.run(q, **inputs, backend="cpu", client=client), want, f"call {r}")


def test_submit_leaves_dask_collections(client):
    q = gamut.compile(QUERIES["mixed"])
    d = data()
    out = gamut.dask.submit(q, **chunked(d, q, 20, 15), backend="cpu")
    assert isinstance(out["C"], da.Array) and out["C"].chunks == ((20, 20, 13), (15, 15, 11))
    want = q(**pick(q, d), backend="cpu")
    np.testing.assert_array_equal(out["C"][5:30, 3:7].compute(scheduler=client.get), want["C"][5:30, 3:7])
    kept = gamut.dask.submit(q, **chunked(d, q, 20, 15), backend="cpu", client=client)   # persisted
    distributed.wait(list(kept.values()))
    got = dict(zip(kept, client.compute(list(kept.values()), sync=True)))
    assert_same(got, want, "submit")


def test_queries_that_cannot_split_run_as_one_block(client):
    q = gamut.compile("where (i, j) { s = 0; reduce (k) { s += A[i, k] * A[j, k]; } C[i, j] = s; emit L(i, j, s) top 5 by s; }")
    A = data()["A"]
    line = gamut.dask.plan(q, A=da.from_array(A, chunks=(10, K)))
    assert "one block along i" in line and "A is read both along i" in line, line
    assert_same(gamut.dask.run(q, A=da.from_array(A, chunks=(10, K)), backend="cpu", client=client),
                q(A=A, backend="cpu"), "self-join")
    masked = gamut.compile("where (i, j) when (i != j) { s = 0; reduce (k) { s += A[i, k] * B[k, j]; } C[i, j] = s; }")
    d = data()
    assert "reads the value of i" in gamut.dask.plan(masked, **chunked(d, masked, 10, 10))
    assert_same(gamut.dask.run(masked, **chunked(d, masked, 10, 10), backend="cpu", client=client),
                masked(A=d["A"], B=d["B"], backend="cpu"), "mask on i != j")


KNN = ("where (i, j) { dist = 0; reduce (k) { let t = Q[i, k] - X[j, k]; dist += t * t; } "
       "emit Nearest(i, j, dist) bottom 4 by dist per i; emit Closest(j, i, dist) bottom 9 by dist; }")


def test_knn_blocks_keep_the_one_sided_rewrite(client):
    """kNN under tf32 (issue 40): blocks run with provenance keep the one-sided rewrite (norms and
    a cross term; the CPU engine runs it as the GPU's does), so the cluster's result equals one
    call's bit for bit, although the expanded form rounds unlike the written one (real-valued
    data, off the origin). Q in row chunks, X whole and then in chunks too: the per-i lists and
    the global bottom 9 merge by the blocks' hidden key and (b, i, j)."""
    q = gamut.compile(KNN)
    rng = np.random.default_rng(11)
    Q = (3 + rng.standard_normal((37, 24))).astype(np.float32)
    X = (3 + rng.standard_normal((29, 24))).astype(np.float32)
    want = q(Q=Q, X=X, backend="cpu", f32_math="tf32")
    written = q(Q=Q, X=X, backend="cpu", f32_math="tf32", as_written=True)
    assert not np.array_equal(want["Nearest"]["dist"], written["Nearest"]["dist"]), "the two forms must differ"
    out, stats = q.run({"Q": Q[:10], "X": X}, provenance=True, backend="cpu", f32_math="tf32")
    assert stats["rewrites"][-1] == "expand-squares", stats["rewrites"]
    assert list(out["Nearest"]) == ["i", "j", "dist", "__key", "__b", "__i", "__j"]
    for cols in (None, 8):
        xs = X if cols is None else da.from_array(X, chunks=(cols, -1))
        got = gamut.dask.run(q, Q=da.from_array(Q, chunks=(10, -1)), X=xs, backend="cpu", f32_math="tf32",
                             threads=1, client=client)
        assert_same(got, want, f"kNN, X chunks {cols}")


def test_errors_are_gamut_errors(client):
    q = gamut.compile(QUERIES["project"])
    d = data()
    with pytest.raises(gamut.UsageError, match="devices="):
        gamut.dask.run(q, **chunked(d, q, 10), devices=2, client=client)
    with pytest.raises(gamut.UsageError, match="matches no input"):
        gamut.dask.run(q, **chunked(d, q, 10), Z=d["A"], client=client)
    # A block's own error (B's rows do not match A's columns) comes back as the library raised it.
    with pytest.raises(gamut.DataError):
        gamut.dask.run(q, A=da.from_array(d["A"], chunks=(10, K)), B=d["B"][:3], backend="cpu", client=client)


def test_a_killed_worker_is_survived(client):
    """A worker killed (SIGKILL) while blocks run: Dask reruns what it held and the result is
    still the whole call's."""
    q = gamut.compile(S + "T[g[i]] += s; if (s > 40) emit L(i, j, s); }")
    d = data(m=1200, n=600, k=400, seed=11)
    want = q(**pick(q, d), backend="cpu")
    pids = client.run(os.getpid)
    fut = client.compute(list(gamut.dask.submit(q, **chunked(d, q, 50), backend="cpu", threads=1).values()))
    victim = worker_holding_a_block(client)   # then killed
    assert not all(f.done() for f in fut), "the run ended before the kill: make it longer"
    os.kill(pids[victim], signal.SIGKILL)
    got = dict(zip(("T", "L"), client.gather(fut)))
    assert_same(got, want, "after a killed worker")
    client.wait_for_workers(2, timeout=60)   # (the nanny restarts it for the next tests)


def test_gpu_cluster_pins_a_gpu_per_worker():
    """Without dask-cuda, gamut.dask.gpu_cluster starts a worker process per GPU with
    CUDA_VISIBLE_DEVICES set to it (what the device test and bench/dask_scale.py use), and a
    scheduler that keeps replicas; no GPU is needed to start it."""
    try:
        import dask_cuda  # noqa: F401
        pytest.skip("dask_cuda is installed: gpu_cluster is its LocalCUDACluster")
    except ImportError:
        pass
    with gamut.dask.gpu_cluster(2, silence_logs=40) as cluster, distributed.Client(cluster) as c:
        c.wait_for_workers(2, timeout=60)
        seen = c.run(lambda: os.environ.get("CUDA_VISIBLE_DEVICES"))
        assert sorted(seen.values()) == ["0", "1"], seen
        assert all(w["nthreads"] == 1 for w in c.scheduler_info()["workers"].values())
        # Replicas stay (no active memory manager), so a replicated column operand is not moved again.
        assert not c.run_on_scheduler(lambda dask_scheduler: dask_scheduler.extensions["amm"].running)
