#!/usr/bin/env bash
# Nsight Compute profiles of single kernels (one device call): where kNN's fused bottom-10, Q7's
# top-128 and the packed i16 max-plus lose time. Writes one text report per kernel to $OUT.
set -u
G=${GAMUT:-build-dev/gamut}
OUT=${OUT:-device-out}
T=$(mktemp -d)
python3 - "$T" <<'PY'
import sys, numpy as np
t = sys.argv[1]; r = np.random.default_rng(1)
np.save(f"{t}/Q.npy", r.random((16384, 256), dtype=np.float32))
np.save(f"{t}/X.npy", r.random((16384, 256), dtype=np.float32))
np.save(f"{t}/P.npy", r.random((16384, 256), dtype=np.float32))
np.save(f"{t}/R.npy", r.random((256, 16384), dtype=np.float32))
np.save(f"{t}/A16.npy", r.integers(-1000, 1000, (8192, 8192)).astype(np.int16))
np.save(f"{t}/B16.npy", r.integers(-1000, 1000, (8192, 8192)).astype(np.int16))
PY
prof() {  # name, then the gamut run arguments
  local name=$1; shift
  ncu --clock-control none -k regex:gamut_main --launch-count 1 \
      --section SpeedOfLight --section ComputeWorkloadAnalysis --section WarpStateStats \
      --section SchedulerStats --section Occupancy --section LaunchStats \
      "$G" run "$@" --backend gpu > "$OUT/ncu_$name.txt" 2>&1
  echo "== $name (rc=$?)"
  grep -E "Duration|Registers Per|Achieved Occupancy|Issue Slots Busy|No Eligible|Stall|Executed Ipc A|SM Busy|Compute \(SM\) Thr" "$OUT/ncu_$name.txt" | head -24
}
prof knn examples/knn.mmlt Q=$T/Q.npy X=$T/X.npy
prof knn_dense bench/knn_dense.mmlt Q=$T/Q.npy X=$T/X.npy
prof q7 examples/q7_top128.mmlt P=$T/P.npy R=$T/R.npy
prof maxplus_i16 examples/maxplus.mmlt A=$T/A16.npy B=$T/B16.npy
rm -rf "$T"
