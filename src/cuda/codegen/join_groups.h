// Key-grouped joins on the GPU. A plan whose `when` holds equalities of index vectors
// (`when (g[i] == h[j])`) matches only pairs of equal keys: with the rows and the columns sorted by
// key, every matching pair lies in one dense block per key value. The kernel then runs only
// those blocks' tiles, all in one launch (a table of tiles, one block each), over copies of the
// operands gathered into key order; pairs that do not match cost nothing at all.
// The grouping is a sort of the M + N keys on the host while the inputs pass through it on their
// way to the device (O(M + N) next to the O(M N K) product).
#pragma once
#include <cstdint>
#include <vector>

#include "bind/instance.h"

namespace gamut::cuda {

struct JoinGroups {
  // key-ordered position -> row index (only rows with a partner); groups start at multiples of 4
  // positions, -1 fills the gaps
  std::vector<int32_t> row_perm;
  std::vector<int32_t> col_perm;   // likewise for columns
  std::vector<int32_t> tiles;      // 4 per tile: positions [row first, row end), [col first, col end)
  int64_t groups = 0;              // key values present on both sides
  int64_t pairs = 0;               // matching (i, j) pairs
  int64_t tile_count() const { return int64_t(tiles.size() / 4); }
};

// Plan-level conditions: join keys of the form g[i] == h[j], no batch axis, and an inner op that
// does not read the axis values (it runs on key-ordered positions).
bool join_grouping_form(const Plan& plan);

// The groups and the tile table for block tiles of bm x bn.
JoinGroups group_join(const Plan& plan, const Instance& inst, int bm, int bn);

// A matrix operand read as X[p, k] / X[k, p] gathered along p into key order: position q holds
// index perm[q] of the original (a 2-d array, no batch).
NDArray gather_along(const NDArray& x, bool p_is_first_dim, const std::vector<int32_t>& perm);

}  // namespace gamut::cuda
