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


# ---------------------------------------------------------------------------------------------
# On the workers: the query and its Blocks, made once per process.

@functools.lru_cache(maxsize=64)
def _query(text, name):
    return _gamut.compile(text, name)


@functools.lru_cache(maxsize=64)
def _blocks(text, name, dtypes):
    return _gamut.Blocks(_query(text, name), dict(dtypes))


def _host(x):
    """A block result on the host (NumPy): CuPy and torch arrays are copied there."""
    if isinstance(x, np.ndarray):
        return x
    if _is_cupy(x):
        return x.get()
    if hasattr(x, "cpu") and hasattr(x, "numpy"):                       # torch
        return x.cpu().numpy()
    return np.asarray(x)


def _run_block(spec, names, options, row0, col0, *values):
    """One block: the query on its blocks of the inputs (`names` bound to `values`), lists in
    whole coordinates. Dense outputs stay as the engine returned them (on the GPU for CuPy)."""
    text, name, dtypes = spec
    out, _ = _query(text, name).run(dict(zip(names, values)), provenance=True, finish=False, **options)
    lists = {k: {c: _host(v) for c, v in cols.items()} for k, cols in out.items() if isinstance(cols, dict)}
    whole = _blocks(text, name, dtypes).to_whole(lists, row0, col0)
    dense = {k: v for k, v in out.items() if not isinstance(v, dict)}
    return {**dense, **whole}


def _merge(spec, axis, keys, limits, own, *parts):
    """Neighbouring blocks along `axis` ('i' or 'j') as one, for the outputs in `keys`. The merge
    runs on the host; dense outputs that came from the GPU (CuPy) go back there. With `own`
    (the last merge), lists keep only their own columns."""
    text, name, dtypes = spec
    picked, on_gpu = [], False
    for p in parts:
        picked.append({k: (v if isinstance(v, dict) else _host(v)) for k, v in p.items() if k in keys})
        on_gpu = on_gpu or any(_is_cupy(v) for v in p.values())
    out = _blocks(text, name, dtypes).merge(axis, picked, list(limits), own_only=own is not None)
    out = {k: (_as_framework(v, True) if on_gpu and not isinstance(v, dict) else v) for k, v in out.items()}
    return _finish(out, own) if own is not None else out


def _finish_steps(spec, scalars, names, *values):
    """The query's finishing steps (`finish { ... }`) on its whole dense outputs, once they are
    merged: on the host, as q(...) runs them; back on the GPU where the outputs came from it."""
    text, name, dtypes = spec
    on_gpu = any(_is_cupy(v) for v in values)
    out = _blocks(text, name, dtypes).finish({k: _host(v) for k, v in zip(names, values)}, scalars)
    return {k: (_as_framework(v, True) if on_gpu else v) for k, v in out.items()}


def _is_cupy(x):
    return type(x).__module__.split(".")[0] == "cupy"


def _take(part, key):
    return part[key]


def _finish(merged, own):
    """The merged outputs as q(...) gives them: lists without their provenance columns."""
    return {k: ({c: v[c] for c in own[k]} if k in own else v) for k, v in merged.items()}


def _as_framework(x, like_cupy):
    if like_cupy:
        import cupy
        return cupy.asarray(x)
    return x


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
        self.arrays = {k: self._chunked(k, a, ops[k]) for k, a in arrays.items()}
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
        for k, a in self.arrays.items():
            if ops[k][which] >= 0:
                return int(a.shape[ops[k][which]])
        return np.nan

    def _chunked(self, name, a, dims):
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
        chunks = tuple(chunks)
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


def _tree(spec, axis, keys, limits, items, own=None, now=False):
    """Neighbours merged _FAN_IN at a time, in order, until one is left; the last merge (or a
    task of its own, for a single item) applies `own` (see _merge). `now`: merged here, at once,
    on values instead of tasks."""
    def call(f, *args):
        return f(*args) if now else dask.delayed(f, pure=True)(*args)
    while len(items) > 1:
        last = len(items) <= _FAN_IN
        items = [call(_merge, spec, axis, keys, limits, own if last else None, *items[at:at + _FAN_IN])
                 for at in range(0, len(items), _FAN_IN)]
        if last:
            return items[0]
    return items[0] if own is None else call(_finish, items[0], own)


def _merge_now(spec, keys, limits, own, grid):
    """The tree of merges of _graph, on the blocks' results here (lines along j, then along i)."""
    lines = [_tree(spec, "j", keys, limits, line, now=True) for line in grid]
    return _tree(spec, "i", keys, limits, lines, own=own, now=True)


def _identity(x):
    return x


def _holders(client, arrays, keys):
    """The workers that hold each of these chunk keys of `arrays` (the chunks of persisted dask
    arrays), as {key: [address, ...]}; empty without a client."""
    if client is None or not keys:
        return {}
    from distributed import futures_of
    wanted = set(keys)
    futures = [f for a in arrays for f in futures_of(a) if f.key in wanted]
    if not futures:
        return {}
    try:
        return {k: list(v) for k, v in client.who_has(futures).items() if v}
    except Exception:   # (a closed client, a lost scheduler: Dask then places the blocks itself)
        return {}


def _where(holders, keys):
    """The workers that hold every one of `keys` (else those holding the first that is held)."""
    sets = [set(holders[k]) for k in keys if k in holders]
    if not sets:
        return None
    both = set.intersection(*sets)
    return sorted(both or sets[0])


def _graph(q, inputs, keywords, client, merge_here=False):
    """The graph of one call: its outputs (dask collections and delayed values), the merged
    outputs' delayed value, the grid and the grid's blocks (a delayed value each). With
    `merge_here`, where every output merges and the grid is at most _FAN_IN blocks, the merge is
    left out (whole is None): run() gathers the blocks and merges them in its own process, which
    saves a task and a transfer between workers per call."""
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
            grid[r].append(dask.delayed(_run_block, pure=False)(spec, names, options, g.row0[r], g.col0[c], *values))

    # Dense outputs whose every dimension is an axis and that a split axis indexes: placed as a
    # dask array of the blocks' arrays (merged first along a split axis that does not index them).
    placed = {}
    for name, d in lay["dense"].items():
        by_row = d["row_dim"] >= 0 and g.row_chunks is not None
        by_col = d["col_dim"] >= 0 and g.col_chunks is not None
        if d["axes"] is not None and (by_row or by_col):
            placed[name] = (by_row, by_col)
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
    for a in g.arrays.values():
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


def run(q, inputs=None, /, *, client=None, **keywords):
    """What q(...) returns for the same data, computed over the blocks of the dask-array inputs
    on `client` (else Dask's current scheduler): a dict of outputs, lists as dicts of columns.
    Arrays come back as NumPy arrays (CuPy where the inputs' chunks are CuPy)."""
    out, whole, g, grid = _graph(q, inputs, keywords, client, merge_here=client is not None)
    if not out:
        # A few blocks whose outputs all merge: their results gathered here and merged here.
        flat = [b for line in grid for b in line]
        values = client.gather(client.compute(flat))
        it = iter(values)
        merged = _merge_now(g.spec, tuple(list(g.layout["dense"]) + list(g.layout["lists"])), g.limits,
                            g.layout["lists"], [[next(it) for _ in line] for line in grid])
        return _returned(q, g, {}, merged)
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
