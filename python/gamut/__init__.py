"""gamut: matrix-multiplication-like tasks (MMLTs) as short declarative queries, compiled into fused
GPU kernels (NVRTC) or run on the CPU engine.

    import gamut, torch
    q = gamut.compile('''
      where (i, j) {
        dist = 0;
        reduce (k) { let t = Q[i, k] - X[j, k]; dist += t * t; }
        emit Nearest(i, j, dist) bottom 10 by dist per i;
      }''')
    out = q(Q=queries, X=database)           # torch in, torch out; NumPy in, NumPy out
    out["Nearest"]["j"]                      # a list output is a dict of columns

Arrays come in through DLPack (PyTorch, CuPy, JAX, NumPy) without a copy where they already
are where the engine reads them; scalars as Python numbers. Options: backend="auto"|"cpu"|"gpu",
f32_math="ieee", threads=, stream=, as_written=False. Errors raise QueryError, UsageError, DataError, DeviceError
(all GamutError). See docs/python.md.
"""

from ._errors import DataError, DeviceError, GamutError, QueryError, UsageError
from . import _gamut
from ._gamut import Query, compile, load
from .tuning import tune

_gamut._register_errors(QueryError, UsageError, DataError, DeviceError)

__version__ = _gamut.version()


# q.explain and q.kernel_source take keyword bindings and options, or a mapping of bindings (any
# names, also an input called "backend", and any number of them) and keyword options, as q.run.
# (Python functions: a C++ method would refuse more than 1024 keywords. q(...) takes any number
# through its type's call slot.)
def _explain(self, inputs=None, /, **bindings):
    """The plan; with bindings also the extents, output shapes, rewrites, the GPU kernel variant
    and where each input is read (in place, or copied and why).

    ``q.explain(A=a, B=b, backend="cpu")`` or ``q.explain({"A": a, "B": b}, backend="cpu")``."""
    return _gamut._explain(self, inputs, bindings)


def _kernel_source(self, inputs=None, /, **bindings):
    """The CUDA C++ the GPU backend compiles for these bindings (keywords, or a mapping and
    keyword options)."""
    return _gamut._kernel_source(self, inputs, bindings)


Query.explain = _explain
Query.kernel_source = _kernel_source


def gpu_available() -> bool:
    """True when the GPU backend can run here (a CUDA device and its driver)."""
    return _gamut.gpu_available()[0]


def gpu_unavailable_reason() -> str:
    """Why the GPU backend cannot run here ("" when it can)."""
    return _gamut.gpu_available()[1]


def cache_dir() -> str:
    """The compiled-kernel cache, shared with the gamut command ($GAMUT_CACHE_DIR, else ~/.cache/gamut)."""
    return _gamut.cache_dir()


def clear_cache() -> int:
    """Remove every cached kernel; returns how many were removed."""
    return _gamut.clear_cache()


__all__ = [
    "Query", "compile", "load", "tune", "gpu_available", "gpu_unavailable_reason", "cache_dir", "clear_cache",
    "GamutError", "QueryError", "UsageError", "DataError", "DeviceError", "__version__",
]
