"""kNN and cosine top-k as users write them, on torch CUDA tensors read in place (marked gpu):
the rewritten program (expand-squares, hoist-one-sided; docs/tensor-cores.md) runs its stages on
the device inputs, its results come back as torch tensors on the caller's stream, recall against
an fp64 NumPy reference, and as_written=True keeps the written form."""
import numpy as np
import pytest

import gamut

pytestmark = pytest.mark.gpu

KNN = ("where (i, j) { dist = 0; reduce (k) { let t = Q[i, k] - X[j, k]; dist += t * t; }"
       " emit Nearest(i, j, dist) bottom 10 by dist per i; }")
COSINE = ("where (i, j) { dot = 0; nq = 0; nx = 0;"
          " reduce (k) { dot += Q[i, k] * X[j, k]; nq += Q[i, k] * Q[i, k]; nx += X[j, k] * X[j, k]; }"
          " emit Similar(i, j, dot / sqrt(nq * nx) as cos) top 10 by dot / sqrt(nq * nx) per i; }")


@pytest.fixture(scope="module")
def torch():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch has no CUDA device")
    return torch


def recall(got_j, exact, largest):
    """Returned rows whose exact value is among the 10 best of their row (ties by value)."""
    m = exact.shape[0]
    tenth = np.sort(exact, axis=1)[:, -10] if largest else np.sort(exact, axis=1)[:, 9]
    vals = exact[np.arange(m)[:, None], got_j.reshape(m, 10)]
    ok = vals >= tenth[:, None] if largest else vals <= tenth[:, None]
    return ok.mean()


@pytest.mark.parametrize("dtype,f32_math,want", [("bfloat16", "ieee", 0.99), ("float32", "tf32", 0.999)])
def test_knn_device_inputs(torch, dtype, f32_math, want):
    g = torch.Generator(device="cuda").manual_seed(1)
    Q = torch.randn(300, 96, device="cuda", generator=g).to(getattr(torch, dtype))
    X = torch.randn(2000, 96, device="cuda", generator=g).to(getattr(torch, dtype))
    q = gamut.compile(KNN)
    out, stats = q.run({"Q": Q, "X": X}, f32_math=f32_math)
    assert stats["rewrites"] == ["expand-squares"], stats
    assert stats["math"] in ("bf16", "tf32"), stats
    near = out["Nearest"]
    assert near["j"].is_cuda and near["dist"].is_cuda
    qd, xd = Q.double().cpu().numpy(), X.double().cpu().numpy()
    exact = ((qd[:, None, :] - xd[None, :, :]) ** 2).sum(axis=2)
    j = near["j"].cpu().numpy().astype(np.int64)
    assert recall(j, exact, False) >= want
    # The distances: within 4 K u (|q|^2 + |x|^2) (+ 2^-10 of it under tf32) of the exact ones.
    i = near["i"].cpu().numpy().astype(np.int64)
    n = (qd ** 2).sum(1)[i] + (xd ** 2).sum(1)[j]
    bound = n * (4 * 96 * 2.0 ** -24 + (2.0 ** -10 if f32_math == "tf32" else 0)) + 1e-6
    assert np.all(np.abs(near["dist"].cpu().numpy() - exact[i, j]) <= bound)
    # The same on host inputs (the CPU engine runs the same program) and as written on the GPU.
    host = q(Q=Q.cpu(), X=X.cpu(), backend="cpu", f32_math=f32_math)["Nearest"]
    assert recall(host["j"].numpy().astype(np.int64), exact, False) >= want
    written, st = q.run({"Q": Q, "X": X}, f32_math=f32_math, as_written=True)
    assert st["rewrites"] == [] and st["math"] in ("simt", "ieee"), st
    assert recall(written["Nearest"]["j"].cpu().numpy().astype(np.int64), exact, False) >= 0.999


def test_cosine_device_inputs(torch):
    g = torch.Generator(device="cuda").manual_seed(2)
    Q = torch.randn(200, 64, device="cuda", generator=g).to(torch.bfloat16)
    X = torch.randn(1500, 64, device="cuda", generator=g).to(torch.bfloat16)
    out, stats = gamut.compile(COSINE).run({"Q": Q, "X": X})
    assert stats["rewrites"] == ["hoist-one-sided"], stats
    assert stats["math"] == "bf16", stats
    qd, xd = Q.double().cpu().numpy(), X.double().cpu().numpy()
    exact = (qd / np.linalg.norm(qd, axis=1, keepdims=True)) @ (xd / np.linalg.norm(xd, axis=1, keepdims=True)).T
    sim = out["Similar"]
    assert recall(sim["j"].cpu().numpy().astype(np.int64), exact, True) >= 0.99
    i, j = sim["i"].cpu().numpy().astype(np.int64), sim["j"].cpu().numpy().astype(np.int64)
    assert np.all(np.abs(sim["cos"].cpu().numpy() - exact[i, j]) <= 8 * 64 * 2.0 ** -24 + 1e-6)


def test_program_on_the_callers_stream(torch):
    # The stages and the main query are ordered on the caller's stream: a result read after
    # synchronising that stream alone is complete.
    s = torch.cuda.Stream()
    g = torch.Generator(device="cuda").manual_seed(3)
    Q = torch.randint(-4, 5, (128, 32), device="cuda", generator=g).to(torch.bfloat16)
    X = torch.randint(-4, 5, (700, 32), device="cuda", generator=g).to(torch.bfloat16)
    torch.cuda.synchronize()
    with torch.cuda.stream(s):
        out = gamut.compile(KNN)(Q=Q, X=X)["Nearest"]
        s.synchronize()
    want = gamut.compile(KNN)(Q=Q.cpu(), X=X.cpu(), backend="cpu", as_written=True)["Nearest"]
    for c in ("i", "j", "dist"):  # integer data: exact both ways
        torch.testing.assert_close(out[c].cpu(), want[c], rtol=0, atol=0)
