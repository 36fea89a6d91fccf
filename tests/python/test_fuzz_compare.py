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


def generator(seed):
    from mmlt_gen import Generator
    g = Generator(seed, device_sizes=False, known_defects=False, f32_math="ieee", mid_sizes=True)
    return g, g.generate()


def test_an_integer_cast_of_a_value_that_may_be_infinite_is_not_kept_exact():
    # Fuzz seed 454264978 (cpu vs numpy): `s33 += i64(A * Y + z)` over data with infinities saturates
    # at 2^63; S summed such values in f64 and was still compared exactly (order-dependent rounding).
    _, case = generator(454264978)
    assert "i64(A[i, k] * Y[k, j] + z)" in case.text, case.text
    assert case.rules["S"]["exact"] is False


def test_a_cosine_quotient_is_never_exact():
    # Fuzz seed 454265475: the engines compute dot / sqrt(nq * nx) of 16-bit inputs as
    # dot * (1/sqrt(nq) * 1/sqrt(nx)), a few ulp from the written form (docs/tensor-cores.md): its
    # value is compared within a bound and never used discretely, whatever the data.
    g, case = generator(454265475)
    assert "cosine" in case.tags, case.text
    cs = [n for n in g.an.locals if n.startswith("cs")]
    assert cs and all(not g.an.locals[n].det for n in cs), case.text


def test_no_infinities_in_the_distance_template():
    # Fuzz seed 830119590: kNN over bf16 data with +-inf; expand-squares (the plan's, on the CPU
    # engine too) computes an infinite norm's distance as inf - inf = NaN where the written sum is
    # +inf (docs/tensor-cores.md, "Known differences"): the template's special data has none.
    g, case = generator(830119590)
    assert "knn" in case.tags and "special" in case.tags, case.tags
    for op in g.ops.values():
        v = np.asarray(op.data)
        if v.dtype.kind == "V":   # bf16 as 2-byte words
            v = (np.frombuffer(v.tobytes(), dtype=np.uint16).astype(np.uint32) << 16).view(np.float32)
        if v.dtype.kind == "f":
            assert not np.isinf(v).any(), op.name


def test_an_integer_accumulator_from_minus_infinity_has_the_whole_range():
    # Fuzz seed 596661766 (cpu vs cpu): `cnt = -inf` inferred i32 starts at INT_MIN; `Agg[y] += cnt - ...`
    # summed such values in f32 and was compared exactly (the order of the threads' sums changed it).
    _, case = generator(596661766)
    assert "cnt = -inf;" in case.text and "Agg[y] += cnt" in case.text, case.text
    assert case.rules["Agg"]["exact"] is False
