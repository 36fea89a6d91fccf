"""gamut.tune(): the kernel search of `gamut tune` from Python (docs/python.md)."""

import sys

from . import _gamut


def tune(family=None, seconds=540.0, sizes=None, out=None, repeats=5, plot=True, progress=True):
    """Search the GPU kernel variants of each family of reference queries on this GPU and store
    the winners in the cache directory's table for it, which later runs' kernel choice reads
    (stats["kernel_choice"] == "tuned").

    family: "products", "lists", "semirings", "batched", a list of them, or None for all.
    seconds: the whole search's budget (it stops cleanly when spent). sizes: (M = N, K) pairs.
    out: a folder that also gets the table and the plots. plot: one PNG per family beside the
    table (or in `out`) when matplotlib is installed; without it a note says so.
    Returns a dict: table_path, out_path, json (the table's text), lines, stopped, seconds (the search's wall time), plots.
    Raises DeviceError without a GPU."""
    families = [] if family is None else [family] if isinstance(family, str) else list(family)
    pairs = [list(s) for s in (sizes or [])]
    report = None
    if progress:
        def report(fraction, what):
            sys.stderr.write(f"\r[{'#' * int(fraction * 20):20s}] {fraction * 100:3.0f}%  {what[:60]:60s}")
            sys.stderr.flush()
    result = _gamut._tune(families, float(seconds), pairs, out or "", int(repeats), report)
    if progress:
        sys.stderr.write("\n")
    result["plots"] = []
    if plot:
        try:
            from .tune_plot import plot as make_plots
            result["plots"] = make_plots(result["out_path"] or result["table_path"], out)
        except ImportError:
            sys.stderr.write("gamut.tune: matplotlib is not installed: no plots (pip install matplotlib)\n")
    return result


def families():
    """The families gamut.tune searches."""
    return list(_gamut._tune_families())
