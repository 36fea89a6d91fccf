#!/usr/bin/env python3
"""Plots of a `gamut tune` table: tools/plot_tune.py TABLE.json [OUT_DIR] writes one PNG per
family (tune-FAMILY.png) beside the table or in OUT_DIR. Needs matplotlib."""
import importlib.util
import os
import sys

spec = importlib.util.spec_from_file_location(
    "tune_plot", os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python", "gamut", "tune_plot.py"))
tune_plot = importlib.util.module_from_spec(spec)
spec.loader.exec_module(tune_plot)

if len(sys.argv) < 2:
    sys.exit("usage: tools/plot_tune.py TABLE.json [OUT_DIR]")
try:
    for p in tune_plot.plot(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else None):
        print(p)
except ImportError:
    sys.exit("tools/plot_tune.py: matplotlib is not installed (pip install matplotlib)")
