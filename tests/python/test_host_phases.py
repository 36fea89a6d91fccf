"""GAMUT_HOST_PHASES=1: a call's host time phase by phase in stats["host_phases_us"] (issue 39's
call overhead; src/core/host_phases.h). Off by default. Run in a child process: the switch is read
once per process."""
import json
import os
import subprocess
import sys

CHILD = r"""
import json, numpy as np, gamut
q = gamut.compile("where (i, j) { a = 0; reduce (k) { a += A[i, k] * B[k, j]; } C[i, j] = a; }")
A = np.arange(12, dtype=np.float32).reshape(3, 4) - 5
B = np.arange(8, dtype=np.float32).reshape(4, 2) + 1
out, stats = q.run({"A": A, "B": B}, backend="cpu")
assert np.array_equal(out["C"], A @ B), out["C"]
first = stats.get("host_phases_us")
for _ in range(3):   # (calls without stats leave nothing behind for the next call)
    q(A=A, B=B, backend="cpu")
_, again = q.run({"A": A, "B": B}, backend="cpu")
assert first is None or [p[0] for p in again["host_phases_us"]] == [p[0] for p in first], (first, again)
print(json.dumps(first))
"""


def run_child(env_value):
    env = dict(os.environ)
    env.pop("GAMUT_HOST_PHASES", None)
    if env_value is not None:
        env["GAMUT_HOST_PHASES"] = env_value
    r = subprocess.run([sys.executable, "-c", CHILD], env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout.strip().splitlines()[-1])


def test_phases_when_asked():
    phases = run_child("1")
    names = [p[0] for p in phases]
    # The binding's, the library's and the engine's marks, in call order.
    for want in ("py: bind the keywords", "run: stage inputs", "run: bind (memo)", "run: engine's end",
                 "run: locals freed", "py: export the outputs"):
        assert want in names, names
    assert names.index("py: bind the keywords") < names.index("run: stage inputs") < names.index("run: engine's end")
    assert all(us >= 0 for _, us in phases)
    assert sum(us for _, us in phases) > 0


def test_no_phases_by_default():
    assert run_child(None) is None
    assert run_child("0") is None
