"""Type stubs of the C++ extension gamut._gamut."""

from typing import Any, Mapping, Sequence, Union

# Anything that speaks DLPack or that NumPy can view: torch.Tensor, cupy.ndarray, jax.Array,
# numpy.ndarray (np.memmap too), memoryview, array.array, ctypes arrays, ...
ArrayLike = Any
Binding = Union[ArrayLike, int, float, bool]
# A dense output is an array of the inputs' framework; a list output a dict of its columns.
OutputValue = Union[Any, dict[str, Any]]
Stream = Union[int, Any, None]   # cudaStream_t as int, torch.cuda.Stream, cupy.cuda.Stream
Devices = Union[int, str, list[int], tuple[int, ...], None]   # 2, "all", [0, 1]: several GPUs

class Query:
    """A compiled query: call it with arrays and scalars as keywords."""

    @property
    def name(self) -> str: ...
    @property
    def text(self) -> str: ...
    @property
    def inputs(self) -> list[str]: ...
    @property
    def params(self) -> list[str]: ...
    @property
    def outputs(self) -> list[str]: ...
    def __call__(self, *, backend: str = "auto", f32_math: str = "ieee", threads: int = 0,
                 stream: Stream = None, devices: Devices = None,
                 dims: Mapping[str, int | Sequence[int]] | None = None, provenance: bool = False,
                 as_written: bool = False, finish: bool = True, tuned: bool = True, kernel_variant: str = "",
                 **bindings: Binding) -> dict[str, OutputValue]:
        """Run on the keyword arrays and scalars; returns outputs by name."""
    def run(self, inputs: Mapping[str, Binding], *, backend: str = "auto", f32_math: str = "ieee",
            threads: int = 0, stream: Stream = None, devices: Devices = None,
            dims: Mapping[str, int | Sequence[int]] | None = None,
            provenance: bool = False, as_written: bool = False, finish: bool = True, tuned: bool = True,
            kernel_variant: str = "") -> tuple[dict[str, OutputValue], dict[str, Any]]:
        """Run on a mapping of bindings (any names, also 'backend' ...); returns (outputs, stats).
        provenance=True: top/bottom lists also carry __key, __b, __i, __j (for merging blocks).
        finish=False: without the finishing steps' outputs (blocks finished after merging).
        tuned=False: the heuristics' GPU kernel even where gamut.tune stored a winner;
        kernel_variant: force one (benchmarks). stats["kernel_choice"] says which chose."""
    def explain(self, inputs: Mapping[str, Binding] | None = None, /, *, backend: str = "auto",
                f32_math: str = "ieee", devices: Devices = None,
                dims: Mapping[str, int | Sequence[int]] | None = None, as_written: bool = False,
                **bindings: Binding) -> str:
        """The plan; with bindings (keywords, or a mapping and keyword options) also extents,
        rewrites, the GPU kernel and input placement."""
    def kernel_source(self, inputs: Mapping[str, Binding] | None = None, /, *, backend: str = "auto",
                      **bindings: Binding) -> str:
        """The CUDA C++ the GPU backend compiles for these bindings."""

class Blocks:
    """A query split into blocks of its inputs (src/partition/blocks.h), for task schedulers
    (gamut.dask): typed for `dtypes` (input name -> "f32", "i32", ...), with list provenance."""

    def __init__(self, query: Query, dtypes: Mapping[str, str]) -> None: ...
    def layout(self) -> dict[str, Any]:
        """row_splits / col_splits and row_why / col_why; batched; operands: name -> (row_dim,
        col_dim) (-1: not indexed); dense: name -> {row_dim, col_dim, axes ("b"/"i"/"j" per
        dimension, or None where an index vector sets an extent), dtype, project}; lists: name ->
        its own column names (without __key, __b, __i, __j)."""
    def limits(self, scalars: Mapping[str, Any]) -> list[int]:
        """N of each top/bottom list (0 for other lists), from its literal or bound parameter."""
    def to_whole(self, outputs: Mapping[str, Any], row0: int, col0: int) -> dict[str, Any]:
        """A block's outputs (q.run(..., provenance=True) on the block whose first row is row0 and
        first column col0; NumPy) with list columns i and j moved to the whole run's coordinates."""
    def merge(self, axis: str, blocks: Sequence[Mapping[str, Any]], limits: Sequence[int],
              own_only: bool = False) -> dict[str, Any]:
        """Blocks next to each other along axis "i" or "j" (in order) as one, for the outputs the
        blocks hold: dense outputs the axis indexes side by side, others by their operator,
        lists merged (provenance kept, for the next merge; dropped with own_only, the last one)."""
    def finish(self, outputs: Mapping[str, Any], scalars: Mapping[str, Any]) -> dict[str, Any]:
        """The query's finishing steps (`finish { ... }`) on its merged dense outputs (NumPy, by
        name) and its scalar bindings: the finished outputs by name (empty without a block)."""

def compile(text: str, name: str = "<query>") -> Query:
    """Parse and check a query (QueryError names NAME:LINE:COL)."""

def load(path: str) -> Query:
    """Read a query file and compile it (UsageError when unreadable)."""

def version() -> str: ...
def gpu_available() -> tuple[bool, str]: ...
def cache_dir() -> str: ...
def clear_cache() -> int: ...
def _register_errors(query: type, usage: type, data: type, device: type) -> None: ...
def _call(query: Query, kwargs: dict[str, Any]) -> dict[str, OutputValue]: ...
def _explain(query: Query, inputs: Mapping[str, Binding] | None, kwargs: dict[str, Any]) -> str: ...
def _kernel_source(query: Query, inputs: Mapping[str, Binding] | None, kwargs: dict[str, Any]) -> str: ...
def _tune(families: list[str], seconds: float, sizes: list[list[int]], out: str, repeats: int,
          progress: Any | None) -> dict[str, Any]: ...
def _tune_families() -> list[str]: ...
