"""The Python examples (examples/python) run and pass their own checks, at small sizes (CPU engine
and NumPy where torch or pandas are missing; they say so). An example that cannot run here prints
"skipped: WHY" and exits 0: that is a pytest skip, not a pass; a pass needs the example's own
"check against ...: ok" line, and it names the engine that ran ("engine: cpu" or "engine: gpu")."""
import os
import re
import subprocess
import sys

import pytest

import gamut

EXAMPLES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples", "python")

CASES = {
    "knn_torch.py": ["--queries", "40", "--database", "300", "--dim", "8"],
    "zip_aggregate_pandas.py": ["--people", "500", "--restaurants", "200", "--dim", "8"],
    "shortest_paths.py": ["--nodes", "90", "--density", "0.03"],
    "topk_bf16.py": ["--queries", "20", "--database", "500", "--dim", "16"],
    "dask_cluster.py": ["--queries", "200", "--database", "300", "--dim", "8", "--chunk", "70"],
    "two_point_correlation.py": ["--points", "600", "--randoms", "900", "--bins", "16"],
}


@pytest.mark.parametrize("script", sorted(CASES))
def test_example_runs(script):
    p = subprocess.run([sys.executable, os.path.join(EXAMPLES, script)] + CASES[script],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stdout + p.stderr
    skipped = re.search(r"^skipped: (.*)$", p.stdout, re.MULTILINE)
    if skipped:
        pytest.skip(f"{script}: {skipped.group(1)}")
    assert re.search(r"^check against [^:\n]+: ok$", p.stdout, re.MULTILINE), p.stdout
    assert "MISMATCH" not in p.stdout, p.stdout
    engine = "gpu" if gamut.gpu_available() else "cpu"
    assert re.search(rf"engine: {engine}\b", p.stdout), p.stdout
