#!/usr/bin/env python3
"""Relational MMLT benchmark (issue 4): gamut against cuBLAS SGEMM and PyTorch compositions.

For M = N = 16384 and K in (256, 1024), fp32 data, the reference queries Q2 (with and without the
aggregate push-down), Q3, Q4 (with and without push-down), Q5, Q7 and kNN:

- ours: `gamut run QUERY ... --backend gpu --json --repeat 5` (median CUDA-event time of 5
  launches after a warm-up: the kernel plus the device side of list outputs; for a push-down
  program, the sum of its stages' times), kernel_ms (the kernel alone) and device_peak_bytes
  (device memory gamut held at once, inputs included);
- call: the whole library call through the Python package (`gamut.compile(query)(P=..., ...)` on
  the same torch tensors on the device: output allocation and initialisation, kernel, list
  finalisation, results handed back), timed exactly as torch's composition is (CUDA events around
  the call, warm-up, median); needs `import gamut` (else "-"), not for the --no-rewrite variants
  (the package has no such option). torch/call compares whole call with whole composition;
  kernel/sgemm compares kernel with kernel;
- sgemm: the same product through torch.matmul (cuBLAS, TF32 off), CUDA events, warm-up, median;
- product: OUR fp32 product of the same operands (examples/sgemm.mmlt; bench/product_nt.mmlt for kNN's
  Q X^T), timed like ours: the issue's target is "a fused query at most 1.2x our fp32 product's time";
  for kNN also bench/knn_dense.mmlt (the same distances into a dense M x N output), which separates the
  inner op's cost (two instructions per step) from the fused selection's;
- torch: the natural materialising PyTorch composition of the query, CUDA events, warm-up,
  median, and its peak memory (torch.cuda.max_memory_allocated above the memory held before the
  call, plus the bytes of the inputs it reads, so that both peaks count inputs the same way);
- check: every result in full against float64 products of the same inputs (P R, and for kNN the
  exact distances): dense outputs element by element; counts per cell within the pairs whose exact
  value lies within rounding (1e-4 relative) of the threshold; lists row by row: every row's
  indices and value (value within 1e-4 of the exact one at those indices), no duplicate, every
  row that must be there (beyond rounding of the threshold / the N-th key) there, none that must
  not, in the order the language gives. The library call's results are checked the same way.
  Exit 1 when any check failed or any run failed.

Prints a table and writes JSON. usage:
  bench/relational.py [--gamut build-dev/gamut] [--json OUT.json] [--dry-run] [--ks 256,1024] [--n 16384]
--dry-run: M = N = 256, K in (32, 64), gamut --backend cpu, torch skipped when not importable
(the exact products then come from NumPy), so the whole flow runs on a machine without a GPU.
--self-test: the checks themselves, on the CPU engine at 200 x 200: right results pass, and each of a
set of wrong ones (a wrong index with the right key, a duplicate row, a missing row, a neighbour
swapped, a count or a sum off) fails; exit 1 otherwise.
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchlib import cuda_time, run_gamut  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
EXAMPLES = os.path.join(HERE, "..", "examples")
GROUPS = 16          # Pzip, Rzip in [0, GROUPS)
TOPN = 128           # Q7
KNN = 10             # kNN
Q5_FRACTION = 1e-3   # Q5 selects about this fraction of the pairs

try:
    import torch
    HAVE_TORCH = torch.cuda.is_available()
except Exception:  # not importable here: the dry run then uses the NumPy reference
    torch = None
    HAVE_TORCH = False

try:
    import gamut as gamut_py   # the Python package: the whole-call timing
except Exception as e:  # noqa: BLE001 (reported, the CLI figures still come)
    gamut_py = None
    GAMUT_PY_WHY = f"{type(e).__name__}: {e}"

# Relative rounding allowance of an f32 sum of K <= 1024 products of values in [0, 1) (about
# K * 2^-24 at worst): values within it of a threshold may land on either side.
ROUND = 1e-4


# ----------------------------------------------------------------------------- gamut


# ----------------------------------------------------------------------------- torch


def setup_torch():
    # The legacy flags only (PyTorch >= 2.9 warns that they will be deprecated; mixing them with the
    # new fp32_precision API can make the getters raise). Both say: no TF32, IEEE fp32 SGEMM.
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False


def cuda_peak(fn, input_bytes):
    """Peak device bytes of one fn() call: allocations above what was held before, plus its inputs."""
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    base = torch.cuda.memory_allocated()
    out = fn()
    torch.cuda.synchronize()
    peak = torch.cuda.max_memory_allocated() - base + input_bytes
    del out
    return peak


def nbytes(*ts):
    return sum(t.element_size() * t.nelement() for t in ts)


def torch_compositions(P, R, Pz, Rz, Q, X, t3, t5):
    """The natural materialising PyTorch composition of each query; each returns host-checkable results."""
    G = GROUPS
    N = R.shape[1]

    def q2():
        S = P @ R
        rows = torch.zeros(G, N, device=S.device, dtype=S.dtype).index_add_(0, Pz, S)
        return torch.zeros(G, G, device=S.device, dtype=S.dtype).index_add_(1, Rz, rows)

    def q3():
        S = P @ R
        hit = (S > t3).to(torch.float32)   # counts stay exact in fp32 (below 2^24 per group)
        rows = torch.zeros(G, N, device=S.device).index_add_(0, Pz, hit)
        return torch.zeros(G, G, device=S.device).index_add_(1, Rz, rows)

    def q4():
        S = P @ R
        match = Pz[:, None] == Rz[None, :]
        area = Pz[:, None].expand_as(S)[match]
        return torch.zeros(G, device=S.device, dtype=S.dtype).index_add_(0, area, S[match])

    def q5():
        S = P @ R
        ij = torch.nonzero(S > t5)
        return ij, S[ij[:, 0], ij[:, 1]]

    def q7():
        S = P @ R
        v, idx = torch.topk(S.flatten(), TOPN)
        return v, idx // N, idx % N

    def q3d():
        S = P @ R
        ij = torch.nonzero(S > t3)
        return torch.unique(Pz[ij[:, 0]] * G + Rz[ij[:, 1]])

    def knn():
        qq = (Q * Q).sum(1)
        xx = (X * X).sum(1)
        d = torch.addmm(qq[:, None] + xx[None, :], Q, X.t(), beta=1.0, alpha=-2.0)
        return torch.topk(d, KNN, dim=1, largest=False)

    ins = {"q2": nbytes(P, R, Pz, Rz), "q3": nbytes(P, R, Pz, Rz), "q4": nbytes(P, R, Pz, Rz),
           "q5": nbytes(P, R), "q7": nbytes(P, R), "knn": nbytes(Q, X), "q3d": nbytes(P, R, Pz, Rz)}
    return {"q2": q2, "q3": q3, "q4": q4, "q5": q5, "q7": q7, "knn": knn, "q3d": q3d}, ins


# ----------------------------------------------------------------------------- checks


class Exact:
    """Float64 products of the inputs (P R; kNN's distances), on the GPU with torch, else NumPy:
    what every result is checked against in full."""

    def __init__(self, P, R, Q, X, Pz, Rz, use_torch, dev):
        self.t = use_torch
        self.dev = dev
        self.host = (P, R, Q, X, Pz, Rz)
        self._S = self._D = None

    def _arr(self, a):
        return torch.from_numpy(a).to(self.dev) if self.t else a

    def S(self):
        if self._S is None:
            P, R = self.host[0], self.host[1]
            self._S = self._arr(P).double() @ self._arr(R).double() if self.t else \
                P.astype(np.float64) @ R.astype(np.float64)
        return self._S

    def D(self):
        """Squared distances of Q's rows to X's rows (exact to float64)."""
        if self._D is None:
            Q, X = self.host[2], self.host[3]
            if self.t:
                q, x = self._arr(Q).double(), self._arr(X).double()
                self._D = ((q * q).sum(1)[:, None] + (x * x).sum(1)[None, :]).addmm_(q, x.t(), alpha=-2.0)
            else:
                q, x = Q.astype(np.float64), X.astype(np.float64)
                self._D = (q * q).sum(1)[:, None] + (x * x).sum(1)[None, :] - 2.0 * (q @ x.T)
        return self._D

    def free(self):
        self._S = self._D = None
        if self.t:
            torch.cuda.empty_cache()

    def host_of(self, a):
        return a.cpu().numpy() if self.t else np.asarray(a)

    def gather(self, A, i, j):
        """A[i, j] for index arrays i, j (host), as float64 on the host."""
        if self.t:
            return A[torch.from_numpy(np.asarray(i, np.int64)).to(self.dev),
                     torch.from_numpy(np.asarray(j, np.int64)).to(self.dev)].cpu().numpy()
        return A[np.asarray(i, np.int64), np.asarray(j, np.int64)]

    def count(self, mask):
        return int(mask.sum().item()) if self.t else int(np.count_nonzero(mask))

    def cells(self, mask):
        """(GROUPS, GROUPS) counts of mask's pairs per (Pzip[i], Rzip[j])."""
        Pz, Rz = self.host[4], self.host[5]
        if self.t:
            pz = torch.from_numpy(Pz.astype(np.int64)).to(self.dev)
            rz = torch.from_numpy(Rz.astype(np.int64)).to(self.dev)
            rows = torch.zeros(GROUPS, mask.shape[1], dtype=torch.int64, device=self.dev).index_add_(
                0, pz, mask.to(torch.int64))
            return torch.zeros(GROUPS, GROUPS, dtype=torch.int64, device=self.dev).index_add_(1, rz, rows).cpu().numpy()
        C = np.zeros((GROUPS, GROUPS), np.int64)
        np.add.at(C, (Pz[:, None], Rz[None, :]), mask.astype(np.int64))
        return C

    def kth_largest(self, A, k):
        if self.t:
            return float(torch.topk(A.flatten(), k).values[-1].item())
        return float(np.partition(A.ravel(), A.size - k)[A.size - k])

    def kth_smallest_rows(self, A, k):
        if self.t:
            return torch.kthvalue(A, k, dim=1).values
        return np.partition(A, k - 1, axis=1)[:, k - 1]


def rel_err(got, want):
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    if got.shape != want.shape:
        return float("inf")
    return float(np.linalg.norm(got - want) / max(np.linalg.norm(want), 1e-30))


def max_rel(got, want):
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    if got.shape != want.shape:
        return float("inf")
    return float(np.max(np.abs(got - want) / np.maximum(np.abs(want), 1e-30))) if want.size else 0.0


def columns(outs, name, *cols):
    """A list output's columns as NumPy arrays (a structured array from the CLI, a dict of columns
    from the Python package)."""
    L = outs[name]
    return [np.asarray(L[c]) for c in cols]


def no_duplicates(*cols):
    keys = np.stack([np.asarray(c, np.int64) for c in cols], axis=1)
    return len(np.unique(keys, axis=0)) == len(keys)


def lex_sorted(*cols):
    """Rows ascending column by column (the order of plain and distinct lists)."""
    if len(cols[0]) < 2:
        return True
    order = np.lexsort(tuple(reversed([np.asarray(c) for c in cols])))
    return bool(np.array_equal(order, np.arange(len(order))))


def check_rows(ex, A, i, j, v, what):
    """Each row's value against the exact one at its indices: (ok, exact values, text)."""
    exact = ex.gather(A, i, j)
    e = max_rel(v, exact) if len(v) else 0.0
    return e <= ROUND, exact, f"{what} maxrel {e:.1e}"


def check(name, outs, ex, t3, t5, M, N):
    """(ok, text): gamut's outputs against the exact products, in full (module doc)."""
    try:
        if name in ("q2", "q2_norewrite", "q4", "q4_norewrite"):
            S = ex.S()
            Pz, Rz = ex.host[4], ex.host[5]
            if name.startswith("q2"):
                got = np.asarray(outs["C"], np.float64)
                if ex.t:
                    pz = torch.from_numpy(Pz.astype(np.int64)).to(ex.dev)
                    rz = torch.from_numpy(Rz.astype(np.int64)).to(ex.dev)
                    rows = torch.zeros(GROUPS, N, dtype=torch.float64, device=ex.dev).index_add_(0, pz, S)
                    want = torch.zeros(GROUPS, GROUPS, dtype=torch.float64, device=ex.dev).index_add_(1, rz, rows).cpu().numpy()
                else:
                    want = np.zeros((GROUPS, GROUPS))
                    np.add.at(want, (Pz[:, None], Rz[None, :]), S)
            else:
                got = np.asarray(outs["AreaTotal"], np.float64)
                if ex.t:
                    pz = torch.from_numpy(Pz.astype(np.int64)).to(ex.dev)
                    rz = torch.from_numpy(Rz.astype(np.int64)).to(ex.dev)
                    match = pz[:, None] == rz[None, :]
                    area = pz[:, None].expand_as(S)[match]
                    want = torch.zeros(GROUPS, dtype=torch.float64, device=ex.dev).index_add_(0, area, S[match]).cpu().numpy()
                else:
                    m = Pz[:, None] == Rz[None, :]
                    want = np.zeros(GROUPS)
                    np.add.at(want, np.broadcast_to(Pz[:, None], S.shape)[m], S[m])
            if got.shape != want.shape:
                return False, f"shape {got.shape} vs {want.shape}"
            e, em = rel_err(got, want), max_rel(got, want)
            return em <= 1e-3, f"every element: maxrel {em:.1e} (relerr {e:.1e})"
        if name == "q3":
            S = ex.S()
            got = np.asarray(outs["Cnt"]).astype(np.int64)
            want = ex.cells(S > t3)
            near = ex.cells(abs(S - t3) <= ROUND * abs(t3))
            if got.shape != want.shape:
                return False, f"shape {got.shape} vs {want.shape}"
            off = np.abs(got - want)
            bad = int(np.count_nonzero(off > near))
            return bad == 0, (f"every cell: {bad} of {want.size} off by more than its pairs within rounding of the "
                              f"threshold (largest difference {int(off.max())}, {int(near.sum())} such pairs)")
        if name == "q5":
            S = ex.S()
            i, j, v = columns(outs, "Pairs", "i", "j", "accum")
            ok_v, exact, text = check_rows(ex, S, i, j, v, "values")
            band = ROUND * abs(t5)
            wrong_in = int(np.count_nonzero(exact <= t5 - band))          # rows that must not be there
            must = ex.count(S > t5 + band)                                 # pairs that must be there
            have = int(np.count_nonzero(exact > t5 + band))
            dup = not no_duplicates(i, j)
            order = lex_sorted(i, j, v)
            ok = ok_v and wrong_in == 0 and have == must and not dup and order
            return ok, (f"{len(i)} rows; {text}; {must - have} required rows missing, {wrong_in} rows below the "
                        f"threshold{', duplicates' if dup else ''}{'' if order else ', not in ascending order'}")
        if name == "q7":
            S = ex.S()
            i, j, v = columns(outs, "Top", "i", "j", "accum")
            ok_v, exact, text = check_rows(ex, S, i, j, v, "keys")
            kth = ex.kth_largest(S, TOPN)
            band = ROUND * abs(kth)
            wrong_in = int(np.count_nonzero(exact < kth - band))
            must = ex.count(S > kth + band)
            have = int(np.count_nonzero(exact > kth + band))
            dup = not no_duplicates(i, j)
            order = len(v) < 2 or bool(np.all(np.diff(np.asarray(v, np.float64)) <= 0))
            ok = ok_v and len(i) == TOPN and wrong_in == 0 and have == must and not dup and order
            return ok, (f"{len(i)} rows (want {TOPN}); {text}; {must - have} required pairs missing, {wrong_in} below "
                        f"the {TOPN}th key{', duplicates' if dup else ''}{'' if order else ', not largest key first'}")
        if name == "knn":
            D = ex.D()
            i, j, v = columns(outs, "Nearest", "i", "j", "dist")
            ok_v, exact, text = check_rows(ex, D, i, j, v, "distances")
            kth = ex.host_of(ex.kth_smallest_rows(D, KNN))        # per row i
            band = ROUND * np.abs(kth)
            ii = np.asarray(i, np.int64)
            per_row = np.bincount(ii, minlength=M) if len(ii) else np.zeros(M, np.int64)
            wrong_in = int(np.count_nonzero(exact > kth[ii] + band[ii]))
            if ex.t:
                lim = torch.from_numpy(kth - band).to(ex.dev)
                must = (D < lim[:, None]).sum(1).cpu().numpy()
            else:
                must = (D < (kth - band)[:, None]).sum(1)
            have = np.bincount(ii[exact < kth[ii] - band[ii]], minlength=M) if len(ii) else np.zeros(M, np.int64)
            missing = int(np.sum(np.maximum(must - have, 0)))
            dup = not no_duplicates(i, j)
            # By i, then by key (smallest first).
            order = lex_sorted(i, v)
            ok = ok_v and bool(np.all(per_row == KNN)) and wrong_in == 0 and missing == 0 and not dup and order
            return ok, (f"{len(i)} rows ({int(np.count_nonzero(per_row != KNN))} of {M} rows of Q without {KNN}); "
                        f"{text}; {missing} required neighbours missing, {wrong_in} beyond the {KNN}th distance"
                        f"{', duplicates' if dup else ''}{'' if order else ', not by i then distance'}")
        if name == "q3_distinct":
            S = ex.S()
            pz, rz = columns(outs, "Areas", "pz", "rz")
            band = ROUND * abs(t3)
            must = ex.cells(S > t3 + band) > 0
            may = ex.cells(S > t3 - band) > 0
            got = np.zeros((GROUPS, GROUPS), bool)
            got[np.asarray(pz, np.int64), np.asarray(rz, np.int64)] = True
            dup = not no_duplicates(pz, rz)
            order = lex_sorted(pz, rz)
            missing, extra = int(np.count_nonzero(must & ~got)), int(np.count_nonzero(got & ~may))
            ok = missing == 0 and extra == 0 and not dup and order
            return ok, (f"{len(pz)} rows; {missing} required cells missing, {extra} cells without a pair above the "
                        f"threshold{', duplicates' if dup else ''}{'' if order else ', not in ascending order'}")
    except Exception as ex_:  # a missing output or a wrong layout: a failed check
        return False, f"check failed: {type(ex_).__name__}: {ex_}"
    return False, "no check"


# ----------------------------------------------------------------------------- main


CASES = [  # (case name, torch composition, query file, extra gamut args, outputs bound)
    ("q2", "q2", "q2_zip_aggregate", ["--dim", f"C={GROUPS},{GROUPS}"]),
    ("q2_norewrite", "q2", "q2_zip_aggregate", ["--dim", f"C={GROUPS},{GROUPS}", "--no-rewrite"]),
    ("q3", "q3", "q3_count_pairs", ["--dim", f"Cnt={GROUPS},{GROUPS}"]),
    ("q4", "q4", "q4_join_area", ["--dim", f"AreaTotal={GROUPS}"]),
    ("q4_norewrite", "q4", "q4_join_area", ["--dim", f"AreaTotal={GROUPS}", "--no-rewrite"]),
    ("q5", "q5", "q5_select", []),
    ("q7", "q7", "q7_top128", []),
    ("knn", "knn", "knn", []),
    ("q3_distinct", "q3d", "bench:distinct_areas", []),
]


def f32_text(x):
    """A float32 value as text that parses back to exactly that value."""
    return repr(float(np.float32(x)))


def thresholds(P, R, rng, use_torch):
    """Q3: the median of S; Q5: the (1 - Q5_FRACTION) quantile; from a sample of S's rows."""
    M = P.shape[0]
    rows = np.sort(rng.choice(M, size=min(M, 512), replace=False))
    if use_torch:
        S = (P[torch.as_tensor(rows, device=P.device)] @ R).flatten()
        n = S.numel()
        med = torch.kthvalue(S.cpu(), max(1, n // 2)).values.item()
        hi = torch.kthvalue(S.cpu(), max(1, int(round(n * (1 - Q5_FRACTION))))).values.item()
    else:
        S = np.sort((P[rows] @ R).ravel())
        n = S.size
        med, hi = S[max(0, n // 2 - 1)], S[max(0, int(round(n * (1 - Q5_FRACTION))) - 1)]
    return float(np.float32(med)), float(np.float32(hi))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--gamut", default=os.path.join(HERE, "..", "build-dev", "gamut"))
    ap.add_argument("--json", default="relational.json", help="write the results here")
    ap.add_argument("--dry-run", action="store_true")
    ap.add_argument("--n", type=int, default=None, help="M = N (default 16384; dry run 256)")
    ap.add_argument("--ks", default=None, help="comma-separated K values (default 256,1024; dry run 32,64)")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--timeout", type=float, default=120.0, help="seconds per gamut run")
    ap.add_argument("--tmp", default=None, help="folder for the .npy inputs (default: a temp dir)")
    ap.add_argument("--only", default=None, help="comma-separated case names (q2,q2_norewrite,q3,...)")
    ap.add_argument("--self-test", action="store_true", help="check the checks (CPU engine, small sizes)")
    a = ap.parse_args()
    if a.self_test:
        return self_test(os.path.abspath(a.gamut))

    n = a.n or (256 if a.dry_run else 16384)
    ks = [int(k) for k in (a.ks or ("32,64" if a.dry_run else "256,1024")).split(",")]
    backend = "cpu" if a.dry_run else "gpu"
    use_torch = HAVE_TORCH
    if not use_torch and not a.dry_run:
        sys.exit("relational.py: PyTorch with CUDA is needed (or use --dry-run)")
    gamut = os.path.abspath(a.gamut)
    cases = [c for c in CASES if not a.only or c[0] in a.only.split(",")]
    dev = None
    if use_torch:
        setup_torch()
        dev = torch.device("cuda")
    info = {"M": n, "N": n, "ks": ks, "backend": backend, "torch": torch.__version__ if torch else None,
            "device": torch.cuda.get_device_name(0) if use_torch else None, "repeat": a.repeat,
            "dry_run": a.dry_run, "results": []}
    print(f"relational: M=N={n} K={ks} backend={backend} torch={'yes' if use_torch else 'no (NumPy reference)'}"
          + (f" device={info['device']}" if use_torch else ""), flush=True)

    tmp = a.tmp or tempfile.mkdtemp(prefix="gamut-relbench-")
    os.makedirs(tmp, exist_ok=True)
    rng = np.random.default_rng(4)
    try:
        for K in ks:
            M = N = n
            # Inputs, once per (M, N, K): the same arrays go to gamut (.npy) and to torch.
            P = rng.random((M, K), dtype=np.float32)
            R = rng.random((K, N), dtype=np.float32)
            Q = rng.random((M, K), dtype=np.float32)
            X = rng.random((N, K), dtype=np.float32)
            Pz = rng.integers(0, GROUPS, M).astype(np.int32)
            Rz = rng.integers(0, GROUPS, N).astype(np.int32)
            files = {}
            for name, arr in (("P", P), ("R", R), ("Q", Q), ("X", X), ("Pzip", Pz), ("Rzip", Rz)):
                files[name] = os.path.join(tmp, f"{name}_{M}x{N}x{K}.npy")
                np.save(files[name], arr)

            if use_torch:
                tP, tR, tQ, tX = (torch.from_numpy(x).to(dev) for x in (P, R, Q, X))
                tPz = torch.from_numpy(Pz).to(dev).long()
                tRz = torch.from_numpy(Rz).to(dev).long()
                t3, t5 = thresholds(tP, tR, rng, True)
                comps, in_bytes = torch_compositions(tP, tR, tPz, tRz, tQ, tX, t3, t5)
                sg_nn, _ = cuda_time(lambda: torch.matmul(tP, tR), a.repeat, warmup=2)
                sg_nt, _ = cuda_time(lambda: torch.matmul(tQ, tX.t()), a.repeat, warmup=2)
            else:
                t3, t5 = thresholds(P, R, rng, False)
            exact = Exact(P, R, Q, X, Pz, Rz, use_torch, dev)
            print(f"K={K}: Q3 thres {f32_text(t3)} (median), Q5 thres {f32_text(t5)} "
                  f"({Q5_FRACTION:g} quantile)", flush=True)

            # Our own products of the same operands (no outputs written to disk).
            prod = {}
            # (Q X^T at 128x256x16/8x16, its fastest tile on the H200, 1.3x faster than the tile
            # the chooser gives it: the stricter denominator for kNN.)
            for key, qpath, b, ex in (
                    ("nn", os.path.join(EXAMPLES, "sgemm.mmlt"), {"A": files["P"], "B": files["R"]}, []),
                    ("nt", os.path.join(HERE, "product_nt.mmlt"), {"Q": files["Q"], "X": files["X"]},
                     [] if a.dry_run else ["--tile", "128x256x16/8x16"]),
                    ("knn_dense", os.path.join(HERE, "knn_dense.mmlt"), {"Q": files["Q"], "X": files["X"]}, [])):
                if key != "nn" and not any(c[1] == "knn" for c in cases):
                    continue
                j, err, _ = run_gamut(gamut, qpath, b, backend, a.repeat, a.timeout, ex)
                prod[key] = j["time_ms"] if j else None
                print(f"  our product {key:9s} K={K}: {fmt(prod[key])} ms" + (f"  FAILED {err}" if err else ""), flush=True)
            info.setdefault("products", []).append({"K": K, **prod})

            torch_res = {}   # composition name -> (ms, peak bytes)
            for case, comp, qfile, extra in cases:
                if comp not in torch_res:
                    if use_torch:
                        ms, out = cuda_time(comps[comp], a.repeat, warmup=2)
                        del out
                        peak = cuda_peak(comps[comp], in_bytes[comp])
                        torch_res[comp] = (ms, peak)
                    else:
                        torch_res[comp] = (None, None)
                tms, tpeak = torch_res[comp]

                if comp == "knn":
                    b = {"Q": files["Q"], "X": files["X"]}
                else:
                    b = {"P": files["P"], "R": files["R"]}
                if comp in ("q2", "q3", "q4", "q3d"):
                    b.update(Pzip=files["Pzip"], Rzip=files["Rzip"])
                if comp in ("q3", "q3d"):
                    b["thres"] = f32_text(t3)
                if comp == "q5":
                    b["thres"] = f32_text(t5)
                qpath = (os.path.join(HERE, qfile[6:] + ".mmlt") if qfile.startswith("bench:")
                         else os.path.join(EXAMPLES, qfile + ".mmlt"))
                j, err, outs = run_gamut(gamut, qpath, b, backend,
                                         a.repeat, a.timeout, extra, os.path.join(tmp, "out"))
                sg = (sg_nt if comp == "knn" else sg_nn) if use_torch else None
                r = {"query": case, "M": M, "N": N, "K": K, "sgemm_ms": sg, "torch_ms": tms,
                     "product_ms": prod.get("nt" if comp == "knn" else "nn"),
                     "knn_dense_ms": prod.get("knn_dense") if comp == "knn" else None,
                     "torch_peak_bytes": tpeak, "error": err}
                if j:
                    ok, text = check(case, outs, exact, t3, t5, M, N)
                    r.update(ours_ms=j["time_ms"], ours_kernel_ms=j.get("kernel_ms"), ours_wall_ms=j.get("wall_ms"),
                             tile=j.get("tile"),
                             ours_peak_bytes=j.get("device_peak_bytes"), compile_ms=j.get("compile_ms"),
                             check_ok=ok, check=text, outputs=j.get("outputs"))
                    if comp == "q5":
                        r["q5_rows"] = int(len(outs.get("Pairs", [])))
                    appended = [o.get("rows_appended") for o in (j.get("outputs") or []) if o.get("kind") == "list"]
                    if appended and appended[0] is not None:
                        r["rows_appended"] = appended[0]
                        r["check"] += f"; kernel appended {appended[0]} rows"
                else:
                    r.update(ours_ms=None, ours_peak_bytes=None, check_ok=False, check="gamut failed")
                # The whole library call, timed as torch's composition is, its results checked too.
                if gamut_py is not None and "--no-rewrite" not in extra:
                    arrays = ({"Q": tQ, "X": tX, "P": tP, "R": tR, "Pzip": tPz, "Rzip": tRz} if use_torch else
                              {"Q": Q, "X": X, "P": P, "R": R, "Pzip": Pz, "Rzip": Rz})
                    cb = {k: (float(np.float32(float(v))) if k == "thres" else arrays[k]) for k, v in b.items()}
                    cms, cok, ctext, cerr = library_call(qpath, cb, backend, a.repeat, use_torch, case, exact, t3, t5, M, N)
                    r.update(call_ms=cms, call_check_ok=cok, call_check=ctext, call_error=cerr)
                    print(f"  {case:13s} K={K}: library call {fmt(cms)} ms  "
                          f"{('FAILED ' + cerr) if cerr else ('ok ' if cok else 'BAD ') + ctext}", flush=True)
                info["results"].append(r)
                print(f"  {case:13s} K={K}: ours {fmt(r['ours_ms'])} ms (kernel {fmt(r.get('ours_kernel_ms'))})  "
                      f"torch {fmt(tms)} ms  sgemm {fmt(sg)} ms  "
                      f"{('FAILED ' + err) if err else ('ok ' if r['check_ok'] else 'BAD ') + r['check']}", flush=True)
            exact.free()
            if use_torch:
                del tP, tR, tQ, tX, tPz, tRz, comps
                torch.cuda.empty_cache()
    finally:
        if not a.tmp:
            shutil.rmtree(tmp, ignore_errors=True)

    table = make_table(info["results"])
    print(table)
    if gamut_py is None:
        print(f"(no library call timings: the Python package does not import: {GAMUT_PY_WHY})")
    info["table"] = table
    with open(a.json, "w") as f:
        json.dump(info, f, indent=1, default=lambda o: o.tolist() if hasattr(o, "tolist") else str(o))
    print(f"wrote {a.json}")
    bad = [r["query"] + f" K={r['K']}" + (" (library call)" if not r["check_ok"] and r.get("error") is None and
                                          r.get("call_check_ok") is False else "")
           for r in info["results"] if r.get("error") or not r.get("check_ok") or r.get("call_error")
           or r.get("call_check_ok") is False]
    if bad:
        print(f"relational: FAILED: {len(bad)} wrong or failed result(s): {', '.join(bad)}")
        return 1
    print(f"relational: all {len(info['results'])} results checked in full: ok")
    return 0


def self_test(gamut):
    """Right results pass the checks and wrong ones fail them (module doc); 0 when so."""
    rng = np.random.default_rng(1)
    M = N = 200
    K = 48
    P, R = rng.random((M, K), dtype=np.float32), rng.random((K, N), dtype=np.float32)
    Q, X = rng.random((M, K), dtype=np.float32), rng.random((N, K), dtype=np.float32)
    Pz, Rz = rng.integers(0, GROUPS, M).astype(np.int32), rng.integers(0, GROUPS, N).astype(np.int32)
    ex = Exact(P, R, Q, X, Pz, Rz, False, None)
    t3, t5 = thresholds(P, R, rng, False)
    tmp = tempfile.mkdtemp(prefix="gamut-relbench-selftest-")
    try:
        files = {}
        for name, arr in (("P", P), ("R", R), ("Q", Q), ("X", X), ("Pzip", Pz), ("Rzip", Rz)):
            files[name] = os.path.join(tmp, name + ".npy")
            np.save(files[name], arr)
        runs = {"q2": ("q2_zip_aggregate", ["P", "R", "Pzip", "Rzip"], {}),
                "q3": ("q3_count_pairs", ["P", "R", "Pzip", "Rzip"], {"thres": f32_text(t3)}),
                "q5": ("q5_select", ["P", "R"], {"thres": f32_text(t5)}), "q7": ("q7_top128", ["P", "R"], {}),
                "knn": ("knn", ["Q", "X"], {})}
        outs = {}
        for case, (qfile, names, params) in runs.items():
            b = {n: files[n] for n in names}
            b.update(params)
            j, err, o = run_gamut(gamut, os.path.join(EXAMPLES, qfile + ".mmlt"), b, "cpu", 0, 120, (),
                                  os.path.join(tmp, "out_" + case))
            if err:
                print(f"self-test: gamut failed on {case}: {err}")
                return 1
            outs[case] = o
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    def wrong_index(o):   # the right key at a wrong index (a check of sorted keys alone passes it)
        o["Top"]["j"][5] = (o["Top"]["j"][5] + 1) % N

    def duplicate(o):
        o["Top"]["i"][0], o["Top"]["j"][0] = o["Top"]["i"][1], o["Top"]["j"][1]

    def missing(o):
        o["Pairs"] = o["Pairs"][1:]

    def moved(o):
        o["Pairs"]["i"][3] = (o["Pairs"]["i"][3] + 7) % M

    def neighbour(o):
        o["Nearest"]["j"][11] = (o["Nearest"]["j"][11] + 3) % N

    def count(o):
        o["Cnt"][2, 3] += 5

    def total(o):
        o["C"][0, 0] *= 1.01

    bad = 0
    for case in runs:
        ok, text = check(case, outs[case], ex, t3, t5, M, N)
        print(f"self-test {case:4s} right results: {'pass' if ok else 'FAIL'} ({text})")
        bad += not ok
    for case, fn in (("q7", wrong_index), ("q7", duplicate), ("q5", missing), ("q5", moved), ("knn", neighbour),
                     ("q3", count), ("q2", total)):
        o = {k: v.copy() for k, v in outs[case].items()}
        fn(o)
        ok, text = check(case, o, ex, t3, t5, M, N)
        print(f"self-test {case:4s} {fn.__name__:11s}: {'caught' if not ok else 'MISSED'} ({text})")
        bad += ok
    print(f"relational self-test: {'ok' if not bad else f'FAILED ({bad})'}")
    return 1 if bad else 0


def py_outputs(o):
    """The package's outputs as NumPy (lists: dicts of columns)."""
    conv = lambda t: t.cpu().numpy() if hasattr(t, "cpu") else np.asarray(t)  # noqa: E731
    return {k: ({c: conv(x) for c, x in v.items()} if isinstance(v, dict) else conv(v)) for k, v in o.items()}


def library_call(qpath, bindings, backend, repeat, use_torch, case, exact, t3, t5, M, N):
    """(median ms, check ok, check text, error) of the whole `q(**bindings)` call."""
    try:
        q = gamut_py.load(qpath)
        fn = lambda: q(**bindings, backend=backend)  # noqa: E731
        if use_torch:
            ms, out = cuda_time(fn, repeat, warmup=2)
        else:
            fn()
            times = []
            for _ in range(repeat):
                t0 = time.perf_counter()
                out = fn()
                times.append((time.perf_counter() - t0) * 1e3)
            ms = statistics.median(times)
        ok, text = check(case, py_outputs(out), exact, t3, t5, M, N)
        return ms, ok, text, None
    except Exception as e:  # noqa: BLE001 (a failed call is a failed result)
        return None, False, "", f"{type(e).__name__}: {str(e)[:200]}"


def fmt(v, d=3):
    return "-" if v is None else f"{v:.{d}f}"


def make_table(results):
    """ours: kernel + list finalisation (CLI, CUDA events); kernel: the kernel alone; call: the whole
    library call; kernel/sgemm: kernel against kernel; torch/call: whole composition against whole
    call (both CUDA events around the call, inputs on the device)."""
    head = (f"{'query':13s} {'K':>5s} {'ours ms':>9s} {'kernel ms':>9s} {'call ms':>9s} {'prod ms':>9s}"
            f" {'ours/prod':>9s} {'sgemm ms':>9s} {'kern/sgemm':>10s} {'torch ms':>9s} {'torch/call':>10s}"
            f" {'ours MB':>8s} {'torch MB':>9s}  check")
    lines = [head, "-" * len(head)]
    for r in results:
        o, s, t, p = r["ours_ms"], r["sgemm_ms"], r["torch_ms"], r.get("product_ms")
        kern, call = r.get("ours_kernel_ms"), r.get("call_ms")
        mb = lambda b: None if b is None else b / 2**20  # noqa: E731
        check = r["check"] if not r["error"] else "FAILED: " + r["error"][:60]
        if r["error"] is None:
            check = ("ok " if r["check_ok"] else "BAD ") + check
        if r.get("call_error"):
            check += "; library call FAILED: " + r["call_error"][:60]
        elif r.get("call_check_ok") is False:
            check += "; library call BAD: " + r.get("call_check", "")
        if r.get("knn_dense_ms") and o:
            check += f"; knn dense {fmt(r['knn_dense_ms'])} ms, ours/dense {o / r['knn_dense_ms']:.2f}"
        lines.append(f"{r['query']:13s} {r['K']:5d} {fmt(o):>9s} {fmt(kern):>9s} {fmt(call):>9s} {fmt(p):>9s}"
                     f" {fmt(o / p if o and p else None, 2):>9s} {fmt(s):>9s}"
                     f" {fmt(kern / s if kern and s else None, 2):>10s} {fmt(t):>9s}"
                     f" {fmt(t / call if call and t else None, 2):>10s} {fmt(mb(r['ours_peak_bytes']), 0):>8s}"
                     f" {fmt(mb(r['torch_peak_bytes']), 0):>9s}  {check}")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
