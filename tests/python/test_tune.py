"""gamut.tune() and the kernel choice from Python: without a GPU a DeviceError and nothing
written; the options tuned= and kernel_variant=; the plots of a table (where matplotlib is
installed). On the device: a small search, then the tuned kernel's result against the CPU engine."""
import importlib.util
import json
import os

import numpy as np
import pytest

import gamut

PRODUCT = "where (i, j) { a = 0; reduce (k) { a += A[i, k] * B[k, j]; } C[i, j] = a; }"


def test_tune_without_a_gpu_is_a_device_error(tmp_path, monkeypatch):
    if gamut.gpu_available():
        pytest.skip("a GPU is present (test_tune_small_search_then_the_tuned_kernel runs there)")
    monkeypatch.setenv("GAMUT_CACHE_DIR", str(tmp_path))
    with pytest.raises(gamut.DeviceError, match="gamut tune needs a GPU"):
        gamut.tune(family="lists", seconds=10, progress=False)
    assert not (tmp_path / "tuned").exists()


def test_tune_refuses_an_unknown_family_or_size():
    if not gamut.gpu_available():
        pytest.skip("the family is checked after the GPU (no GPU here)")
    with pytest.raises(gamut.UsageError, match="family"):
        gamut.tune(family="tiles", seconds=10, progress=False)
    with pytest.raises(gamut.UsageError, match="sizes"):
        gamut.tune(family="lists", sizes=[(1, 1)], seconds=10, progress=False)


def test_kernel_options_are_checked_and_named_on_the_cpu():
    q = gamut.compile(PRODUCT)
    a = np.ones((8, 4), np.float32)
    b = np.ones((4, 6), np.float32)
    out, stats = q.run({"A": a, "B": b}, backend="cpu", tuned=False, kernel_variant="simt 64x64x8/4x4")
    assert np.array_equal(out["C"], a @ b)
    assert "kernel_variant" in stats["ignored"]
    with pytest.raises(gamut.UsageError, match="tuned=.*True or False"):
        q(A=a, B=b, tuned="no")
    with pytest.raises(gamut.UsageError, match="kernel variant 'wgmma 128'"):
        q(A=a, B=b, kernel_variant="wgmma 128")
    text = q.explain(A=a, B=b, kernel_variant="simt 64x64x8/4x4")
    assert "kernel choice: forced (kernel_variant), family product.f32" in text


def _load_tune_plot():
    path = os.path.join(os.path.dirname(__file__), "..", "..", "python", "gamut", "tune_plot.py")
    spec = importlib.util.spec_from_file_location("tune_plot", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_plots_of_a_table(tmp_path):
    pytest.importorskip("matplotlib")
    table = {"format": "gamut-tuned-1", "device": {"name": "x", "sm_count": 1, "driver": 1, "gamut": "0"},
             "entries": [], "searched": [
                 {"family": "lists", "query": "q5-bf16", "m": 64, "n": 64, "k": 32, "batch": 1,
                  "kernel_family": "list.bf16", "heuristic": "wgmma 128x256 s4 b1", "winner": "wgmma 64x128 s3 b2",
                  "results": [{"variant": "wgmma 128x256 s4 b1", "ms": 1.0, "status": "heuristic"},
                              {"variant": "wgmma 64x128 s3 b2", "ms": 0.9, "status": "ok"},
                              {"variant": "wgmma 64x128 s4 b1", "status": "failed: x"}]}]}
    path = tmp_path / "t.json"
    path.write_text(json.dumps(table))
    pngs = _load_tune_plot().plot(str(path))
    assert [os.path.basename(p) for p in pngs] == ["tune-lists.png"]
    assert os.path.getsize(pngs[0]) > 1000


@pytest.mark.gpu
def test_tune_small_search_then_the_tuned_kernel(tmp_path, monkeypatch):
    monkeypatch.setenv("GAMUT_CACHE_DIR", str(tmp_path))
    r = gamut.tune(family="products", seconds=240, sizes=[(1024, 64)], repeats=2, out=str(tmp_path / "out"),
                   progress=False)
    assert os.path.exists(r["table_path"]) and os.path.exists(r["out_path"])
    table = json.loads(open(r["table_path"]).read())
    assert len(table["entries"]) == 3 and not r["stopped"]
    assert 0 < r["seconds"] < 240  # (the search's wall time, its compiles ahead included)
    rng = np.random.default_rng(0)
    a = rng.integers(-4, 5, (1024, 64)).astype(np.float32)
    b = rng.integers(-4, 5, (64, 1024)).astype(np.float32)
    q = gamut.compile(PRODUCT)
    out, stats = q.run({"A": a, "B": b}, backend="gpu")
    assert stats["kernel_choice"] == "tuned" and stats["kernel_family"] == "product.f32"
    assert np.array_equal(out["C"], q.run({"A": a, "B": b}, backend="cpu")[0]["C"])
    _, h = q.run({"A": a, "B": b}, backend="gpu", tuned=False)
    assert h["kernel_choice"] == "heuristic"
