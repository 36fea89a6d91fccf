"""bench/perf_smoke.py's verdicts (the device's regression guard), without a GPU: floors found by
the GPU's name, a query above floor x tolerance failing, one without a floor passing, and the
floors file holding positive figures for every query the script times."""
import importlib.util
import json
import os

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")


def load_smoke():
    path = os.path.join(ROOT, "bench", "perf_smoke.py")
    spec = importlib.util.spec_from_file_location("perf_smoke", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_floors_by_device_name_and_verdicts():
    p = load_smoke()
    table = {"H100": {"16384x256": {"a": 1.0}}, "H100 80GB": {"16384x256": {"a": 2.0}}, "_about": "x"}
    assert p.floors_for("NVIDIA H100 80GB HBM3", table) == table["H100 80GB"]  # the longest key
    assert p.floors_for("NVIDIA H100 PCIe", table) == table["H100"]
    assert p.floors_for("NVIDIA H200", table) is None
    got = p.verdicts({"a": 1.3, "b": 9.0, "c": 1.2}, {"a": 1.0, "c": 1.0}, 1.25)
    assert got == [("a", 1.3, 1.0, False), ("b", 9.0, None, True), ("c", 1.2, 1.0, True)]
    assert all(ok for *_, ok in p.verdicts({"a": 5.0}, None, 1.25))  # no floors: nothing fails


def test_floors_file_covers_every_timed_query():
    with open(os.path.join(ROOT, "bench", "perf_floors.json")) as f:
        table = json.load(f)
    with open(os.path.join(ROOT, "bench", "tune_ab.py")) as f:  # (tune_ab imports torch: read, not imported)
        src = f.read()
    names = [line.split('"')[1] for line in src.split("REFS = [")[1].split("]\n")[0].split("(")[1:]]
    for gpu, sizes in table.items():
        if gpu.startswith("_"):
            continue
        for size, floors in sizes.items():
            assert set(floors) == set(names) | {"knn-natural-bf16"}, (gpu, size)
            assert all(v > 0 for v in floors.values())
