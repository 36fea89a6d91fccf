#!/usr/bin/env python3
"""The GPU side of a differential case run through the Python package instead of the command line:
inputs as framework tensors on the GPU (torch CUDA tensors where torch is installed, so the kernel
reads them in place and writes dense outputs into the framework's memory), outputs saved as the
command line saves them (.npy, a list as a structured array of its columns).

Run as a server (`python_side.py --serve`): one JSON request per line on stdin, one JSON answer per
line on stdout, so that a fuzz worker pays for `import torch` and the CUDA context once.
Request: {"dir": CASE_DIR, "out": OUT_DIR, "backend": "gpu", "f32_math": M, "devices": D or null}.
Answer: {"ok": true} or {"error": "one line"}.

`PythonSide` is the client: it starts the server on first use and again after it died (a crash is
reported as that case's error, with the server's last words).
"""
import json
import os
import subprocess
import sys
import threading

import numpy as np


def _framework():
    """torch when it can hold CUDA tensors (or GAMUT_FUZZ_TORCH_CPU=1: torch CPU tensors, to try
    this path without a GPU), else None (NumPy arrays)."""
    try:
        import torch
        if torch.cuda.is_available() or os.environ.get("GAMUT_FUZZ_TORCH_CPU") == "1":
            return torch
    except ImportError:
        pass
    return None


def _bf16_numpy(a):
    try:
        import ml_dtypes
        return a.view(np.uint16).view(ml_dtypes.bfloat16)
    except ImportError:
        return a   # 2-byte void, as the command line takes it


def _to_device(torch, dtype, a):
    if torch is None:
        return _bf16_numpy(a) if dtype == "bf16" else a
    if dtype == "bf16":   # the case stores bf16 as 2-byte void (its bits)
        t = torch.from_numpy(np.ascontiguousarray(a).view(np.int16)).view(torch.bfloat16)
    else:
        t = torch.from_numpy(np.ascontiguousarray(a))
    return t.cuda() if torch.cuda.is_available() else t


def _to_numpy(v):
    if hasattr(v, "detach"):   # a torch tensor
        return v.detach().cpu().numpy()
    return np.asarray(v)


def run_request(gamut, torch, req):
    d = req["dir"]
    with open(os.path.join(d, "case.json")) as f:
        desc = json.load(f)
    with open(os.path.join(d, "query.mmlt")) as f:
        q = gamut.compile(f.read(), name=os.path.join(d, "query.mmlt"))
    inputs = {}
    for name, dtype in desc["inputs"].items():
        a = np.load(os.path.join(d, name + ".npy"))
        inputs[name] = _to_device(torch, dtype, a)
    for name, v in desc["params"].items():
        inputs[name] = v
    opts = {"backend": req.get("backend", "gpu"), "f32_math": req.get("f32_math", "ieee")}
    if req.get("devices"):
        opts["devices"] = req["devices"]
    outs, _stats = q.run(inputs, **opts)
    os.makedirs(req["out"], exist_ok=True)
    for name, v in outs.items():
        if isinstance(v, dict):   # a list output: its columns in order
            cols = [(c, _to_numpy(x)) for c, x in v.items()]
            n = len(cols[0][1]) if cols else 0
            rec = np.empty(n, dtype=[(c, x.dtype) for c, x in cols])
            for c, x in cols:
                rec[c] = x
            np.save(os.path.join(req["out"], name + ".npy"), rec)
        else:
            np.save(os.path.join(req["out"], name + ".npy"), _to_numpy(v))


def serve():
    import gamut
    torch = _framework()
    out = sys.stdout
    sys.stdout = sys.stderr   # nothing else may write into the answers
    fw = "numpy" if torch is None else "torch cuda" if torch.cuda.is_available() else "torch cpu"
    out.write(json.dumps({"ready": True, "framework": fw}) + "\n")
    out.flush()
    for line in sys.stdin:
        try:
            run_request(gamut, torch, json.loads(line))
            ans = {"ok": True}
        except Exception as e:   # a gamut error is the case's result, not the server's end
            ans = {"error": f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"}
        out.write(json.dumps(ans) + "\n")
        out.flush()


class PythonSide:
    """One server per fuzz worker (env: the worker's CUDA_VISIBLE_DEVICES and PYTHONPATH)."""

    def __init__(self, env=None, timeout=300):
        self.env, self.timeout, self.proc, self.framework = env, timeout, None, None

    def _start(self):
        self.proc = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--serve"], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=self.env)
        self.stderr_tail = []
        threading.Thread(target=self._drain, daemon=True).start()
        first = self.proc.stdout.readline()
        if not first:
            raise RuntimeError("python side did not start: " + " ".join(self.stderr_tail[-3:]))
        self.framework = json.loads(first)["framework"]

    def _drain(self):
        for line in self.proc.stderr:
            self.stderr_tail = (self.stderr_tail + [line.strip()])[-20:]

    def run(self, req):
        """None when it ran, else its error line."""
        try:
            if self.proc is None or self.proc.poll() is not None:
                self._start()
            self.proc.stdin.write(json.dumps(req) + "\n")
            self.proc.stdin.flush()
            timer = threading.Timer(self.timeout, self.proc.kill)
            timer.start()
            line = self.proc.stdout.readline()
            timer.cancel()
        except (OSError, RuntimeError, ValueError) as e:
            return f"python: {e}"
        if not line:
            rc = self.proc.wait()
            return f"python: the process died (exit {rc}): {' | '.join(self.stderr_tail[-3:])}"
        ans = json.loads(line)
        return None if ans.get("ok") else f"python: {ans.get('error')}"


if __name__ == "__main__":
    if sys.argv[1:] == ["--serve"]:
        serve()
    else:
        print(__doc__)
        sys.exit(2)
