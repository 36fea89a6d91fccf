"""Which engine runs, said in Python as on the command line: q.explain()'s first line, and
stats["ignored"] naming options that do not apply to the engine that ran."""
import numpy as np

import gamut

SGEMM = "where (i, j) { a = 0; reduce (k) { a += A[i, k] * B[k, j]; } C[i, j] = a; }"


def data():
    rng = np.random.default_rng(5)
    return rng.integers(-3, 4, (6, 4)).astype(np.float32), rng.integers(-3, 4, (4, 5)).astype(np.float32)


def test_explain_says_first_which_engine_runs():
    q = gamut.compile(SGEMM)
    A, B = data()
    assert q.explain(backend="cpu").split("\n")[0] == "engine: cpu (backend cpu asked)"
    assert q.explain(A=A, B=B, backend="cpu").split("\n")[0] == "engine: cpu (backend cpu asked)"
    text = q.explain(A=A, B=B)
    first = text.split("\n")[0]
    if gamut.gpu_available():
        assert first.startswith("engine: gpu (")
        return
    why = gamut.gpu_unavailable_reason().removeprefix("no usable CUDA device: ")
    assert first == f"engine: cpu ({why})"
    # The GPU's choices only as what they would be; no advice to run `gamut peak`.
    assert "gamut peak" not in text
    assert "\nmath: the CPU engine's (each operation in the query's types); on a GPU it would be " in text
    assert f"gpu: none ({why}); on an H100 the kernel would take tile " in text


def test_stats_name_ignored_options():
    q = gamut.compile(SGEMM)
    A, B = data()
    out, stats = q.run({"A": A, "B": B}, backend="cpu", f32_math="tf32")
    np.testing.assert_array_equal(out["C"], A.astype(np.float64) @ B)   # ieee math on the CPU engine
    assert stats["backend"] == "cpu"
    assert stats["ignored"] == ("ignored: f32_math= (it applies to the GPU engine; the CPU engine ran: "
                                "backend cpu asked)")
    _, plain = q.run({"A": A, "B": B}, backend="cpu")
    assert plain["ignored"] == ""
    if not gamut.gpu_available():
        _, auto = q.run({"A": A, "B": B}, f32_math="tf32x3")
        assert auto["ignored"].endswith("the CPU engine ran: "
                                        + gamut.gpu_unavailable_reason().removeprefix("no usable CUDA device: ") + ")")
