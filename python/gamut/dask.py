"""gamut on Dask: one query over the blocks of dask arrays, on a cluster (docs/scale-out.md).

    import dask.array as da, gamut, gamut.dask
    from distributed import Client
    client = Client("tcp://scheduler:8786")
    q = gamut.load("examples/q7_top128.mmlt")
    P = da.from_zarr("p.zarr")                  # rows chunked over the cluster
    out = gamut.dask.run(q, P=P, R=R, client=client)    # what q(P=P, R=R) returns

The query is split along the row chunks of the operands its row axis indexes (and along the
column chunks of those its column axis indexes); each block of the grid is one task that runs
the query on its blocks alone (gamut's Python package, with list provenance), and the blocks'
results merge as a tree of tasks by the library's rules (gamut._gamut.Blocks, which is
src/partition/blocks.h): dense outputs an axis indexes are placed side by side (as dask arrays,
left on the workers), other dense outputs reduced with their operator, lists merged (ordered
runs, distinct, the best N of top / bottom with the provenance that decides ties). Scheduling,
transfers, spilling and reruns after a lost worker are Dask's.
"""

import functools

import numpy as np

from . import _gamut
from ._errors import UsageError

try:
    import dask
    import dask.array as da
except ImportError as e:  # pragma: no cover - depends on the installation
    raise ImportError("gamut.dask needs dask[array] and distributed: pip install 'gamut[dask]'") from e

__all__ = ["run", "submit", "plan", "gpu_cluster"]

_OPTIONS = ("backend", "f32_math", "threads", "dims")
_NOT_HERE = ("stream", "devices", "provenance", "finish")
_FAN_IN = 4   # blocks merged by one task of the tree

_DTYPES = {"bool": "bool", "uint8": "u8", "int8": "i8", "int16": "i16", "int32": "i32", "int64": "i64",
           "float16": "f16", "bfloat16": "bf16", "float32": "f32", "float64": "f64"}


from ._dask_tasks import (_as_framework, _blocks, _finish, _finish_steps, _is_cupy, _merge,  # noqa: E402
                          _run_block, _take)

# ---------------------------------------------------------------------------------------------
# On the client: the grid of blocks and the graph.

def _gamut_dtype(name, dtype):
    key = "bfloat16" if str(dtype) == "bfloat16" else str(np.dtype(dtype))
    if key not in _DTYPES:
        raise UsageError(f"usage error: {name}: element type {dtype} is not supported "
                         "(bool u8 i8 i16 i32 i64 f16 bf16 f32 f64)")
    return _DTYPES[key]


def _split_call(q, inputs, keywords):
    """Bindings and options, as q(...) and q.run(mapping, ...) take them."""
    options, bindings = {}, dict(inputs or {})
    for k, v in keywords.items():
        if k in _OPTIONS and inputs is None:
            options[k] = v
        elif k in _NOT_HERE:
            raise UsageError(f"usage error: gamut.dask does not take {k}= (each task runs on its worker's device)")
        elif inputs is not None:
            if k not in _OPTIONS:
                raise UsageError(f"usage error: unknown option '{k}' ({', '.join(_OPTIONS)}); bindings go in the mapping")
            options[k] = v
        else:
            bindings[k] = v
    if not isinstance(q, _gamut.Query):
        raise UsageError("usage error: gamut.dask takes a gamut.Query (gamut.compile or gamut.load)")
    return bindings, options


def _scalar(v):
    if isinstance(v, (bool, int, float)):
        return v
    if isinstance(v, np.generic):
        return v.item()
    return None


class _Grid:
    """The blocks of one call: which axes split, where, and each operand as a dask array chunked
    for them."""

    def __init__(self, q, bindings, options, client=None):
        self.q, self.options, self.client = q, options, client
        self.scalars, arrays = {}, {}
        for k, v in bindings.items():
            s = _scalar(v)
            if s is not None:
                self.scalars[k] = s
            elif isinstance(v, da.Array):
                arrays[k] = v
            else:
                if not hasattr(v, "shape") or not hasattr(v, "dtype"):
                    v = np.asarray(v)
                arrays[k] = v
        self.cupy = any(isinstance(a, da.Array) and type(a._meta).__module__.startswith("cupy") for a in arrays.values())
        dtypes = tuple(sorted((k, _gamut_dtype(k, a.dtype)) for k, a in arrays.items()))
        self.spec = (q.text, q.name, dtypes)
        self.blocks = _blocks(*self.spec)
        self.layout = self.blocks.layout()
        self.limits = tuple(self.blocks.limits(self.scalars))
        ops = self.layout["operands"]
        for k in arrays:
            if k not in ops:
                raise UsageError(f"usage error: binding '{k}' matches no input of the query")
        self.row_chunks = self._chunks(arrays, ops, 0, self.layout["row_splits"])
        self.col_chunks = self._chunks(arrays, ops, 1, self.layout["col_splits"])
        self.inputs = arrays   # as given (dask arrays, NumPy / CuPy arrays)
        self.wanted = {k: self._wanted(k, a, ops[k]) for k, a in arrays.items()}   # the grid's chunks of each
        self.m = self._extent(ops, 0)
        self.n = self._extent(ops, 1)
        # The first row (column) of each block of the grid.
        self.row0 = [0] + np.cumsum(self.row_chunks or [0]).astype(int).tolist()
        self.col0 = [0] + np.cumsum(self.col_chunks or [0]).astype(int).tolist()

    def _chunks(self, arrays, ops, which, splits):
        """The chunks of the first dask operand that the axis indexes, where the axis splits."""
        if not splits:
            return None
        for k in self.q.inputs:
            a = arrays.get(k)
            dim = ops[k][which] if k in ops else -1
            if isinstance(a, da.Array) and dim >= 0 and len(a.chunks[dim]) > 1:
                return tuple(int(c) for c in a.chunks[dim])
        return None

    def _extent(self, ops, which):
        """The extent of the row (0) or column (1) axis: the length of an operand it indexes."""
        for k, a in self.inputs.items():
            if ops[k][which] >= 0:
                return int(a.shape[ops[k][which]])
        return np.nan

    @functools.cached_property
    def arrays(self):
        """Every operand as a dask array in the grid's chunks (rechunked, or a plain array sent to
        the cluster once): what the graph of _graph reads."""
        return {k: self._chunked(k, a, self.wanted[k]) for k, a in self.inputs.items()}

    def _wanted(self, name, a, dims):
        """The chunks of operand `name` that the grid's blocks read: its row (column) dimension in
        the grid's row (column) chunks, any other dimension whole."""
        row_dim, col_dim = dims
        chunks = []
        for d, n in enumerate(a.shape):
            if d == row_dim and self.row_chunks is not None:
                if sum(self.row_chunks) != n:
                    raise _gamut_data_error(name, f"{n} rows along i, the other operands {sum(self.row_chunks)}")
                chunks.append(self.row_chunks)
            elif d == col_dim and self.col_chunks is not None:
                if sum(self.col_chunks) != n:
                    raise _gamut_data_error(name, f"{n} columns along j, the other operands {sum(self.col_chunks)}")
                chunks.append(self.col_chunks)
            else:
                chunks.append((int(n),))
        return tuple(chunks)

    def _chunked(self, name, a, chunks):
        if isinstance(a, da.Array):
            return a if a.chunks == chunks else a.rechunk(chunks)
        if self.client is not None:
            # Sent to the cluster once (not inside the graph); its blocks are cut there. (A key of
            # its own each call, hash=False: with the content's hash as key, a repeated call on the
            # same array got the key whose release the previous call had just sent, and the
            # scheduler dropped the data under it: "cancelled for reason: lost dependencies".)
            whole = da.from_delayed(dask.delayed(_identity)(self.client.scatter(a, hash=False)), shape=a.shape,
                                    dtype=a.dtype,
                                    meta=a[(slice(0, 0),) * a.ndim])
            return whole.rechunk(chunks)
        return da.from_array(a, chunks=chunks, asarray=False)

    def rows(self):
        return len(self.row_chunks) if self.row_chunks is not None else 1

    def cols(self):
        return len(self.col_chunks) if self.col_chunks is not None else 1

    def describe(self):
        lay = self.layout

        def axis(letter, what, chunks, splits, why):
            if chunks is not None:
                shown = ", ".join(map(str, chunks[:4])) + (", ..." if len(chunks) > 4 else "")
                return f"{len(chunks)} blocks along {letter} ({shown} {what})"
            return f"one block along {letter} ({why if not splits else 'no operand chunked along it'})"
        return (f"gamut.dask: {self.rows() * self.cols()} tasks; "
                f"{axis('i', 'rows', self.row_chunks, lay['row_splits'], lay['row_why'])}; "
                f"{axis('j', 'columns', self.col_chunks, lay['col_splits'], lay['col_why'])}")


def _gamut_data_error(name, what):
    from ._errors import DataError
    return DataError(f"data error: {name}: {what}")


def _tree(spec, axis, keys, limits, items, own=None, now=False, client=None):
    """Neighbours merged _FAN_IN at a time, in order, until one is left; the last merge (or a
    task of its own, for a single item) applies `own` (see _merge). Each merge is a delayed task;
    with `now`, merged here at once on values; with `client`, a future on it."""
    def call(f, *args):
        if now:
            return f(*args)
        if client is not None:
            return client.submit(f, *args, pure=False)
        return dask.delayed(f, pure=True)(*args)
    while len(items) > 1:
        last = len(items) <= _FAN_IN
        items = [call(_merge, spec, axis, keys, limits, own if last else None, *items[at:at + _FAN_IN])
                 for at in range(0, len(items), _FAN_IN)]
        if last:
            return items[0]
    return items[0] if own is None else call(_finish, items[0], own)


def _merge_now(spec, keys, limits, own, grid, client=None):
    """The tree of merges of _graph, on the blocks' results here (lines along j, then along i);
    with `client`, on its futures there (a future of the merged outputs)."""
    now = client is None
    lines = [_tree(spec, "j", keys, limits, line, now=now, client=client) for line in grid]
    return _tree(spec, "i", keys, limits, lines, own=own, now=now, client=client)


def _identity(x):
    return x


def _holders(client, arrays, keys):
    """The workers that hold each of these chunk keys of `arrays` (the chunks of persisted dask
    arrays), as {key: [address, ...]}; empty without a client."""
    if client is None or not keys:
        return {}
    from distributed import futures_of
    wanted = set(keys)
    return _who_has(client, [f for a in arrays for f in futures_of(a) if f.key in wanted])


_WHERE = {}   # (scheduler address, chunk key) -> the workers that held it when last asked


def _who_has(client, futures):
    """{key: [worker, ...]} of these futures, from the cache where every key is in it (a stale
    entry costs a block's locality, not its result: blocks may run elsewhere), else from the
    scheduler (one round trip)."""
    if not futures:
        return {}
    at = client.scheduler.address
    if all((at, f.key) in _WHERE for f in futures):
        return {f.key: _WHERE[(at, f.key)] for f in futures}
    try:
        found = {k: list(v) for k, v in client.who_has(futures).items() if v}
    except Exception:   # (a closed client, a lost scheduler: Dask then places the blocks itself)
        return {}
    if len(_WHERE) > 65536:
        _WHERE.clear()
    _WHERE.update(((at, k), v) for k, v in found.items())
    return found


def _where(holders, keys):
    """The workers that hold every one of `keys` (else those holding the first that is held)."""
    sets = [set(holders[k]) for k in keys if k in holders]
    if not sets:
        return None
    both = set.intersection(*sets)
    return sorted(both or sets[0])


def _placed(g):
    """Dense outputs whose every dimension is an axis and that a split axis indexes: placed as a
    dask array of the blocks' arrays (merged first along a split axis that does not index them),
    as {name: (by_row, by_col)}."""
    placed = {}
    for name, d in g.layout["dense"].items():
        by_row = d["row_dim"] >= 0 and g.row_chunks is not None
        by_col = d["col_dim"] >= 0 and g.col_chunks is not None
        if d["axes"] is not None and (by_row or by_col):
            placed[name] = (by_row, by_col)
    return placed


def _chunk_futures(a, chunks):
    """The futures of a persisted dask array's chunks (an object array over its chunk grid), where
    its chunks are `chunks`; else None."""
    from distributed import Future
    if a.chunks != chunks:
        return None
    graph = a.__dask_graph__()
    keys = list(dask.core.flatten(a.__dask_keys__()))
    futures = np.empty(len(keys), dtype=object)
    for at, key in enumerate(keys):
        f = graph.get(key)
        if not isinstance(f, Future):
            return None
        futures[at] = f
    return futures.reshape(a.numblocks)


def _merge_here(g, grid, values):
    """The blocks' results `values` (in the grid's order, gathered here) merged in this process."""
    it = iter(values)
    keys = tuple(list(g.layout["dense"]) + list(g.layout["lists"]))
    return _merge_now(g.spec, keys, g.limits, g.layout["lists"], [[next(it) for _ in line] for line in grid])


def _direct(q, g, client):
    """run() without a graph, where every dask operand is persisted in the grid's chunks and every
    output merges: a future per block (client.submit on the chunks' futures, placed as _graph
    places them), merged here (at most _FAN_IN blocks) or as a tree of futures on the cluster.
    Skips building, optimizing and sending a graph each call. None where it does not apply."""
    lay = g.layout
    if client is None or lay["finish"] or _placed(g):
        return None
    keys = tuple(list(lay["dense"]) + list(lay["lists"]))
    if not keys:
        return None
    ops = lay["operands"]
    grids, own_dims = {}, {}
    for k, a in g.inputs.items():
        if isinstance(a, da.Array):
            grids[k] = _chunk_futures(a, g.wanted[k])
            if grids[k] is None:
                return None
        elif not all(len(c) == 1 for c in g.wanted[k]):
            return None
    for k, a in g.inputs.items():
        if k not in grids:   # a plain array every block reads whole: sent once
            f = np.empty(1, dtype=object)
            f[0] = client.scatter(a, hash=False)   # (see _chunked: a key of its own each call)
            grids[k] = f.reshape((1,) * a.ndim)
        row_dim, col_dim = ops[k]
        own_dims[k] = (row_dim if g.row_chunks is not None else -1, col_dim if g.col_chunks is not None else -1)
    R, C = g.rows(), g.cols()
    cells = []
    for r in range(R):
        for c in range(C):
            names, values, own = list(g.scalars), list(g.scalars.values()), []
            for k, futures in grids.items():
                rd, cd = own_dims[k]
                idx = tuple(r if d == rd else c if d == cd else 0 for d in range(futures.ndim))
                names.append(k)
                values.append(futures[idx])
                if rd >= 0 or cd >= 0:
                    own.append(values[-1])
            cells.append((r, c, names, values, own))
    holders = _who_has(client, [f for cell in cells for f in cell[4]])
    grid = [[] for _ in range(R)]
    for r, c, names, values, own in cells:
        at = _where(holders, [f.key for f in own])
        where = {"workers": at, "allow_other_workers": True} if at else {}
        grid[r].append(client.submit(_run_block, g.spec, names, g.options, g.row0[r], g.col0[c], *values,
                                     pure=False, **where))
    if R * C <= _FAN_IN:
        merged = _merge_here(g, grid, client.gather([b for line in grid for b in line]))
    else:
        merged = client.gather(_merge_now(g.spec, keys, g.limits, lay["lists"], grid, client=client))
    return _returned(q, g, {}, merged)


def _graph(q, inputs, keywords, client, merge_here=False, made=None):
    """The graph of one call: its outputs (dask collections and delayed values), the merged
    outputs' delayed value, the grid (`made`, where the caller made it) and the grid's blocks (a
    delayed value each). With
    `merge_here`, where every output merges and the grid is at most _FAN_IN blocks, the merge is
    left out (whole is None): run() gathers the blocks and merges them in its own process, which
    saves a task and a transfer between workers per call."""
    g = made
    if g is None:
        bindings, options = _split_call(q, inputs, keywords)
        g = _Grid(q, bindings, options, client)
    lay, spec = g.layout, g.spec
    R, C = g.rows(), g.cols()
    # The blocks: a task each, on its blocks of every operand.
    delayed_of = {k: a.to_delayed() for k, a in g.arrays.items()}
    ops = lay["operands"]
    cells = []   # per block: the names, the values, and the keys of the chunks only it reads
    for r in range(R):
        for c in range(C):
            names, values, own = list(g.scalars), list(g.scalars.values()), []
            for k, blocks in delayed_of.items():
                row_dim, col_dim = ops[k]
                idx = tuple(r if d == row_dim and g.row_chunks is not None else
                            c if d == col_dim and g.col_chunks is not None else 0 for d in range(blocks.ndim))
                names.append(k)
                values.append(blocks[idx])
                if (g.row_chunks is not None and row_dim >= 0) or (g.col_chunks is not None and col_dim >= 0):
                    own.append(values[-1].key)
            cells.append((r, c, names, values, own))
    holders = _holders(client, list(g.arrays.values()), [key for cell in cells for key in cell[4]])
    grid = [[] for _ in range(R)]
    for r, c, names, values, own in cells:
        # A block runs where the chunks that it alone reads lie (data already in the cluster is
        # read in place; the operands every block reads whole go to it). Without this, Dask
        # puts every block beside the largest operand, the whole column operand, when that
        # lies on one worker only: the blocks then run one after another there.
        at = _where(holders, own)
        # (Not pure: every call runs its blocks. Pure keys let a call take an earlier call's
        # results still held by the scheduler, and a benchmark time nothing.)
        with dask.annotate(**({"workers": at, "allow_other_workers": True} if at else {})):
            grid[r].append(dask.delayed(_run_block, pure=False)(spec, names, g.options, g.row0[r], g.col0[c], *values))

    placed = _placed(g)
    merged_keys = tuple(k for k in list(lay["dense"]) + list(lay["lists"]) if k not in placed)
    batch = _batch_extent(g)

    out = {}
    for name, (by_row, by_col) in placed.items():
        d = lay["dense"][name]
        meta = _meta(g, d["dtype"], len(d["axes"]))
        pieces = []
        for r in (range(R) if by_row else [None]):
            line = []
            for c in (range(C) if by_col else [None]):
                # The blocks that hold this piece: more than one along an axis that does not
                # index the output, merged along it with the output's operator.
                cells = [grid[rr][cc] for rr in (range(R) if r is None else [r]) for cc in (range(C) if c is None else [c])]
                one = _tree(spec, "i" if r is None else "j", (name,), g.limits, cells)
                shape = tuple(batch if a == "b" else
                              (g.row_chunks[r] if by_row else g.m) if a == "i" else
                              (g.col_chunks[c] if by_col else g.n) for a in d["axes"])
                line.append(da.from_delayed(dask.delayed(_take)(one, name), shape=shape,
                                            dtype=np.dtype(_NUMPY[d["dtype"]]), meta=meta))
            pieces.append(line)
        out[name] = _assemble(pieces, d)

    if merge_here and not placed and not lay["finish"] and merged_keys and R * C <= _FAN_IN:
        return {}, None, g, grid
    if merged_keys:
        lines = [_tree(spec, "j", merged_keys, g.limits, line) for line in grid]
        whole = _tree(spec, "i", merged_keys, g.limits, lines, own=lay["lists"])
        for name in merged_keys:
            out[name] = dask.delayed(_take, pure=True)(whole, name)
    else:
        whole = None
    # Finishing steps: one task on the whole dense outputs, after every merge.
    if lay["finish"]:
        dense = list(lay["dense"])
        done = dask.delayed(_finish_steps, pure=True)(spec, dict(g.scalars), dense, *[out[k] for k in dense])
        for name in lay["finish"]:
            out[name] = dask.delayed(_take, pure=True)(done, name)
    return {k: out[k] for k in q.outputs}, whole, g, grid


_NUMPY = {"bool": "bool", "u8": "uint8", "i8": "int8", "i16": "int16", "i32": "int32", "i64": "int64",
          "f16": "float16", "f32": "float32", "f64": "float64"}


def _meta(g, dtype, ndim):
    if g.cupy:
        import cupy
        return cupy.empty((0,) * ndim, dtype=_NUMPY[dtype])
    return np.empty((0,) * ndim, dtype=_NUMPY[dtype])


def _batch_extent(g):
    if not g.layout["batched"]:
        return 1
    for a in g.inputs.values():
        return int(a.shape[0])
    return 1


def _assemble(pieces, d):
    """The grid of block arrays (rows of blocks along i, columns along j) as one dask array."""
    row_dim, col_dim = d["row_dim"], d["col_dim"]
    lines = [da.concatenate(line, axis=col_dim) if len(line) > 1 else line[0] for line in pieces]
    return da.concatenate(lines, axis=row_dim) if len(lines) > 1 else lines[0]


# ---------------------------------------------------------------------------------------------
# The interface.

def submit(q, inputs=None, /, *, client=None, **keywords):
    """The outputs of q over the blocks of its dask-array inputs, as dask collections, not
    computed: a dense output that a split axis indexes is a dask array of the blocks' arrays
    (chunks where the inputs' chunks are); other dense outputs and lists are dask.delayed values
    (an array; a dict of columns) that the tree of merges gives. With `client`, they are
    persisted on it (computing in the background; the results stay on the workers).

    Bindings and options as q(...) takes them (keywords), or a mapping and keyword options as
    q.run takes them. Options: backend, f32_math, threads, dims."""
    out, _, _, _ = _graph(q, inputs, keywords, client)
    if client is not None:
        keys = list(out)
        return dict(zip(keys, client.persist([out[k] for k in keys])))
    return out


def _current_client():
    """The distributed client Dask computes on now (the default one, which a new Client sets as
    Dask's scheduler), else None."""
    if dask.config.get("scheduler", None) not in ("dask.distributed", "distributed"):
        return None
    try:
        from distributed import default_client
        return default_client()
    except (ImportError, ValueError):
        return None


def run(q, inputs=None, /, *, client=None, **keywords):
    """What q(...) returns for the same data, computed over the blocks of the dask-array inputs
    on `client` (else Dask's current scheduler: its default distributed client where there is
    one): a dict of outputs, lists as dicts of columns. Arrays come back as NumPy arrays (CuPy
    where the inputs' chunks are CuPy)."""
    if client is None:
        client = _current_client()
    bindings, options = _split_call(q, inputs, keywords)
    g = _Grid(q, bindings, options, client)
    direct = _direct(q, g, client)
    if direct is not None:
        return direct
    out, whole, g, grid = _graph(q, inputs, keywords, client, merge_here=client is not None, made=g)
    if not out:
        # A few blocks whose outputs all merge: their results gathered here and merged here.
        flat = [b for line in grid for b in line]
        return _returned(q, g, {}, _merge_here(g, grid, client.gather(client.compute(flat))))
    # The placed dense outputs, the finished ones, and every merged output at once (one task, not
    # one per output).
    todo = {k: v for k, v in out.items() if isinstance(v, da.Array) or k in g.layout["finish"]}
    if whole is not None:
        todo[""] = whole
    keys = list(todo)
    if client is not None:
        values = client.gather(client.compute([todo[k] for k in keys]))
    else:
        values = dask.compute(*[todo[k] for k in keys])
    got = dict(zip(keys, values))
    return _returned(q, g, got, got.pop("", {}))


def _returned(q, g, got, merged):
    """The outputs as q(...) returns them: computed ones from `got`, merged ones from `merged`,
    CuPy arrays where the inputs' chunks are CuPy."""
    result = {}
    for k in q.outputs:
        v = got[k] if k in got else merged[k]
        result[k] = {c: _as_framework(x, g.cupy) for c, x in v.items()} if isinstance(v, dict) else _as_framework(v, g.cupy)
    return result


def plan(q, inputs=None, /, **keywords):
    """One line: how run() would split this call (the tasks, the blocks along i and j, or why
    an axis stays whole). Nothing is computed."""
    bindings, options = _split_call(q, inputs, {k: v for k, v in keywords.items() if k != "client"})
    return _Grid(q, bindings, options).describe()


def gpu_cluster(n_workers=None, **kwargs):
    """A local cluster of one single-threaded worker process per GPU: dask-cuda's
    LocalCUDACluster where dask_cuda imports, otherwise distributed's own workers, each started
    with CUDA_VISIBLE_DEVICES set to its GPU. `n_workers`: the GPUs to use (default: every GPU
    gamut sees). Its scheduler keeps replicas (the active memory manager is off): a column
    operand replicated to every worker (client.replicate) stays there for the next call, where
    Dask's default policy would drop the copies no task waits on and move it again."""
    if n_workers is None:
        if not _gamut.gpu_available()[0]:
            raise UsageError("usage error: gpu_cluster: " + _gamut.gpu_available()[1])
        n_workers = _device_count()
    with dask.config.set({"distributed.scheduler.active-memory-manager.start": False}):
        try:
            from dask_cuda import LocalCUDACluster
            return LocalCUDACluster(CUDA_VISIBLE_DEVICES=list(range(n_workers)), **kwargs)
        except ImportError:
            pass
        from distributed import Nanny, Scheduler, SpecCluster
        workers = {
            f"gpu{i}": {"cls": Nanny, "options": {"nthreads": 1, "env": {"CUDA_VISIBLE_DEVICES": str(i)}}}
            for i in range(n_workers)
        }
        scheduler = {"cls": Scheduler, "options": {"dashboard_address": kwargs.pop("dashboard_address", ":0")}}
        return SpecCluster(workers=workers, scheduler=scheduler, **kwargs)


def _device_count():
    import ctypes
    for lib in ("libcudart.so", "libcuda.so.1"):
        try:
            h = ctypes.CDLL(lib)
        except OSError:
            continue
        n = ctypes.c_int(0)
        fn = getattr(h, "cudaGetDeviceCount", None) or getattr(h, "cuDeviceGetCount", None)
        if fn is not None and (lib != "libcuda.so.1" or h.cuInit(0) == 0) and fn(ctypes.byref(n)) == 0:
            return n.value
    return 1
