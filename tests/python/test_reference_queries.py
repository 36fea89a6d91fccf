"""Every example query (examples/*.mmlt) through the Python package on the CPU engine, against an
independent NumPy reference (references.py), on odd, empty and tile-crossing sizes."""
import os
import zlib

import numpy as np
import pytest

import gamut
from references import QUERIES, case

SHAPES = [(1, 1, 1), (7, 13, 5), (0, 5, 3), (5, 0, 4), (6, 4, 0), (31, 17, 37), (64, 48, 70)]


@pytest.fixture(scope="module")
def queries(examples):
    return {q: gamut.load(os.path.join(examples, q + ".mmlt")) for q in QUERIES}


@pytest.mark.parametrize("integer", [True, False], ids=["integer", "random"])
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("name", QUERIES)
def test_reference_query_cpu(queries, name, shape, integer):
    rng = np.random.default_rng(zlib.crc32(f"{name} {shape} {integer}".encode()))
    M, N, K = shape
    if name in ("q6_complementary", "reachability"):
        N = M
    bindings, expect = case(name, rng, M, N, K, integer)
    out = queries[name](**bindings, backend="cpu", threads=2)
    assert set(out) == set(queries[name].outputs)
    expect(out)


def test_results_are_not_all_zero(queries):
    # The reference comparison above would pass on two zero results; these sizes do not give any.
    rng = np.random.default_rng(7)
    for name in QUERIES:
        bindings, _ = case(name, rng, 9, 9, 9, True)
        out = queries[name](**bindings, backend="cpu")
        values = [v for o in out.values() for v in (o.values() if isinstance(o, dict) else [o])]
        assert any(np.count_nonzero(v) for v in values), name
