// Rows that reached an `emit`, before ordering, limiting and de-duplication. Every engine
// produces these; finalize_list (src/cpu/list_finalize.cpp) turns them into the spec's result,
// so ordering rules live in one place.
#pragma once
#include <cstdint>
#include <vector>

#include "core/array.h"
#include "plan/plan.h"

namespace gamut {

struct ListCandidates {
  Table table;                   // one Column per ListOutput column, in order; table.rows rows
  std::vector<int32_t> b, i, j;  // the (b, i, j) each row came from (b all 0 without batch)
  Column key;                    // top/bottom: the key per row, dtype storage_type_of(key type)
  // Plain and distinct lists: where the rows come as runs each already in the list's order (the
  // parts of a split run), the first row of every run after the first; finalize_list then merges
  // the runs instead of sorting. Empty: no order assumed.
  std::vector<int64_t> sorted_runs;
};

// Apply the spec's order / limit / distinct rules (section 6, docs/semantics.md).
// `limit` is the bound N of top/bottom (ignored otherwise).
Table finalize_list(const ListOutput& spec, int64_t limit, ListCandidates&& rows);

}  // namespace gamut
