#!/usr/bin/env bash
# Nsight Compute profiles of single kernels (one device call), with per-SASS-instruction
# execution counts (SourceCounters) exported as CSV, to split a fused kernel's time between
# its mainloop and its epilogue. Writes one text report and one source CSV per kernel to $OUT.
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
np.save(f"{t}/Pzip.npy", r.integers(0, 16, 16384).astype(np.int32))
np.save(f"{t}/Rzip.npy", r.integers(0, 16, 16384).astype(np.int32))
PY
prof() {  # name, then the gamut run arguments
  local name=$1; shift
  ncu --clock-control none -k regex:gamut_main --launch-count 1 \
      --section SpeedOfLight --section ComputeWorkloadAnalysis --section WarpStateStats \
      --section SchedulerStats --section Occupancy --section LaunchStats --section SourceCounters \
      --section InstructionStats -f -o "$T/$name" "$G" run "$@" --backend gpu > "$OUT/ncu_run_$name.txt" 2>&1
  echo "== $name (rc=$?)"
  ncu -i "$T/$name.ncu-rep" --print-details all > "$OUT/ncu_$name.txt" 2>&1
  ncu -i "$T/$name.ncu-rep" --page source --csv --print-source sass > "$OUT/ncu_src_$name.csv" 2>"$OUT/ncu_src_$name.err"
  echo "source csv rc=$? lines=$(wc -l < "$OUT/ncu_src_$name.csv")"
  grep -E "Duration|Registers Per|Achieved Occupancy|Issue Slots Busy|No Eligible|Executed Ipc A|Executed Instructions  " "$OUT/ncu_$name.txt" | head -12
}
prof knn examples/knn.mmlt Q=$T/Q.npy X=$T/X.npy
prof knn_dense bench/knn_dense.mmlt Q=$T/Q.npy X=$T/X.npy
prof q3 examples/q3_count_pairs.mmlt P=$T/P.npy R=$T/R.npy Pzip=$T/Pzip.npy Rzip=$T/Rzip.npy thres=64
prof q5 examples/q5_select.mmlt P=$T/P.npy R=$T/R.npy thres=75
prof q7 examples/q7_top128.mmlt P=$T/P.npy R=$T/R.npy
rm -rf "$T"
