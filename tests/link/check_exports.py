#!/usr/bin/env python3
"""Our shared objects must not export the C++ runtime's symbols.

Where the compiler links libstdc++ statically (the GPU machine's g++ has only libstdc++.a), an
exported copy of, say, a locale facet id is bound to the process's libstdc++.so.6 by the dynamic
loader while the static copy's code keeps its own facets: the first `ostream << double` crashed.
This lists every dynamic symbol a shared object defines that the C++ runtime also defines and
fails if there is one that the runtime owns: strong or unique definitions (its facet ids, its
out-of-line code). Weak definitions are inline template code from the headers, the same bytes
wherever they bind.

usage: check_exports.py CXX_COMPILER|LIBSTDCXX_SO OBJECT.so [OBJECT.so ...]
"""
import os
import re
import subprocess
import sys


def runtime_library(arg):
    """The libstdc++.so.6 a process would load: the compiler's, else the loader's (ldconfig)."""
    if arg.endswith(".so.6") and os.path.isfile(arg):
        return arg
    p = subprocess.run([arg, "-print-file-name=libstdc++.so.6"], capture_output=True, text=True)
    if p.returncode == 0 and os.path.isabs(p.stdout.strip()) and os.path.isfile(p.stdout.strip()):
        return p.stdout.strip()
    p = subprocess.run(["/sbin/ldconfig", "-p"], capture_output=True, text=True)
    m = re.search(r"libstdc\+\+\.so\.6 \(libc6,x86-64\) => (\S+)", p.stdout) or \
        re.search(r"libstdc\+\+\.so\.6 .*=> (\S+)", p.stdout)
    return m.group(1) if m else None


def defined(path, strong_only=False):
    out = subprocess.run(["nm", "-D", "--defined-only", path], capture_output=True, text=True, check=True).stdout
    rows = [ln.split() for ln in out.splitlines()]
    return {r[-1].split("@")[0] for r in rows if len(r) >= 3 and not (strong_only and r[1] in "WwVv")}


def main():
    if len(sys.argv) < 3:
        print(__doc__.strip().splitlines()[-1])
        return 2
    lib = runtime_library(sys.argv[1])
    if not lib:
        print(f"no libstdc++.so.6 found (from {sys.argv[1]} or ldconfig): nothing to compare with")
        return 77
    runtime = defined(lib)
    bad = 0
    for obj in sys.argv[2:]:
        shared = sorted(defined(obj, strong_only=True) & runtime)
        print(f"{obj}: {len(shared)} symbols of {lib} exported")
        for s in shared[:10]:
            print("  ", s)
        bad += bool(shared)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
