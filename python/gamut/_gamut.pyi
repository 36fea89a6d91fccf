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
                 dims: Mapping[str, int | Sequence[int]] | None = None, as_written: bool = False,
                 **bindings: Binding) -> dict[str, OutputValue]:
        """Run on the keyword arrays and scalars; returns outputs by name."""
    def run(self, inputs: Mapping[str, Binding], *, backend: str = "auto", f32_math: str = "ieee",
            threads: int = 0, stream: Stream = None, devices: Devices = None,
            dims: Mapping[str, int | Sequence[int]] | None = None,
            as_written: bool = False) -> tuple[dict[str, OutputValue], dict[str, Any]]:
        """Run on a mapping of bindings (any names, also 'backend' ...); returns (outputs, stats)."""
    def explain(self, inputs: Mapping[str, Binding] | None = None, /, *, backend: str = "auto",
                f32_math: str = "ieee", devices: Devices = None,
                dims: Mapping[str, int | Sequence[int]] | None = None, as_written: bool = False,
                **bindings: Binding) -> str:
        """The plan; with bindings (keywords, or a mapping and keyword options) also extents,
        rewrites, the GPU kernel and input placement."""
    def kernel_source(self, inputs: Mapping[str, Binding] | None = None, /, *, backend: str = "auto",
                      **bindings: Binding) -> str:
        """The CUDA C++ the GPU backend compiles for these bindings."""

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
