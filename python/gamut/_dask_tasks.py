"""gamut.dask's tasks: what runs on the workers (a block of the grid, a merge of neighbouring
blocks, the finishing steps), and the helpers the client shares with them. Tasks refer to these
functions by this module's name; the query and its Blocks are made once per worker process."""

import functools

import numpy as np

from . import _gamut


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
