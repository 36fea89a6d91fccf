"""Independent NumPy references for the example queries (examples/*.mmlt): for each query, data
generators and the expected outputs computed with NumPy alone (float64 sums, then the output type).

case(query, rng, M, N, K, integer) -> (bindings, expect) where expect(outputs) raises
AssertionError on a mismatch. Integer-valued data makes float results exact (exact comparison,
ties and thresholds included); random floats are compared within a relative bound.
"""
import numpy as np

QUERIES = ["sgemm", "q1_amplify", "q2_zip_aggregate", "q3_count_pairs", "q4_join_area", "q5_select",
           "q6_complementary", "q7_top128", "knn", "maxplus", "minplus_batched", "reachability"]

F32_RTOL = 1e-5


def integers(rng, shape, lo=-3, hi=3, dtype=np.float32):
    return rng.integers(lo, hi + 1, size=shape).astype(dtype)


def same(got, want, what):
    want = np.asarray(want).astype(got.dtype)
    assert got.shape == want.shape, f"{what}: shape {got.shape}, want {want.shape}"
    assert np.array_equal(got, want), f"{what}: got {got.ravel()[:6]}, want {want.ravel()[:6]}"


def near(got, want, what, rtol=F32_RTOL):
    got = np.asarray(got, np.float64)
    want = np.asarray(want, np.float64)
    assert got.shape == want.shape, f"{what}: shape {got.shape}, want {want.shape}"
    if want.size:
        err = np.linalg.norm(got - want) / max(np.linalg.norm(want), 1e-30)
        assert err <= rtol, f"{what}: relative error {err:.3g} > {rtol}"


def rows_of(columns, names):
    assert list(columns) == names, f"columns {list(columns)}, want {names}"
    n = len(columns[names[0]])
    for c in names:
        assert columns[c].ndim == 1 and len(columns[c]) == n
    return [tuple(columns[c][r].item() for c in names) for r in range(n)]


def list_equal(columns, names, want, what):
    got = rows_of(columns, names)
    assert got == want, f"{what}: {len(got)} rows, want {len(want)}; first {got[:3]} want {want[:3]}"


def f64(x):
    return np.asarray(x, np.float64)


def case(query, rng, M, N, K, integer):
    data = (lambda s: integers(rng, s)) if integer else (lambda s: rng.standard_normal(s).astype(np.float32))
    dense = same if integer else near

    if query == "sgemm":
        A, B = data((M, K)), data((K, N))
        return {"A": A, "B": B}, lambda out: dense(out["C"], f64(A) @ f64(B), "C")

    if query == "q1_amplify":
        S, W, t = data((M, K)), data((K, N)), data((M,))
        m = f64(S)[:, :, None] * f64(W)[None, :, :]
        want = (m + (m > f64(t)[:, None, None]) * (m - f64(t)[:, None, None])).sum(axis=1)
        return {"S": S, "W": W, "thres": t}, lambda out: dense(out["Out"], want, "Out")

    if query in ("q2_zip_aggregate", "q3_count_pairs", "q4_join_area"):
        P, R = data((M, K)), data((K, N))
        g = rng.integers(0, 5, M).astype(np.int32)
        h = rng.integers(0, 4, N).astype(np.int64)
        acc = f64(P) @ f64(R)
        G, H = (int(g.max()) + 1 if M else 0), (int(h.max()) + 1 if N else 0)
        b = {"P": P, "R": R, "Pzip": g, "Rzip": h}
        if query == "q2_zip_aggregate":
            want = np.zeros((G, H))
            np.add.at(want, (g[:, None], h[None, :]), acc)
            return b, lambda out: dense(out["C"], want, "C")
        if query == "q3_count_pairs":
            want = np.zeros((G, H), np.int64)
            np.add.at(want, (g[:, None], h[None, :]), acc > 0.5)
            b["thres"] = 0.5
            return b, lambda out: same(out["Cnt"], want, "Cnt")
        want = np.zeros((G,))
        match = g[:, None] == h[None, :]
        np.add.at(want, np.broadcast_to(g[:, None], acc.shape)[match], acc[match])
        return b, lambda out: dense(out["AreaTotal"], want, "AreaTotal")

    if query in ("q5_select", "q6_complementary"):
        if query == "q5_select":
            P, R = integers(rng, (M, K)), integers(rng, (K, N))
            acc, b = f64(P) @ f64(R), {"P": P, "R": R}
        else:
            A = integers(rng, (M, K))
            acc = (np.maximum(f64(A)[:, None, :], f64(A)[None, :, :]) ** 2).sum(axis=2)
            b = {"A": A}
        b["thres"] = 1.5
        ii, jj = np.nonzero(acc > 1.5)
        want = sorted((int(i), int(j), float(np.float32(acc[i, j]))) for i, j in zip(ii, jj))
        return b, lambda out: list_equal(out["Pairs"], ["i", "j", "accum"], want, "Pairs")

    if query == "q7_top128":
        P, R = integers(rng, (M, K), -1, 1), integers(rng, (K, N), -1, 1)   # many ties
        acc = f64(P) @ f64(R)
        order = sorted((-acc[i, j], i, j) for i in range(M) for j in range(N))[:128]
        want = [(int(i), int(j), float(-a)) for a, i, j in order]
        return {"P": P, "R": R}, lambda out: list_equal(out["Top"], ["i", "j", "accum"], want, "Top")

    if query == "knn":
        Q, X = integers(rng, (M, K), 0, 2), integers(rng, (N, K), 0, 2)
        d = ((f64(Q)[:, None, :] - f64(X)[None, :, :]) ** 2).sum(axis=2)
        want = []
        for i in range(M):
            want += [(i, int(j), float(dist)) for dist, j in sorted((d[i, j], j) for j in range(N))[:10]]
        return {"Q": Q, "X": X}, lambda out: list_equal(out["Nearest"], ["i", "j", "dist"], want, "Nearest")

    if query == "maxplus":
        A = integers(rng, (M, K), -1000, 1000, np.int32)
        B = integers(rng, (K, N), -1000, 1000, np.int32)
        want = np.full((M, N), np.iinfo(np.int32).min, np.int64)
        if K:
            want = (A.astype(np.int64)[:, :, None] + B.astype(np.int64)[None, :, :]).max(axis=1)
        return {"A": A, "B": B}, lambda out: same(out["C"], want, "C")

    if query == "minplus_batched":
        D, E = integers(rng, (3, M, K), 0, 50), integers(rng, (3, K, N), 0, 50)
        want = np.full((3, M, N), np.inf)
        if K:
            want = (f64(D)[:, :, :, None] + f64(E)[:, None, :, :]).min(axis=2)
        return {"D": D, "E": E}, lambda out: same(out["Out"], want, "Out")

    if query == "reachability":
        Adj = (rng.random((M, M)) < 0.2).astype(np.uint8)
        want = (Adj.astype(np.int64) @ Adj.astype(np.int64)) > 0
        return {"Adj": Adj}, lambda out: same(out["Reach"], want, "Reach")

    raise KeyError(query)
