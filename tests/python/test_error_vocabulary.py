"""One error vocabulary: each failure raises, in Python, the category of the command line's exit
status with the command line's message, where the command line says `NAME=FILE` or a flag and
Python names the keyword; suggestions on both sides; each message once; no command-line advice
in Python. The command line is the `gamut` binary of this build (build/gamut, or $GAMUT_BINARY)."""
import os
import re
import subprocess

import numpy as np
import pytest

import gamut

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
BINARY = os.environ.get("GAMUT_BINARY", os.path.join(ROOT, "build", "gamut"))

SGEMM = "where (i, j) { a = 0; reduce (k) { a += A[i, k] * B[k, j]; } C[i, j] = a; }"
SELECT = "where (i, j) { a = 0; reduce (k) { a += A[i, k] * B[k, j]; } if (a > thres) emit L(i, j, a); }"
GROUPED = "where (i, j) { a = 0; reduce (k) { a += A[i, k] * B[k, j]; } Hist[g[i]] += a; }"

# Python's spelling of the command line's words (the only differences allowed).
CLI_TO_PY = [
    (r"; pass (\w+)=FILE\.npy", r"; pass an array as the keyword argument \1"),
    (r"; pass (\w+)=VALUE", r"; pass a number as the keyword argument \1"),
    (r"; bind a \.npy file", "; pass an array"),
    (r"--backend (\w+)", r"backend='\1'"),
    (r"--dim (\w+):", r"dims['\1']:"),
    (r"'(\w+)' is not a number", r"the str '\1' is not a number"),
    (r" \(([^()]*\.npy); used as", r" (used as"),
    (r"'[^']*\.npy' is not a number", "an array is not a number"),
]
# Command-line words that must never reach a Python message.
CLI_ONLY = re.compile(r"--[a-z]|\w=FILE|=VALUE|\.npy\b")


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("vocab")
    arrays = {
        "a": np.arange(12, dtype=np.float32).reshape(4, 3),
        "b": np.ones((3, 5), np.float32),
        "b1": np.ones(3, np.float32),
        "g": np.array([0, 1, 2, 1], np.int32),
        "gneg": np.array([0, -1, 2, 1], np.int32),
        "gf": np.array([0, 1, 2, 1], np.float32),
    }
    paths = {}
    for name, x in arrays.items():
        paths[name] = str(d / f"{name}.npy")
        np.save(paths[name], x)
    return arrays, paths


def cli(query, *args, backend="cpu"):
    if not os.access(BINARY, os.X_OK):
        pytest.skip(f"no gamut binary at {BINARY} (build it, or set GAMUT_BINARY)")
    p = subprocess.run([BINARY, "run", "-e", query, *args, "--backend", backend], capture_output=True, text=True,
                       timeout=60)
    return p.returncode, p.stderr


def python_side(query, **kw):
    q = gamut.compile(query, "<expr>")   # the command line's name for `-e` text
    with pytest.raises(gamut.GamutError) as e:
        q(backend="cpu", **kw)
    return type(e.value), str(e.value)


def in_python_words(text):
    for pat, rep in CLI_TO_PY:
        text = re.sub(pat, rep, text)
    return text


CASES = {
    # name: (query, CLI bindings (file keys in {}), Python bindings (array keys), exit status, message part)
    "misspelt input": (SGEMM, ["A={a}", "Bb={b}"], {"A": "a", "Bb": "b"}, 2, "did you mean 'B'?"),
    "misspelt parameter": (SELECT, ["A={a}", "B={b}", "thrs=1"], {"A": "a", "B": "b", "thrs": 1}, 2,
                           "did you mean 'thres'?"),
    "missing input": (SGEMM, ["A={a}"], {"A": "a"}, 3, "input array is not bound"),
    "missing parameter": (SELECT, ["A={a}", "B={b}"], {"A": "a", "B": "b"}, 3, "parameter is not bound"),
    "parameter not a number": (SELECT, ["A={a}", "B={b}", "thres=abc"], {"A": "a", "B": "b", "thres": "abc"}, 3,
                               "is not a number (thres is a scalar parameter of the query"),
    # (the command line names the file, Python the array: the rest of the sentence is the same)
    "array for a parameter": (SELECT, ["A={a}", "B={b}", "thres={b1}"], {"A": "a", "B": "b", "thres": "b1"}, 3,
                              "is not a number (thres is a scalar parameter of the query"),
    "number for an array": (SGEMM, ["A={a}", "B=2.0"], {"A": "a", "B": 2.0}, 3, "B: is an array in the query"),
    "wrong rank": (SGEMM, ["A={a}", "B={b1}"], {"A": "a", "B": "b1"}, 3, "expected 2 dimensions"),
    "negative index": (GROUPED, ["A={a}", "B={b}", "g={gneg}"], {"A": "a", "B": "b", "g": "gneg"}, 3,
                       "index value -1 at position 1 is negative"),
    "float index vector": (GROUPED, ["A={a}", "B={b}", "g={gf}"], {"A": "a", "B": "b", "g": "gf"}, 3,
                           "an index vector must hold integers, got f32"),
    "misspelt dims output": (GROUPED, ["A={a}", "B={b}", "g={g}", "--dim", "Hst=4"],
                             {"A": "a", "B": "b", "g": "g", "dims": {"Hst": [4]}}, 2, "did you mean 'Hist'?"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_same_category_and_message(files, case):
    arrays, paths = files
    query, cli_args, py_args, status, part = CASES[case]
    code, err = cli(query, *[a.format(**paths) for a in cli_args])
    kw = {k: (arrays[v] if isinstance(v, str) and v in arrays else v) for k, v in py_args.items()}
    cls, msg = python_side(query, **kw)
    assert code == status, err
    assert cls.exit_code == status, msg
    cli_first, py_first = err.split("\n")[0], msg.split("\n")[0]
    assert part in cli_first and part in py_first, (cli_first, py_first)
    # The same sentence, but for the allowed differences of words.
    assert in_python_words(cli_first) == py_first
    # No command-line advice in Python, and each message once.
    assert not CLI_ONLY.search(py_first), py_first
    assert msg.count(part) == 1 and err.count(part) == 1, (msg, err)


def test_no_gpu_is_the_same_device_error(files):
    if gamut.gpu_available():
        pytest.skip("a GPU is present")
    arrays, paths = files
    code, err = cli(SGEMM, f"A={paths['a']}", f"B={paths['b']}", backend="gpu")
    q = gamut.compile(SGEMM, "<expr>")
    with pytest.raises(gamut.DeviceError) as e:
        q(A=arrays["a"], B=arrays["b"], backend="gpu")
    assert code == 4
    assert in_python_words(err.split("\n")[0]) == str(e.value).split("\n")[0]
    assert gamut.gpu_unavailable_reason() in str(e.value)
