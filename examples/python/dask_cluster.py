"""One query over a Dask cluster: the k nearest database rows of every query row, with the query
rows in chunks spread over the workers (gamut.dask, docs/scale-out.md), checked against one
gamut call on the whole data.

    python examples/python/dask_cluster.py [--queries M] [--database N] [--dim K] [--chunk C]
                                           [--address tcp://scheduler:8786]

Without --address it starts a local cluster: a worker process per GPU (gamut.dask.gpu_cluster)
where gamut sees a GPU, else two CPU workers. With --address it uses that cluster (started as
docs/scale-out.md says: `dask scheduler`, then `dask-cuda-worker` or `dask worker` per node).
"""
import argparse
import time

import numpy as np

import gamut

KNN = """
where (i, j) {
  dist = 0;
  reduce (k) { let t = Q[i, k] - X[j, k]; dist += t * t; }
  emit Nearest(i, j, dist) bottom 5 by dist per i;
}
"""


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--queries", type=int, default=5000)
    ap.add_argument("--database", type=int, default=20000)
    ap.add_argument("--dim", type=int, default=32)
    ap.add_argument("--chunk", type=int, default=0, help="query rows per task (default: a quarter)")
    ap.add_argument("--address", default="", help="a running scheduler (default: a local cluster)")
    args = ap.parse_args()
    try:
        import dask.array as da
        from distributed import Client, LocalCluster
        import gamut.dask
    except ImportError as e:
        print(f"skipped: {e} (pip install '.[dask]')")
        return

    if args.address:
        cluster, client = None, Client(args.address)
    elif gamut.gpu_available():
        cluster = gamut.dask.gpu_cluster()
        client = Client(cluster)
    else:
        cluster = LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=":0", silence_logs=40)
        client = Client(cluster)
    print(f"cluster: {len(client.scheduler_info()['workers'])} workers")
    # The engine each block runs on: the workers' (a worker without a GPU runs the CPU engine).
    engines = set(client.run(lambda: "gpu" if gamut.gpu_available() else "cpu").values())
    print(f"engine: {', '.join(sorted(engines))} (on the workers)")

    rng = np.random.default_rng(1)
    # Small integers: distances are exact, so the check is exact too.
    Qh = rng.integers(-4, 5, (args.queries, args.dim)).astype(np.float32)
    Xh = rng.integers(-4, 5, (args.database, args.dim)).astype(np.float32)
    chunk = args.chunk or max(1, (args.queries + 3) // 4)
    Q = da.from_array(Qh, chunks=(chunk, args.dim))
    Q = client.persist(Q)   # the query rows live on the workers, a chunk each
    q = gamut.compile(KNN, "knn")
    print(gamut.dask.plan(q, Q=Q, X=Xh))

    t0 = time.perf_counter()
    out = gamut.dask.run(q, Q=Q, X=Xh, client=client)     # X (NumPy) is scattered once
    t1 = time.perf_counter()
    print(f"gamut.dask.run: {len(out['Nearest']['i'])} rows in {t1 - t0:.3f} s")

    want = q(Q=Qh, X=Xh)
    same = all(np.array_equal(np.asarray(out["Nearest"][c]), np.asarray(want["Nearest"][c])) for c in ("i", "j", "dist"))
    print("check against one gamut call: " + ("ok" if same else "MISMATCH"))
    client.close()
    if cluster is not None:
        cluster.close()


if __name__ == "__main__":
    main()
