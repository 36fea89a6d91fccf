// Blocks: a query run as separate queries on blocks of its inputs, for task schedulers that hand
// each task only its share of the data (Dask: python/gamut/dask.py, docs/scale-out.md).
//
// A part (partition.h) is the whole instance with a narrower axis range: it reads the inputs
// whole. A block is the query bound to blocks of its inputs alone: the row-side operands' rows
// [r0, r1), the column-side operands' columns [c0, c1), every other operand whole; it is a query
// of its own and runs with coordinates from 0, on any engine, with list provenance
// (rewrite/list_provenance.h). Its results are moved to the whole run's coordinates
// (to_whole_coordinates) and blocks next to each other along an axis merge into one block
// (merge_blocks), by the rules of merge_parts, until one block covers everything:
//
//   dense output the axis indexes    the blocks' arrays side by side along that dimension
//   other dense outputs              merged with the output's operator (`+=`, `max=`, ...)
//   lists                            merge_list: ordered runs, distinct once more, top / bottom
//                                    as the best N of the blocks' best N (per-group lists whose
//                                    groups the axis keeps whole: concatenated)
//
// A dense output's extent set by an index vector (Hist[g[i]]) is max(g) + 1 over the block's
// rows; merged blocks are padded with the output's identity to the largest. Merging is
// associative, so blocks may merge as a tree, in any grouping of neighbours.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "bind/instance.h"
#include "plan/plan.h"

namespace gamut {

// How a plan splits into blocks. An axis splits when a block's coordinates enter its results
// only as themselves: the axis has no explicit range; no expression reads its value except
// list columns that are the value alone (to_whole_coordinates shifts them); every operand it
// indexes, it indexes in every access at one dimension (a self-join, A[i, k] with A[j, k],
// would need A split and whole at once).
struct BlockLayout {
  bool row_splits = false, col_splits = false;
  std::string row_why, col_why;         // why an axis does not split
  // Per Plan::operands: the dimension the row / column axis indexes (batch first where there is
  // one), or -1 where it does not index the operand (the operand is then whole along it).
  std::vector<int> operand_row_dim, operand_col_dim;
  // Per Plan::dense: the dimension of the output (as laid out) the axis indexes directly, or -1.
  std::vector<int> dense_row_dim, dense_col_dim;
  // Per Plan::dense: every dimension is an axis (b, i or j), so its extent is known without the
  // data (no index vector sets it).
  std::vector<bool> dense_axes_only;
  // Per Plan::lists: the columns that hold the row / column axis value (shifted to the whole run's).
  std::vector<std::vector<int>> list_row_columns, list_col_columns;
};

// The layout of `plan` (a typed plan with list provenance, as the blocks run).
BlockLayout block_layout(const Plan& plan);

// A block's results (of `plan`, run on the block whose first row is row0 and first column col0)
// in the whole run's coordinates: its list columns that hold i or j shifted by the offsets.
// Dense outputs stay as they are (merge_blocks places them). Data error where a shifted value
// would not fit in i32 (the whole run's coordinates do).
void to_whole_coordinates(const Plan& plan, const BlockLayout& layout, Results& block, int64_t row0, int64_t col0);

// Blocks next to each other along `axis` (in order; each in whole coordinates, over the same
// range of the other axis) as one block. `limits`: N of each top/bottom list (Instance::
// list_limits); `present`: per dense output, false where the caller places it itself (the
// result then has an empty array there), empty for all. The blocks' results are consumed.
Results merge_blocks(const Plan& plan, const BlockLayout& layout, const std::vector<int64_t>& limits, AxisRole axis,
                     std::vector<Results>&& blocks, const std::vector<bool>& present = {});

}  // namespace gamut
