"""Plots of a `gamut tune` table: one PNG per family of the searched variants' times.

Needs matplotlib (optional: ``plot`` raises ImportError without it). Also run as a script by
tools/plot_tune.py, without the rest of the package.
"""

import json
import os


def plot(table, out_dir=None):
    """Write FAMILY.png beside the table (or into out_dir) for each family searched in `table`
    (a path, or the JSON text); returns the paths written."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    if os.path.exists(str(table)):
        with open(table) as f:
            data = json.load(f)
        out_dir = out_dir or os.path.dirname(os.path.abspath(table))
    else:
        data = json.loads(table)
        out_dir = out_dir or "."
    by_family = {}
    for rec in data.get("searched", []):
        by_family.setdefault(rec["family"], []).append(rec)
    paths = []
    for family, recs in sorted(by_family.items()):
        fig, axes = plt.subplots(len(recs), 1, figsize=(10, 2.2 + 0.28 * max(len(r["results"]) for r in recs) * len(recs)),
                                 squeeze=False)
        for ax, rec in zip(axes[:, 0], recs):
            rows = [r for r in rec["results"] if "ms" in r]
            names = [r["variant"] for r in rows]
            times = [r["ms"] for r in rows]
            colors = ["tab:gray" if r["status"] == "heuristic" else
                      "tab:green" if r["variant"] == rec.get("winner") else
                      "tab:red" if r["status"] != "ok" else "tab:blue" for r in rows]
            ax.barh(range(len(rows)), times, color=colors)
            ax.set_yticks(range(len(rows)))
            ax.set_yticklabels(names, fontsize=7)
            ax.invert_yaxis()
            ax.set_xlabel("ms (median, CUDA events)")
            ax.set_title(f"{rec['query']} M=N={rec['m']} K={rec['k']} batch={rec['batch']} [{rec.get('kernel_family', '')}]"
                         f": gray the heuristics, green the winner, red wrong or failed", fontsize=8)
        fig.tight_layout()
        path = os.path.join(out_dir, f"tune-{family}.png")
        fig.savefig(path, dpi=100)
        plt.close(fig)
        paths.append(path)
    return paths
