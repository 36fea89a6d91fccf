// The accumulator map: what a mainloop hands to the output operators (outputs/) about where the
// thread's accumulators lie in the block tile. After the k loop every thread holds a
// rows x cols grid of values; the operators iterate it, read value (m, n) and find its pair at
// (tile_row0 + row(m), tile_col0 + col(n)), and never see the mainloop itself. The device side
// of the same concept (kRows, kCols, row(m), col(n), index(m, n)) is
// src/cuda/device/core/gamut_accumulator_map.cuh; the SIMT mainloop's map is gm::ThreadMap.
// No CUDA headers.
#pragma once
#include <functional>
#include <string>

namespace gamut::cuda::cg {

struct AccumulatorMap {
  std::string type;                  // the device map type, e.g. "gm::ThreadMap<Shape>"
  std::string object;                // the map in the kernel (its row/col may be static), e.g. "st.tmap"
  std::string rows, cols;            // the grid's extents (Map::kRows, Map::kCols), as constant expressions
  std::string col_run;               // grid columns per run of consecutive tile columns (vector stores)
  std::string tile_row0, tile_col0;  // the block tile's first row and column
  int pairs = 0;                     // rows * cols, as a number
  bool warp_rows = false;            // the type's kWarpRows (gamut_accumulator_map.cuh): warps own their rows
  // Accumulator `acc` at grid position (m, n), read where the loop variables m and n are in scope.
  std::function<std::string(int acc)> value;

  std::string row(const std::string& m) const { return object + ".row(" + m + ")"; }
  std::string col(const std::string& n) const { return object + ".col(" + n + ")"; }
  // Bit (m * cols + n) of a per-thread bit array (`when` passes, list marks), and its words.
  std::string bit(const std::string& bits, const std::string& m, const std::string& n) const {
    const std::string e = m + " * " + cols + " + " + n;
    return bits + "[(" + e + ") / 32]";
  }
  std::string bit_shift(const std::string& m, const std::string& n) const {
    return "((" + m + " * " + cols + " + " + n + ") % 32)";
  }
  std::string words() const { return "(" + rows + " * " + cols + " + 31) / 32"; }
};

}  // namespace gamut::cuda::cg
