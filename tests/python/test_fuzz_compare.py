"""The differential fuzzer's comparison rules (tests/fuzz/mmlt_case.py): what they accept must be what
the engines may legitimately differ by, and no more."""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fuzz"))
from mmlt_case import compare  # noqa: E402


def rule(terms):
    return {"best": {"kind": "dense", "exact": False, "scale": 1.4e8, "terms": terms}}


def test_a_long_f32_sum_may_differ_by_its_summation_order():
    # Fuzz seed 527926172 (H200): an f32 `+=` over 1031 x 517 pairs, the GPU's order against the CPU
    # engine's on two threads: 4.2e-4 apart, within the recursive-summation bound, not within 1e-4.
    cpu = np.array(2.6435654e10, dtype=np.float32)
    gpu = np.array(2.6424582e10, dtype=np.float32)
    assert compare({"best": gpu}, {"best": cpu}, rule(1031 * 517)) == []
    assert compare({"best": gpu}, {"best": cpu}, rule(0)) != []


def test_a_long_sum_still_catches_a_wrong_result():
    cpu = np.array(2.6435654e10, dtype=np.float32)
    assert compare({"best": cpu * np.float32(1.02)}, {"best": cpu}, rule(1031 * 517)) != []
    # A short sum keeps the kind's own bound.
    assert compare({"best": cpu * np.float32(1.0003)}, {"best": cpu}, rule(64)) != []
