#!/usr/bin/env python3
"""gamut on Dask against one GPU and the threaded runner (issue 40, docs/scale-out.md): Q5, Q7 and
kNN at M = N = 65536, K = 1024 (f32; --f32-math ieee,tf32), each run three ways in one process:

  1gpu      q(...) on GPU 0 of this process
  threaded  q(..., devices=[0, 1, ...]): the multi-GPU runner of one host (docs/multi-gpu.md)
  dask      gamut.dask.run(q, ...) on a cluster of one worker process per GPU
            (gamut.dask.gpu_cluster: LocalCUDACluster with dask-cuda, else CUDA_VISIBLE_DEVICES)

--data host: inputs are NumPy arrays on the host in every case (the engine uploads them: the same
work for all three; each Dask worker, like each part of the threaded runner, uploads its rows and
the whole column operand). --data device: the data already on the GPUs, CuPy arrays (1gpu: on
GPU 0 of this process; Dask: CuPy chunks on the workers' GPUs, read in place); the threaded
runner takes host inputs only and is not run. For Dask the data is made on the workers and
persisted there, the row operand a chunk per worker and the column operand (R, X) on every
worker, so the time is that of a query on data already in the cluster: the blocks' runs (and
uploads for host data), the merge and the gather of the result to the client. time: the median wall time of --repeat calls after a
warm-up call (which compiles the kernels in every process). efficiency: t(1gpu) / (W t), W the
GPUs used. The results are checked against the 1gpu run's (lists as sorted rows, floats to
1e-5 relative for ieee and 1e-3 for tf32; a near tie may swap a row: reported, not fatal).

usage:
  bench/dask_scale.py [--n 65536] [--k 1024] [--workers 2] [--repeat 5] [--queries q5,q7,knn]
                      [--f32-math ieee,tf32] [--data host,device] [--json OUT.json] [--dry-run]
--dry-run: M = N = 512, K = 64, the CPU engine and a CPU LocalCluster of two workers, no
threaded runs: the flow on a machine without a GPU.
"""
import argparse
import json
import os
import statistics
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
EXAMPLES = os.path.join(HERE, "..", "examples")


def load(name):
    import gamut
    return gamut.load(os.path.join(EXAMPLES, name + ".mmlt"))


def _rows_of_normals(seed, rows, k):
    return np.random.default_rng(seed).standard_normal((rows, k)).astype(np.float32)


def timed(fn, repeat, sync=None):
    fn()   # warm-up: kernels compiled (and cached) in every process
    ts = []
    out = None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        if sync:
            sync()
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts) * 1e3, out, [t * 1e3 for t in ts]


def host(x):
    return x.get() if type(x).__module__.split(".")[0] == "cupy" else np.asarray(x)


def rows(out):
    got = {}
    for name, v in out.items():
        if isinstance(v, dict):
            cols = [host(v[c]) for c in v]
            got[name] = sorted(zip(*[c.tolist() for c in cols]))
        else:
            got[name] = host(v)
    return got


def close(a, b, rtol):
    if a.keys() != b.keys():
        return False
    for k in a:
        x, y = a[k], b[k]
        if isinstance(x, list):
            if len(x) != len(y):
                return False
            if x != y and not np.allclose(np.array(x, dtype=float), np.array(y, dtype=float), rtol=rtol, atol=rtol):
                return False
        elif not np.allclose(x, y, rtol=rtol, atol=rtol):
            return False
    return True


def call_summary(tasks, t0, t1):
    """One call in a line: each block's worker and compute start-stop, the last task's end and
    the call's end (ms from the call's start)."""
    blocks, last = [], 0.0
    for t in tasks:
        ss = [x for x in t.get("startstops", ()) if x["stop"] >= t0 and x["start"] <= t1]
        if not ss:
            continue
        last = max(last, max(x["stop"] for x in ss) - t0)
        if "_run_block" in str(t["key"]):
            c = [x for x in ss if x["action"] == "compute"] or ss
            blocks.append(f"{str(t.get('worker', '?')).rsplit(':', 1)[-1]} {(c[0]['start'] - t0) * 1e3:.0f}-"
                          f"{(c[-1]['stop'] - t0) * 1e3:.0f}")
    return f"{(t1 - t0) * 1e3:6.1f} ms: blocks " + ", ".join(sorted(blocks)) + f"; last task ends {last * 1e3:.0f}"


def call_timeline(tasks, t0, t1):
    """The tasks of one call (those with an action inside [t0, t1]) as text lines: key, worker and
    each action's start-stop in ms from t0 (where a call's time goes: the blocks side by side or
    one after another, transfers, the merge)."""
    lines = []
    for t in tasks:
        ss = [x for x in t.get("startstops", ()) if x["stop"] >= t0 and x["start"] <= t1]
        if not ss:
            continue
        key = str(t["key"])
        key = key[key.find("'") + 1:].split("-")[0] if "'" in key else key[:40]
        acts = ", ".join(f"{x['action']} {(x['start'] - t0) * 1e3:.0f}-{(x['stop'] - t0) * 1e3:.0f}" for x in ss)
        lines.append((min(x["start"] for x in ss), f"{key} on {t.get('worker', '?')}: {acts}"))
    return [text for _, text in sorted(lines)]


def worker_gpus(client):
    """Which GPU each worker process holds a context on (nvidia-smi's compute apps by pid): the
    workers must use one GPU each, or their blocks share one and run one after another."""
    import subprocess
    try:
        text = subprocess.run(["nvidia-smi", "--query-compute-apps=pid,gpu_bus_id,used_memory", "--format=csv,noheader"],
                              capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError) as e:
        return f"(nvidia-smi: {e})"
    apps = {}
    for line in text.splitlines():
        parts = [x.strip() for x in line.split(",")]
        if len(parts) >= 2 and parts[0].isdigit():
            apps.setdefault(int(parts[0]), []).append(" ".join(parts[1:]))
    pids = client.run(os.getpid)
    shown = {w: apps.get(pid, ["no context"]) for w, pid in pids.items()}
    shown["client"] = apps.get(os.getpid(), ["no context"])
    return shown


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=65536)
    ap.add_argument("--k", type=int, default=1024)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--queries", default="q5,q7,knn")
    ap.add_argument("--f32-math", default="ieee,tf32")
    ap.add_argument("--data", default="host,device")
    ap.add_argument("--json", default="")
    ap.add_argument("--dry-run", action="store_true")
    a = ap.parse_args()
    backend = "gpu"
    if a.dry_run:
        a.n, a.k, backend = 512, 64, "cpu"
        a.data = "host"

    import dask.array as da
    from distributed import Client, LocalCluster, futures_of, get_task_stream, wait
    import gamut
    import gamut.dask

    W = a.workers
    if a.dry_run:
        cluster = LocalCluster(n_workers=W, threads_per_worker=1, dashboard_address=":0", silence_logs=40)
    else:
        cluster = gamut.dask.gpu_cluster(W)
    client = Client(cluster)
    client.wait_for_workers(W, timeout=300)
    print(f"cluster: {W} workers; M = N = {a.n}, K = {a.k}, backend {backend}; each worker's CUDA_VISIBLE_DEVICES: "
          f"{client.run(lambda: os.environ.get('CUDA_VISIBLE_DEVICES'))}", flush=True)

    # The data is made on the workers (the row operand a chunk per worker, the column operands
    # one chunk each, replicated to every worker) and copied to this process for the baselines.
    chunk = (a.n + W - 1) // W
    rng = da.random.default_rng(40)
    # The row operand's chunks made one on each worker (a persisted random array may put both
    # on one worker, and a block then runs where its chunk is: the blocks ran one after another).
    addrs = sorted(client.scheduler_info()["workers"])[:W]
    sizes = [min(chunk, a.n - w * chunk) for w in range(W)]
    parts = [client.submit(_rows_of_normals, 40 + w, sz, a.k, workers=[addr], pure=False)
             for w, (sz, addr) in enumerate(zip(sizes, addrs))]
    # (Persisted: the blocks' tasks read the chunks where they lie, with no hops before them.)
    Pd = client.persist(da.concatenate([da.from_delayed(f, (sz, a.k), dtype=np.float32) for f, sz in zip(parts, sizes)]))
    Rd = client.persist(rng.standard_normal((a.k, a.n), chunks=(a.k, a.n)).astype(np.float32))
    Xd = client.persist(rng.standard_normal((a.n, a.k), chunks=(a.n, a.k)).astype(np.float32))
    wait([Pd, Rd, Xd])
    client.replicate(futures_of(Rd) + futures_of(Xd))
    P, R, X = client.compute([Pd, Rd, Xd], sync=True)
    placements = {"host": (dict(P=P, R=R, X=X), dict(P=Pd, R=Rd, X=Xd))}
    sync = {"host": None}
    if "device" in a.data.split(","):
        import cupy
        # The chunks copied to their workers' GPUs (each task runs where its chunk lies), the
        # column operands then replicated GPU to GPU through Dask; 1gpu's copies on GPU 0 here.
        dev = {k: client.persist(v.map_blocks(cupy.asarray, dtype=np.float32)) for k, v in (("P", Pd), ("R", Rd), ("X", Xd))}
        wait(list(dev.values()))
        client.replicate(futures_of(dev["R"]) + futures_of(dev["X"]))
        placements["device"] = ({"P": cupy.asarray(P), "R": cupy.asarray(R), "X": cupy.asarray(X)}, dev)
        sync["device"] = lambda: cupy.cuda.Device(0).synchronize()
    thres = 4.5 * float(np.sqrt(a.k))   # Q5 keeps about 3 pairs in a million
    cases = {
        "q5": ("q5_select", lambda d: dict(P=d["P"], R=d["R"], thres=thres)),
        "q7": ("q7_top128", lambda d: dict(P=d["P"], R=d["R"])),
        "knn": ("knn", lambda d: dict(Q=d["P"], X=d["X"])),
    }
    results = []
    failed = False
    for qname, data, math in [(q, d, m) for q in a.queries.split(",") for d in a.data.split(",") for m in a.f32_math.split(",")]:
        if True:
            path, bind = cases[qname]
            q = load(path)
            host_in, dist = bind(placements[data][0]), bind(placements[data][1])
            opts = dict(backend=backend, f32_math=math)
            rtol = 1e-5 if math == "ieee" else 1e-3
            t1, base, _ = timed(lambda: q(**host_in, **opts), a.repeat, sync[data])
            line = {"query": qname, "data": data, "f32_math": math, "workers": W, "one_gpu_ms": t1}
            if not a.dry_run and data == "host":
                tt, out, _ = timed(lambda: q(**host_in, **opts, devices=list(range(W))), a.repeat)
                line.update(threaded_ms=tt, threaded_efficiency=t1 / (W * tt), threaded_same=close(rows(base), rows(out), rtol))
            calls = []

            def dask_call():
                t0 = time.time()
                r = gamut.dask.run(q, **dist, **opts, client=client)
                calls.append((t0, time.time()))
                return r

            with get_task_stream(client) as ts:
                td, out, each = timed(dask_call, a.repeat, sync[data])
            if not a.dry_run and not results:
                print(f"  GPU of each process (bus id, memory): {worker_gpus(client)}", flush=True)
            print("  dask calls (warm-up first):\n" + "\n".join("    " + call_summary(ts.data, *c) for c in calls), flush=True)
            timeline = call_timeline(ts.data, *calls[-1])
            print(f"  last dask call ({(calls[-1][1] - calls[-1][0]) * 1e3:.1f} ms), its tasks: start-stop ms "
                  f"from the call's start:\n" + "\n".join("    " + t for t in timeline), flush=True)
            # The blocks that ran (warm-up and repeats): each call must run its own, and their
            # compute time says how much of a call the workers' gamut runs were.
            blocks = [t for t in ts.data if "_run_block" in str(t["key"])]
            block_s = [sum(x["stop"] - x["start"] for x in t.get("startstops", ()) if x.get("action") == "compute")
                       for t in blocks]
            line.update(dask_ms=td, dask_calls_ms=each, dask_efficiency=t1 / (W * td), dask_same=close(rows(base), rows(out), rtol),
                        plan=gamut.dask.plan(q, **dist), dask_blocks_run=len(blocks),
                        dask_block_ms_median=statistics.median(block_s) * 1e3 if block_s else None,
                        dask_block_workers=len({t.get("worker") for t in blocks}))
            results.append(line)
            failed = failed or not line["dask_same"] and a.dry_run
            th = (f"threaded {line['threaded_ms']:9.2f} ms eff {line['threaded_efficiency']:4.2f} "
                  f"{'same' if line['threaded_same'] else 'DIFFERENT'}  ") if "threaded_ms" in line else ""
            bm = line["dask_block_ms_median"]
            print(f"{qname:4s} {data:6s} {math:5s} 1gpu {t1:9.2f} ms  {th}dask {td:9.2f} ms eff {line['dask_efficiency']:4.2f} "
                  f"{'same' if line['dask_same'] else 'DIFFERENT'} ({len(blocks)} blocks ran on "
                  f"{line['dask_block_workers']} workers, "
                  f"block {bm if bm is None else round(bm, 2)} ms)", flush=True)
    client.close()
    cluster.close()
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"n": a.n, "k": a.k, "workers": W, "repeat": a.repeat, "rows": results}, f, indent=1)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
