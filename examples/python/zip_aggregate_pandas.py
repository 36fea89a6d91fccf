"""The GAMUT paper's Q2 and Q3 on tables: people and restaurants with a zip code column, preference
vectors, and per pair of zip codes the summed mutual preference (Q2, examples/q2_zip_aggregate.mmlt)
and the number of pairs above a threshold (Q3, examples/q3_count_pairs.mmlt). The group ids come
from a pandas column (pd.factorize over both tables, so one zip code has one id); the result goes
back into a labelled DataFrame.

    python examples/python/zip_aggregate_pandas.py [--people N] [--restaurants N] [--dim D]

Without pandas the same runs on NumPy (np.unique for the ids).
"""
import argparse
import os

import numpy as np

import gamut

HERE = os.path.dirname(os.path.abspath(__file__))


def main():
    gpu = gamut.gpu_available()
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--people", type=int, default=200_000 if gpu else 3000)
    ap.add_argument("--restaurants", type=int, default=20_000 if gpu else 800)
    ap.add_argument("--dim", type=int, default=64 if gpu else 16)
    ap.add_argument("--zips", type=int, default=40)
    args = ap.parse_args()

    rng = np.random.default_rng(1)
    zip_codes = np.array([f"{10000 + 37 * z}" for z in range(args.zips)])
    person_zip = rng.choice(zip_codes, args.people)
    restaurant_zip = rng.choice(zip_codes[: args.zips // 2 + 1], args.restaurants)
    P = rng.random((args.people, args.dim), dtype=np.float32)          # taste of each person
    R = rng.random((args.dim, args.restaurants), dtype=np.float32)     # style of each restaurant

    try:
        import pandas as pd
        people = pd.DataFrame({"zip": person_zip})
        restaurants = pd.DataFrame({"zip": restaurant_zip})
        ids, labels = pd.factorize(pd.concat([people["zip"], restaurants["zip"]]), sort=True)
        Pzip, Rzip = ids[: len(people)], ids[len(people):]
        print(f"group ids from pandas: {len(labels)} zip codes")
    except ImportError:
        pd = None
        labels, ids = np.unique(np.concatenate([person_zip, restaurant_zip]), return_inverse=True)
        Pzip, Rzip = ids[: args.people], ids[args.people:]
        print("pandas is not installed: group ids from np.unique")
    Pzip = np.ascontiguousarray(Pzip, dtype=np.int64)
    Rzip = np.ascontiguousarray(Rzip, dtype=np.int64)
    G = len(labels)

    q2 = gamut.load(os.path.join(HERE, "..", "q2_zip_aggregate.mmlt"))
    q3 = gamut.load(os.path.join(HERE, "..", "q3_count_pairs.mmlt"))
    C = q2(P=P, R=R, Pzip=Pzip, Rzip=Rzip)["C"]
    thres = 0.3 * args.dim
    out3, stats = q3.run({"P": P, "R": R, "Pzip": Pzip, "Rzip": Rzip, "thres": thres})
    Cnt = out3["Cnt"]
    print(f"Q2: C {C.shape} summed preferences; Q3: Cnt {Cnt.shape}, {int(Cnt.sum())} pairs above {thres:g}; "
          f"engine: {stats['backend']}")

    # Check against NumPy on the same ids.
    acc = P.astype(np.float64) @ R.astype(np.float64)
    want2 = np.zeros((int(Pzip.max()) + 1, int(Rzip.max()) + 1))
    np.add.at(want2, (Pzip[:, None], Rzip[None, :]), acc)
    want3 = np.zeros(want2.shape, np.int64)
    np.add.at(want3, (Pzip[:, None], Rzip[None, :]), acc > thres)
    ok = np.allclose(C, want2, rtol=1e-4) and np.array_equal(Cnt, want3) and G >= C.shape[0]

    if pd is not None:
        table = pd.DataFrame(Cnt, index=labels[: Cnt.shape[0]], columns=labels[: Cnt.shape[1]])
        table.index.name, table.columns.name = "person zip", "restaurant zip"
        print(table.iloc[:5, :5])
    print("check against the reference:", "ok" if ok else "MISMATCH")
    raise SystemExit(0 if ok else 1)


if __name__ == "__main__":
    main()
