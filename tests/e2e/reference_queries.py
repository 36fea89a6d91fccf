#!/usr/bin/env python3
"""End-to-end check of one reference query: generate data, run `gamut run -o`, compare every
output with an independent NumPy reference. Integer-valued data makes float results exact, so
selections, ties and thresholds compare exactly; a second pass on random floats compares the
dense results within a relative-error bound.

usage: reference_queries.py GAMUT QUERY_NAME [--backend cpu|gpu]
"""
import os
import subprocess
import sys
import tempfile

import numpy as np

EXAMPLES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples")
SHAPES = [(1, 1, 1), (7, 13, 5), (0, 5, 3), (5, 0, 4), (6, 4, 0), (31, 17, 37), (64, 48, 33)]


def run(gamut, query, bindings, backend, extra=()):
    with tempfile.TemporaryDirectory() as d:
        args = [gamut, "run", os.path.join(EXAMPLES, query + ".mmlt"), "-o", os.path.join(d, "out"),
                "--backend", backend] + list(extra)
        for name, value in bindings.items():
            if isinstance(value, np.ndarray):
                path = os.path.join(d, name + ".npy")
                np.save(path, value)
                args.append(f"{name}={path}")
            else:
                args.append(f"{name}={value}")
        p = subprocess.run(args, capture_output=True, text=True)
        if p.returncode != 0:
            raise AssertionError(f"gamut failed ({p.returncode}): {p.stderr.strip()}")
        out = {}
        for f in os.listdir(os.path.join(d, "out")):
            out[f[:-4]] = np.load(os.path.join(d, "out", f))
        return out


def ints(rng, shape, lo=-3, hi=3, dtype=np.float32):
    return rng.integers(lo, hi + 1, size=shape).astype(dtype)


def rows(records, names):
    return [tuple(r[n].item() for n in names) for r in records]


def check_list(got, want_rows, names, what):
    g = rows(got, names)
    if g != want_rows:
        raise AssertionError(f"{what}: {len(g)} rows, want {len(want_rows)}; first differences: "
                             f"{[(a, b) for a, b in zip(g, want_rows) if a != b][:3]} / got {g[:4]} want {want_rows[:4]}")


def close(got, want, rtol, what):
    got = np.asarray(got, dtype=np.float64)
    want = np.asarray(want, dtype=np.float64)
    if got.shape != want.shape:
        raise AssertionError(f"{what}: shape {got.shape}, want {want.shape}")
    if want.size == 0:
        return
    err = np.linalg.norm(got - want) / max(np.linalg.norm(want), 1e-30)
    if not err <= rtol:
        raise AssertionError(f"{what}: relative error {err:.3g} > {rtol}")


def exact(got, want, what):
    if got.shape != want.shape or not np.array_equal(got, want):
        raise AssertionError(f"{what}: mismatch, shape {got.shape} vs {want.shape}; got {got.ravel()[:6]} want {want.ravel()[:6]}")


def product(P, R):
    return P.astype(np.float64) @ R.astype(np.float64)


def case(query, gamut, backend, rng, M, N, K, integer):
    mk = (lambda s: ints(rng, s)) if integer else (lambda s: rng.standard_normal(s).astype(np.float32))
    rtol = 0 if integer else 1e-5
    cmp = (lambda g, w, what: exact(g, w.astype(g.dtype), what)) if integer else (lambda g, w, what: close(g, w, rtol, what))
    if query == "sgemm":
        A, B = mk((M, K)), mk((K, N))
        cmp(run(gamut, query, {"A": A, "B": B}, backend)["C"], product(A, B), "C")
    elif query == "q1_amplify":
        S, W, t = mk((M, K)), mk((K, N)), mk((M,))
        m = S.astype(np.float64)[:, :, None] * W.astype(np.float64)[None, :, :]
        want = (m + (m > t[:, None, None]) * (m - t[:, None, None])).sum(axis=1)
        cmp(run(gamut, query, {"S": S, "W": W, "thres": t}, backend)["Out"], want, "Out")
    elif query in ("q2_zip_aggregate", "q3_count_pairs", "q4_join_area"):
        P, R = mk((M, K)), mk((K, N))
        g, h = rng.integers(0, 5, M).astype(np.int32), rng.integers(0, 4, N).astype(np.int64)
        acc = product(P, R)
        G, H = (g.max() + 1 if M else 0), (h.max() + 1 if N else 0)
        if query == "q2_zip_aggregate":
            want = np.zeros((G, H))
            np.add.at(want, (g[:, None], h[None, :]), acc)
            cmp(run(gamut, query, {"P": P, "R": R, "Pzip": g, "Rzip": h}, backend)["C"], want, "C")
        elif query == "q3_count_pairs":
            want = np.zeros((G, H), np.int32)
            np.add.at(want, (g[:, None], h[None, :]), (acc > 0.5).astype(np.int32))
            exact(run(gamut, query, {"P": P, "R": R, "Pzip": g, "Rzip": h, "thres": 0.5}, backend)["Cnt"], want, "Cnt")
        else:
            want = np.zeros((G,))
            match = g[:, None] == h[None, :]
            np.add.at(want, np.broadcast_to(g[:, None], acc.shape)[match], acc[match])
            cmp(run(gamut, query, {"P": P, "R": R, "Pzip": g, "Rzip": h}, backend)["AreaTotal"], want, "AreaTotal")
    elif query in ("q5_select", "q6_complementary"):
        if query == "q5_select":
            P, R = ints(rng, (M, K)), ints(rng, (K, N))
            acc, b = product(P, R), {"P": P, "R": R}
        else:
            A = ints(rng, (M, K))
            N = M
            Ad = A.astype(np.float64)
            acc = (np.maximum(Ad[:, None, :], Ad[None, :, :]) ** 2).sum(axis=2)
            b = {"A": A}
        thres = 1.5
        b["thres"] = thres
        ii, jj = np.nonzero(acc > thres)
        want = sorted((int(i), int(j), float(np.float32(acc[i, j]))) for i, j in zip(ii, jj))
        check_list(run(gamut, query, b, backend)["Pairs"], want, ["i", "j", "accum"], "Pairs")
    elif query == "q7_top128":
        P, R = ints(rng, (M, K), -1, 1), ints(rng, (K, N), -1, 1)  # many ties
        acc = product(P, R)
        cand = sorted(((-acc[i, j], i, j) for i in range(M) for j in range(N)))[:128]
        want = [(int(i), int(j), float(-a)) for a, i, j in cand]
        check_list(run(gamut, query, {"P": P, "R": R}, backend)["Top"], want, ["i", "j", "accum"], "Top")
    elif query == "knn":
        Q, X = ints(rng, (M, K), 0, 2), ints(rng, (N, K), 0, 2)
        d = ((Q.astype(np.float64)[:, None, :] - X.astype(np.float64)[None, :, :]) ** 2).sum(axis=2)
        want = []
        for i in range(M):
            want += [(i, int(j), float(dist)) for dist, j in sorted((d[i, j], j) for j in range(N))[:10]]
        check_list(run(gamut, query, {"Q": Q, "X": X}, backend)["Nearest"], want, ["i", "j", "dist"], "Nearest")
    elif query == "maxplus":
        A, B = ints(rng, (M, K), -1000, 1000, np.int32), ints(rng, (K, N), -1000, 1000, np.int32)
        want = np.full((M, N), np.iinfo(np.int32).min, np.int64)
        if K:
            want = (A.astype(np.int64)[:, :, None] + B.astype(np.int64)[None, :, :]).max(axis=1)
        exact(run(gamut, query, {"A": A, "B": B}, backend)["C"], want.astype(np.int32), "C")
    elif query == "minplus_batched":
        nb = 3
        D, E = ints(rng, (nb, M, K), 0, 50), ints(rng, (nb, K, N), 0, 50)
        want = np.full((nb, M, N), np.inf)
        if K:
            want = (D.astype(np.float64)[:, :, :, None] + E.astype(np.float64)[:, None, :, :]).min(axis=2)
        exact(run(gamut, query, {"D": D, "E": E}, backend)["Out"], want.astype(np.float32), "Out")
    elif query == "reachability":
        n = M
        Adj = (rng.random((n, n)) < 0.2).astype(np.uint8)
        want = ((Adj.astype(np.int64) @ Adj.astype(np.int64)) > 0).astype(np.int32)
        exact(run(gamut, query, {"Adj": Adj}, backend)["Reach"], want, "Reach")
    else:
        raise SystemExit(f"unknown query {query}")


def main():
    gamut, query = sys.argv[1], sys.argv[2]
    backend = sys.argv[4] if len(sys.argv) > 4 and sys.argv[3] == "--backend" else "cpu"
    if backend == "gpu":
        probe = subprocess.run([gamut, "device"], capture_output=True, text=True)
        if probe.returncode == 4:
            print(f"SKIPPED: {probe.stderr.strip()}")
            sys.exit(77)
    rng = np.random.default_rng(sum(map(ord, query)))
    failures = 0
    for (M, N, K) in SHAPES:
        for integer in (True, False):
            try:
                case(query, gamut, backend, rng, M, N, K, integer)
            except AssertionError as e:
                failures += 1
                print(f"FAIL {query} M={M} N={N} K={K} {'integer' if integer else 'random'}: {e}")
    print(f"{query}: {len(SHAPES) * 2 - failures} passed, {failures} failed")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
