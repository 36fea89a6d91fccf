// Ordering helpers for list outputs, shared by finalize_list and the CPU engine's pruning.
//
// The engine may drop top/bottom candidates early (a thread keeps only the best N per group)
// because the order below is total: pruning a subset with it never loses a row of the result.
#pragma once
#include <cstdint>
#include <vector>

#include "plan/list_rows.h"

namespace gamut::cpu {

// An empty candidate set shaped for `spec`: one column per list column (storage types of the
// column types), and a key column of `key_type` for top/bottom.
ListCandidates empty_candidates(const ListOutput& spec, CType key_type);

// Append all rows of `src` to `dst` (same column layout).
void append_candidates(ListCandidates& dst, const ListCandidates& src);

// Keep only the rows that can be in the final top/bottom result: the best `limit` rows per
// group (global, per (b,i) or per (b,j)). No-op for plain and distinct lists.
void prune_candidates(const ListOutput& spec, int64_t limit, ListCandidates& rows);

}  // namespace gamut::cpu
