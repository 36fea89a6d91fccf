#!/usr/bin/env python3
"""Regression cases the differential fuzzer found (tests/fuzz/cases/*.json), each a minimal query
with its inputs and the expected outputs (or exit status), run end to end through `gamut run`.

A case: {"about": ..., "query": TEXT, "inputs": {NAME: {"dtype": D, "values": nested list}},
"params": {NAME: number}, "dims": {NAME: [extents]}, "gpu_args": [more `gamut run` arguments on the GPU,
e.g. "--gpus", "0,0"], "expect": {OUTPUT: {"dtype": D, "values":
nested list} or, for a list, {"fields": [[NAME, DTYPE]...], "rows": [[...]...]}} or {"exit": STATUS}}
(JSON with NaN and Infinity as Python writes them). Dense outputs compare exactly (the cases use integer data).
A case with "known_defect" documents an open defect (strict xfail): it must fail, and fail the way
its "known_error" (a regular expression, searched in the failure) says, on the backends its
"known_defect_backends" lists (default: every backend; on the others it must pass); then it is reported as `known`
and does not fail the run. A known-defect case that passes (the defect was fixed: drop the marker) or
fails another way (a new defect) fails the run, so that the marker cannot go stale.

usage: run_cases.py GAMUT [--backend cpu|gpu] [CASE.json ...]   (exit 77: no GPU for --backend gpu;
                                                                 exit 1 then under GAMUT_REQUIRE_GPU=1)
"""
import argparse
import glob
import json
import os
import re
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from mmlt_case import save_input  # noqa: E402

NP = {"bool": np.bool_, "u8": np.uint8, "i8": np.int8, "i16": np.int16, "i32": np.int32, "i64": np.int64,
      "f16": np.float16, "bf16": np.float32, "f32": np.float32, "f64": np.float64}


def same(a, b):
    """Equal values, NaN equal to NaN, field by field for lists."""
    if a.dtype.names:
        return all(same(a[f], b[f]) for f in a.dtype.names)
    return np.array_equal(a, b, equal_nan=a.dtype.kind == "f")


def run_case(gamut, path, backend):
    case = json.load(open(path))
    with tempfile.TemporaryDirectory() as d:
        q = os.path.join(d, "query.mmlt")
        open(q, "w").write(case["query"])
        args = [gamut, "run", q, "-o", os.path.join(d, "out"), "--backend", backend]
        for name, spec in case.get("inputs", {}).items():
            f = os.path.join(d, name + ".npy")
            save_input(f, spec["dtype"], np.array(spec["values"], dtype=NP[spec["dtype"]]))
            args.append(f"{name}={f}")
        args += [f"{n}={v}" for n, v in case.get("params", {}).items()]
        for n, ext in case.get("dims", {}).items():
            args += ["--dim", f"{n}={','.join(str(e) for e in ext)}"]
        if backend == "gpu":
            args += case.get("gpu_args", [])
        p = subprocess.run(args, capture_output=True, text=True)
        want_exit = case["expect"].get("exit", 0) if isinstance(case["expect"].get("exit"), int) else 0
        if p.returncode != want_exit:
            return f"exit {p.returncode}, want {want_exit}: {p.stderr.strip()[:300]}"
        if want_exit:
            return None
        for name, spec in case["expect"].items():
            f = os.path.join(d, "out", name + ".npy")
            if not os.path.exists(f):
                return f"output {name} missing"
            got = np.load(f)
            if "fields" in spec:   # a list: rows of a structured array
                want = np.array([tuple(r) for r in spec["rows"]], dtype=[tuple(x) for x in spec["fields"]])
            else:
                want = np.array(spec["values"], dtype=spec["dtype"])
            if got.dtype != want.dtype or got.shape != want.shape or not same(got, want):
                return f"{name}: got {got.dtype}{got.shape} {got.ravel()[:8]}, want {want.dtype}{want.shape} {want.ravel()[:8]}"
    return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("gamut")
    ap.add_argument("--backend", default="cpu")
    ap.add_argument("cases", nargs="*")
    o = ap.parse_args()
    if o.backend == "gpu" and subprocess.run([o.gamut, "device"], capture_output=True).returncode != 0:
        if os.environ.get("GAMUT_REQUIRE_GPU", "") not in ("", "0"):
            print("FAILED: GAMUT_REQUIRE_GPU=1 but no GPU (gamut device failed)")
            return 1
        print("no GPU: skipped")
        return 77
    cases = o.cases or sorted(glob.glob(os.path.join(os.path.dirname(os.path.abspath(__file__)), "cases", "*.json")))
    failed = known = 0
    for c in cases:
        err = run_case(o.gamut, c, o.backend)
        spec = json.load(open(c))
        note = spec.get("known_defect")
        if note and o.backend not in spec.get("known_defect_backends", [o.backend]):
            note = None   # the defect shows on other backends: here the case must pass
        name = os.path.basename(c)
        if note:
            pattern = spec.get("known_error", "")
            if not err:
                failed += 1
                print(f"FAIL  {name}: marked known_defect ({note}) but passes: the defect is fixed; drop the marker")
            elif not re.search(pattern, err):
                failed += 1
                print(f"FAIL  {name}: marked known_defect ({note}) but fails another way: {err} "
                      f"(the known failure matches {pattern!r})")
            else:
                known += 1
                print(f"known {name} ({note}): {err}")
        else:
            print(f"{'FAIL' if err else 'ok  '}  {name}" + (f": {err}" if err else ""))
            failed += bool(err)
    print(f"{len(cases)} cases, {failed} failed, {known} known open defects ({o.backend})")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
