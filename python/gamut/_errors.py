"""gamut's exceptions: one class per category of the command line's exit status (docs/cli.md)."""


class GamutError(Exception):
    """Base class of every gamut error. ``exit_code`` is the CLI's exit status for it."""

    exit_code = 0
    category = ""


class QueryError(GamutError):
    """An error in the query text. ``str(e)`` starts ``FILE:LINE:COL: error: ...`` and shows the
    source line with a caret; ``file``, ``line`` and ``column`` hold the place."""

    exit_code = 1
    category = "query"

    @property
    def file(self) -> str:
        return _place(self)[0]

    @property
    def line(self) -> int:
        return _place(self)[1]

    @property
    def column(self) -> int:
        return _place(self)[2]


class UsageError(GamutError, ValueError):
    """Wrong use: a binding the query does not have, an unknown option value, a bad argument."""

    exit_code = 2
    category = "usage"


class DataError(GamutError, ValueError):
    """A binding that is missing, of the wrong shape or type, or an index out of range; the
    message names the binding."""

    exit_code = 3
    category = "data"


class DeviceError(GamutError, RuntimeError):
    """No usable GPU for ``backend="gpu"``, out of memory, a CUDA failure."""

    exit_code = 4
    category = "device"


def _place(e: QueryError):
    # "FILE:LINE:COL: error: ..." (FILE may itself hold ':'): the last two numbers before ": error".
    head = str(e).split("\n", 1)[0]
    where = head.split(": error", 1)[0]
    parts = where.rsplit(":", 2)
    if len(parts) == 3 and parts[1].isdigit() and parts[2].isdigit():
        return parts[0], int(parts[1]), int(parts[2])
    return where, 0, 0
