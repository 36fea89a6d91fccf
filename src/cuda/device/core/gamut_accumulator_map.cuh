// The accumulator map: how a thread's accumulators lie in the block tile, handed from a mainloop
// to the output operators (the code generator's side: src/cuda/codegen/accumulator_map.h).
//
// After the k loop every thread holds a kRows x kCols grid of values. A map type provides
//   static constexpr int kRows, kCols;       the thread's grid
//   row(m)                                   block-tile-relative row of grid row m (0 <= m < kRows)
//   col(n)                                   block-tile-relative column of grid column n
//   static constexpr int index(int m, int n) position of value (m, n) in the thread's accumulators
// row / col may be static functions (of threadIdx, and of m, n fixed after unrolling) or members
// of a map object made from a thread id, `Map(tid)`. Generated code calls them through an
// object, `map.row(m)`, which works for both; an operator that stores another thread's pair
// (distinct lists: the thread that claimed a table slot) makes `Map(tid)` for that thread.
// Output code iterates m < kRows, n < kCols and finds value (m, n) at
// (tile_row0 + row(m), tile_col0 + col(n)); it checks the bounds itself and may hoist per-row
// (m) and per-column (n) work. Per-pair bit arrays (`when` passes, list marks) are indexed
// m * kCols + n.
//
// The output operators also take the block shape (Shape::THREADS, BM, BN); its TM x TN is the
// grid of the map (TM == kRows, TN == kCols), checked by gm::map_fits.
//
// A map may also declare `static constexpr bool kWarpRows = true` where warp w of the tile's
// W = THREADS / 32 warps holds exactly the block rows [w BM / W, (w + 1) BM / W), every column
// of them (the wgmma map): an operator grouped per row then synchronizes one warp, not the tile.
//
// The SIMT mainloop's map is gm::ThreadMap (gamut_mainloop.cuh): TM x TN per thread in runs of
// VM rows and VN columns. A tensor-core mainloop hands its fragment layout, e.g. mma.sync
// m16n8kX with MI x NI instructions per warp tile: kRows = 2 MI (rows warp_row0 + mi * 16 +
// lane / 4 + 8 h), kCols = 2 NI (columns warp_col0 + ni * 8 + (lane % 4) * 2 + c).
#pragma once

namespace gm {

// True when Map is an accumulator map whose grid is Shape's thread tile.
template <class Map, class Shape>
constexpr bool map_fits() {
  return Map::kRows == Shape::TM && Map::kCols == Shape::TN && Map::kRows > 0 && Map::kCols > 0 &&
         Map::index(Map::kRows - 1, Map::kCols - 1) < Map::kRows * Map::kCols;
}

// Map::kWarpRows where the map declares it, else false.
template <class Map>
constexpr auto warp_rows_of(int) -> decltype(bool(Map::kWarpRows)) {
  return Map::kWarpRows;
}
template <class Map>
constexpr bool warp_rows_of(...) {
  return false;
}
template <class Map>
constexpr bool warp_owns_rows() {
  return warp_rows_of<Map>(0);
}

}  // namespace gm
