#!/usr/bin/env python3
"""The command line under hostile use (issue 34): each class of misuse gives one clear line and
the spec's exit status, or works; none crashes, hangs or fills memory.

usage: hostile_cli.py GAMUT
"""
import os
import resource
import stat
import subprocess
import sys
import tempfile

import numpy as np

GAMUT = os.path.abspath(sys.argv[1])
MATMUL = "where (i, j) { a = 0; reduce (k) { a += A[i, k] * B[k, j]; } C[i, j] = a * t; }"
failures = []


def run(args, timeout=120, **kw):
    return subprocess.run([GAMUT] + args, capture_output=True, text=True, timeout=timeout, **kw)


def expect(name, ok, detail=""):
    print(("ok   " if ok else "FAIL ") + name + ("" if ok else f": {detail}"))
    if not ok:
        failures.append(name)


def main():
    d = tempfile.mkdtemp(prefix="gamut_hostile_")
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    b = np.ones((4, 2), np.float32)
    np.save(f"{d}/a.npy", a)
    np.save(f"{d}/b.npy", b)
    inputs = [f"A={d}/a.npy", f"B={d}/b.npy"]

    # A scalar past f64's range is a data error, as the same literal in a query is an error.
    p = run(["run", "-e", MATMUL, *inputs, "t=1e400", "--backend", "cpu"])
    expect("scalar 1e400 is a data error", p.returncode == 3 and "t:" in p.stderr, p.stderr or p.stdout)

    # --tile is checked whichever engine runs.
    for tile in ["garbage", "0x0", "-1x-1", "0x0x0"]:
        p = run(["run", "-e", MATMUL, *inputs, "t=2", "--backend", "cpu", "--tile", tile])
        expect(f"--tile {tile} on the CPU exits 2", p.returncode == 2 and "--tile" in p.stderr, p.stderr or p.stdout)

    # A query "file" that never ends is refused at a bound.
    p = run(["check", "/dev/zero"], timeout=60)
    expect("check /dev/zero is refused", p.returncode == 2 and p.stderr.count("\n") == 1, p.stderr[:300])

    # A .npy from a pipe promising more than memory holds: refused before reading, naming the binding.
    header = np.lib.format.header_data_from_array_1_0(np.zeros((1, 1), np.float32))
    header["shape"] = (2**40, 2**20)
    with open(f"{d}/hdr.bin", "wb") as f:
        np.lib.format.write_array_header_1_0(f, header)
    p = subprocess.run(["bash", "-c", f'"$0" run -e "$1" A=<(cat {d}/hdr.bin /dev/zero) B={d}/b.npy t=2 --backend cpu',
                        GAMUT, MATMUL], capture_output=True, text=True, timeout=60)
    expect("a pipe promising too much is a data error naming A",
           p.returncode == 3 and p.stderr.startswith("data error: A:"), p.stderr[:300])

    # A FIFO or a directory named like a cache entry: `cache list` neither hangs nor fails.
    cache = f"{d}/cache"
    os.makedirs(f"{cache}/fedcba9876543210fedcba9876543210.cubin")
    os.mkfifo(f"{cache}/0123456789abcdef0123456789abcdef.meta")
    env = dict(os.environ, GAMUT_CACHE_DIR=cache)
    p = run(["cache", "list"], timeout=30, env=env)
    expect("cache list beside a FIFO and a directory", p.returncode == 0, p.stderr)
    p = run(["cache", "clear"], timeout=30, env=env)
    expect("cache clear leaves what it did not write", p.returncode == 0 and
           os.path.exists(f"{cache}/0123456789abcdef0123456789abcdef.meta"), p.stderr)
    if os.geteuid() != 0:   # (root may write anywhere)
        ro = f"{d}/ro-cache"
        os.makedirs(ro)
        open(f"{ro}/0123456789abcdef0123456789abcdef.cubin", "w").close()
        os.chmod(ro, stat.S_IRUSR | stat.S_IXUSR)
        p = run(["cache", "clear"], timeout=30, env=dict(os.environ, GAMUT_CACHE_DIR=ro))
        os.chmod(ro, stat.S_IRWXU)
        expect("cache clear without write permission fails", p.returncode == 4 and "cannot remove" in p.stderr,
               p.stdout + p.stderr)

    # Threads that cannot start (an address-space limit) leave their work to the others.
    rows = 400000
    np.save(f"{d}/tall.npy", (np.arange(rows, dtype=np.float32) % 7).reshape(rows, 1))
    np.save(f"{d}/one.npy", np.full((1, 1), 3, np.float32))

    def limit():
        resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))

    p = run(["run", "-e", MATMUL, f"A={d}/tall.npy", f"B={d}/one.npy", "t=1", "--backend", "cpu", "--threads", "1024",
             "-o", f"{d}/tall-out"], preexec_fn=limit, timeout=300)
    ok = p.returncode == 0 and np.array_equal(np.load(f"{d}/tall-out/C.npy")[:, 0],
                                              (np.arange(rows, dtype=np.float32) % 7) * 3)
    expect("--threads 1024 under a 3 GiB address-space limit", ok, f"exit {p.returncode}: {p.stderr[:300]}")

    # Runs writing into one directory at once land whole: every file of the directory from one run.
    # (Eight outputs a run, so that the renames of one run take long enough to overlap another's.)
    names = "CDEFGHIJ"
    query = "where (i, j) { a = 0; reduce (k) { a += A[i, k] * B[k, j]; } " + \
        " ".join(f"{n}[i, j] = a * t + {v};" for v, n in enumerate(names)) + " }"
    out = f"{d}/shared-out"
    mixed = 0
    trials = 20
    for trial in range(trials):
        procs = [subprocess.Popen([GAMUT, "run", "-e", query, *inputs, f"t={n + 1}", "--backend", "cpu", "--threads", "1",
                                   "-o", out], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
                 for n in range(8)]
        codes = [q.wait(timeout=120) for q in procs]
        if any(codes):
            expect("concurrent runs exit 0", False, str(codes))
            break
        got = [np.load(f"{out}/{n}.npy") - v for v, n in enumerate(names)]
        mixed += any(not np.array_equal(got[0], g) for g in got[1:])
    expect("concurrent -o into one directory never mixes runs", mixed == 0, f"{mixed} of {trials} trials mixed")

    print(f"hostile_cli: {len(failures)} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
