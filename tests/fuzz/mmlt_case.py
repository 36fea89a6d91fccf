"""Cases on disk (query + .npy inputs + case.json with the comparison rules), gamut runs, and the
comparison of two sets of outputs as the rules say: exact for integers and deterministic floats
(NaN equals NaN), a relative bound on the norm otherwise; lists row by row in the spec's order.
"""
import json
import os
import subprocess

import numpy as np

# Relative bound on the norm for outputs that are not deterministic (mmlt_info). f64 values may come
# from f32 math (an f32 sum or exp cast to f64), so f64 gets the f32 bound: an engine bug is far off.
RTOL = {"f4": 1e-4, "f8": 1e-4, "f2": 1e-2}


def save_input(path, dtype, data):
    if dtype == "bf16":
        bits = (np.asarray(data, dtype=np.float32).view(np.uint32) >> 16).astype(np.uint16)
        np.save(path, bits.view(np.dtype("V2")))
    else:
        np.save(path, data)


def param_text(v):
    return str(v) if isinstance(v, int) else repr(float(v))


def write_case(case, d):
    """Write a generated case into directory d; returns the case description (case.json)."""
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "query.mmlt"), "w") as f:
        f.write(case.text)
    inputs = {}
    for name, op in case.operands.items():
        save_input(os.path.join(d, name + ".npy"), op.dtype, op.data)
        inputs[name] = op.dtype
    desc = {"seed": case.seed, "inputs": inputs, "params": case.params, "dims": case.dims,
            "rules": case.rules, "tags": case.tags}
    with open(os.path.join(d, "case.json"), "w") as f:
        json.dump(desc, f, indent=1, sort_keys=True)
    return desc


def load_inputs(d, desc):
    """name -> (dtype, values) as the model takes them (bf16 widened to f32 values)."""
    out = {}
    for name, dtype in desc["inputs"].items():
        a = np.load(os.path.join(d, name + ".npy"))
        if dtype == "bf16":
            a = (a.view(np.uint16).astype(np.uint32) << 16).view(np.float32)
        out[name] = (dtype, a)
    return out


def binding_args(d, desc):
    """NAME=FILE / NAME=VALUE bindings and --dim options of a case."""
    args = [f"{name}={os.path.join(d, name + '.npy')}" for name in desc["inputs"]]
    args += [f"{name}={param_text(v)}" for name, v in desc["params"].items()]
    for name, ext in desc["dims"].items():
        args += ["--dim", f"{name}={','.join(str(e) for e in ext)}"]
    return args


def gamut_args(gamut, d, desc, backend, out_dir, threads=None, extra=()):
    args = [gamut, "run", os.path.join(d, "query.mmlt"), "-o", out_dir, "--backend", backend] + binding_args(d, desc)
    if threads:
        args += ["--threads", str(threads)]
    return args + list(extra)


def run_gamut(gamut, d, desc, backend, out_dir, threads=None, extra=(), timeout=300, env=None):
    """Returns (outputs dict or None, error line or None)."""
    args = gamut_args(gamut, d, desc, backend, out_dir, threads, extra)
    try:
        p = subprocess.run(args, capture_output=True, text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        return None, f"{backend}: timed out after {timeout} s"
    if p.returncode != 0:
        first = (p.stderr.strip().splitlines() or ["(no message)"])[0]
        return None, f"{backend}: exit {p.returncode}: {first}"
    out = {}
    for f in sorted(os.listdir(out_dir)):
        if f.endswith(".npy"):
            out[f[:-4]] = np.load(os.path.join(out_dir, f))
    return out, None


def _same_values(a, b):
    """Elementwise equal, NaN equal to NaN (and -0 equal to 0)."""
    if a.dtype.kind == "f":
        return (a == b) | (np.isnan(a) & np.isnan(b))
    return a == b


# Unit roundoff per dtype kind: the rounding of one addition (the bound on long sums below).
UNIT_ROUNDOFF = {"f2": 2.0 ** -11, "f4": 2.0 ** -24, "f8": 2.0 ** -53}


def _close(a, b, kind, rtol=None, scale=0.0, terms=0):
    """Relative bound on the norm over the finite elements; non-finite ones must match. `scale` (the
    rule's bound on the elements' magnitude) floors the norm the error is relative to: where the
    terms of a sum cancel, rounding leaves an error relative to the terms, not to the result.
    `terms`: the number of pairs an aggregate `+=` sums into one element. The engines add them in
    different orders (the spec fixes none), and a sum of n terms in recursive order is off by up to
    (n - 1) u of the sum of their magnitudes; the bound is a quarter of that where it exceeds the
    kind's (a 1031 x 517 f32 sum: 8e-3; the CPU engine's one-thread order measured 1.1e-3 there)."""
    a = np.asarray(a)
    b = np.asarray(b)
    fa, fb = np.isfinite(a), np.isfinite(b)
    if not np.array_equal(fa, fb) or not np.all(_same_values(a[~fa], b[~fb])):
        return False, "non-finite values differ"
    x, y = a[fa].astype(np.float64), b[fb].astype(np.float64)
    if x.size == 0:
        return True, ""
    err = np.linalg.norm(x - y) / max(np.linalg.norm(y), scale, 1e-30)
    tol = (rtol or {}).get(kind) or RTOL.get(kind, 1e-4)
    tol = max(tol, terms * UNIT_ROUNDOFF.get(kind, 0.0) / 4)
    return err <= tol, f"relative error {err:.3g} > {tol}"


def _show(a, b, bad):
    idx = np.argwhere(bad)[:3]
    return "; ".join(f"at {tuple(int(v) for v in i)}: {a[tuple(i)]!r} vs {b[tuple(i)]!r}" for i in idx)


def compare(got, want, rules, labels=("a", "b"), rtol=None):
    """Mismatch lines (empty when the outputs agree as the rules say); rtol: {dtype kind: bound}
    over RTOL for this comparison."""
    msgs = []
    if sorted(got) != sorted(want):
        return [f"outputs {sorted(got)} ({labels[0]}) vs {sorted(want)} ({labels[1]})"]
    for name in sorted(want):
        a, b = got[name], want[name]
        rule = rules.get(name, {"kind": "dense", "exact": True})
        if a.dtype != b.dtype or a.shape != b.shape:
            msgs.append(f"{name}: {a.dtype}{a.shape} ({labels[0]}) vs {b.dtype}{b.shape} ({labels[1]})")
            continue
        if rule["kind"] == "dense":
            if rule.get("exact", True) or a.dtype.kind != "f":
                bad = ~_same_values(a, b)
                if bad.any():
                    msgs.append(f"{name}: {int(bad.sum())} of {a.size} elements differ ({_show(a, b, bad)})")
            else:
                ok, why = _close(a, b, a.dtype.str[1:], rtol, rule.get("scale", 0.0), rule.get("terms", 0))
                if not ok:
                    msgs.append(f"{name}: {why}")
            continue
        exact_cols = rule.get("exact_columns") or [True] * len(a.dtype.names)
        for c, field in enumerate(a.dtype.names):
            x, y = a[field], b[field]
            if exact_cols[c] if c < len(exact_cols) else True:
                bad = ~_same_values(x, y)
                if bad.any():
                    r = int(np.argmax(bad))
                    msgs.append(f"{name}.{field}: {int(bad.sum())} of {len(x)} rows differ (first row {r}: "
                                f"{a[r]!r} vs {b[r]!r})")
                    break
            elif x.dtype.kind == "f":
                ok, why = _close(x, y, x.dtype.str[1:], rtol)
                if not ok:
                    msgs.append(f"{name}.{field}: {why}")
    return msgs
