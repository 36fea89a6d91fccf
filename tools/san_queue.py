#!/usr/bin/env python3
"""compute-sanitizer over a gtest binary, one test per process, from a queue (issue 34).

Sharding the suite by gtest's shards left whole shards cut at the call's limit behind one slow test
(racecheck runs a list test for minutes). Here every (tool, test) pair is a job: --jobs processes
take the next job as one ends, the slowest tools' jobs first, and every finished job is appended to
--done (JSON lines). A later run with the same --done skips what finished, so the whole suite is
covered over several device calls. Kernels come from one shared cache (--cache; the cache writes
by atomic rename), so a run warmed by the plain suite compiles nothing.

usage:
  tools/san_queue.py --bin build/tests/gamut_gpu_tests --out DIR [--filter F] [--tools racecheck,memcheck,synccheck]
                     [--jobs 12] [--seconds 500] [--timeout 400] [--done DONE.jsonl] [--cache DIR] [--gpus N]
Exit status: 0 when every job ran and passed (or skipped), 1 on a failure or a sanitizer error, 2 when
jobs are left (time ran out), reported per tool on the last lines.
"""
import argparse
import json
import os
import signal
import re
import subprocess
import sys
import time

SUMMARY = re.compile(r"(ERROR|RACECHECK) SUMMARY: (\d+) (error|hazard)")
API_ERROR = re.compile(r"^========= Program hit cuda\w+ \(error \d+\) .* on CUDA API call to \w+", re.M)


def list_tests(binary, flt):
    p = subprocess.run([binary, "--gtest_list_tests", f"--gtest_filter={flt}"], capture_output=True, text=True,
                       check=True)
    tests, suite = [], ""
    for line in p.stdout.splitlines():
        if not line.strip() or line.startswith(("Running", "Note")):
            continue
        if not line.startswith(" "):
            suite = line.split("#")[0].strip()
        else:
            tests.append(suite + line.split("#")[0].strip())
    return tests


def verdict(rc, log):
    """(status, sanitizer error count) of one finished job. A test that makes no CUDA call ends
    before the sanitizer's first instrumented call, which it reports as an error: such a test
    passed ("host only"). An "Internal Sanitizer Error" is the tool's own failure, not a finding
    in the program: reported as such ("sanitizer internal"); so are a passed test's CUDA API calls
    that returned an error, where they are all its errors ("api errors only")."""
    errors = sum(int(m.group(2)) for m in SUMMARY.finditer(log))
    passed = "[  PASSED  ] 1 test" in log
    if rc == 0 and errors == 0:
        return ("skipped" if "[  SKIPPED ]" in log and "[  PASSED  ] 0 tests" in log else "passed"), 0
    if passed and "terminated before first instrumented API call" in log:
        return "host only", 0
    if passed and "Internal Sanitizer Error" in log and errors == log.count("Internal Sanitizer Error"):
        return "sanitizer internal", errors
    # memcheck also counts CUDA API calls that return an error ("Program hit cudaError... on CUDA
    # API call to ..."): the errors some tests provoke on purpose, and NCCL's own probing inside
    # ncclCommInitAll. A passed test whose every error is such a call made no bad memory access.
    if passed and errors and errors == len(API_ERROR.findall(log)):
        return "api errors only", errors
    return "failed", errors


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--filter", default="*")
    ap.add_argument("--tools", default="racecheck,memcheck,synccheck")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--seconds", type=float, default=500, help="stop starting jobs and cut running ones after this")
    ap.add_argument("--timeout", type=float, default=400, help="seconds one job may run")
    ap.add_argument("--done", default="", help="JSON lines of finished jobs: read to skip them, appended to")
    ap.add_argument("--cache", default="", help="GAMUT_CACHE_DIR shared by every job")
    ap.add_argument("--gpus", type=int, default=1, help="jobs spread over this many GPUs")
    ap.add_argument("--sanitizer", default="compute-sanitizer")
    a = ap.parse_args()
    t0 = time.time()
    os.makedirs(a.out, exist_ok=True)
    tools = a.tools.split(",")
    tests = list_tests(a.bin, a.filter)
    finished = {}
    if a.done and os.path.exists(a.done):
        with open(a.done) as f:
            for line in f:
                r = json.loads(line)
                if r["status"] != "cut":
                    finished[(r["tool"], r["test"])] = r
    queue = [(tool, t) for tool in tools for t in tests if (tool, t) not in finished]
    print(f"san_queue: {len(tests)} tests x {len(tools)} tools; {len(finished)} finished before, "
          f"{len(queue)} to run with {a.jobs} jobs, {a.seconds:.0f} s", flush=True)
    done_f = open(a.done, "a") if a.done else None
    running = {}  # Popen -> (tool, test, start, log path)
    results = dict(finished)
    k = 0

    def record(tool, test, status, errors, secs):
        r = {"tool": tool, "test": test, "status": status, "errors": errors, "seconds": round(secs, 1)}
        results[(tool, test)] = r
        if done_f and status != "cut":
            done_f.write(json.dumps(r) + "\n")
            done_f.flush()
        if status not in ("passed", "skipped", "host only", "api errors only"):
            print(f"  {tool} {test}: {status} ({errors} sanitizer errors, {secs:.0f} s)", flush=True)

    while queue or running:
        now = time.time()
        while queue and len(running) < a.jobs and now - t0 < a.seconds:
            tool, test = queue.pop(0)
            log = os.path.join(a.out, f"{tool}__{test.replace('/', '_')}.log")
            env = dict(os.environ, CUDA_VISIBLE_DEVICES=str(k % a.gpus))
            if a.cache:
                env["GAMUT_CACHE_DIR"] = a.cache
            k += 1
            p = subprocess.Popen([a.sanitizer, "--tool", tool, "--error-exitcode", "9", a.bin,
                                  f"--gtest_filter={test}"], stdout=open(log, "w"), stderr=subprocess.STDOUT, env=env,
                                 start_new_session=True)
            running[p] = (tool, test, now, log)
        time.sleep(0.2)
        for p, (tool, test, start, log) in list(running.items()):
            over = time.time() - start > a.timeout or time.time() - t0 > a.seconds
            if p.poll() is None and not over:
                continue
            if p.poll() is None:
                # The whole session: killing compute-sanitizer alone leaves the test it runs going on
                # the GPU (session 35: cut tests kept running into the next call's benchmarks).
                try:
                    os.killpg(p.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                p.wait()
                record(tool, test, "cut", 0, time.time() - start)
            else:
                with open(log, errors="replace") as f:
                    status, errors = verdict(p.returncode, f.read())
                record(tool, test, status, errors, time.time() - start)
            del running[p]
        if not running and queue and time.time() - t0 >= a.seconds:
            break
    rc = 0
    for tool in tools:
        rs = [results.get((tool, t)) for t in tests]
        states = ("passed", "host only", "api errors only", "skipped", "failed", "sanitizer internal", "cut")
        count = {s: sum(1 for r in rs if r and r["status"] == s) for s in states}
        left = sum(1 for r in rs if r is None)
        errors = sum(r["errors"] for r in rs if r and r["status"] == "failed")
        print(f"compute-sanitizer {tool}: " + ", ".join(f"{count[s]} {s}" for s in states) +
              f", {left} not run, of {len(tests)}; {errors} errors in the program", flush=True)
        if count["failed"] or errors:
            rc = 1
        elif (count["cut"] or left) and rc == 0:
            rc = 2
    return rc


if __name__ == "__main__":
    sys.exit(main())
