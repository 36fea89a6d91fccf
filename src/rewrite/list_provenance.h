// List provenance: top/bottom lists also carry their key and the (b, i, j) each row came from.
//
// A top/bottom result is ordered by its key, then by (b, i, j) (finalize_list). A run split into
// parts (src/partition) keeps each part's best N and merges them with finalize_list once more,
// which needs the key and the pair of every surviving row; the query's own columns need not
// hold them. This pass appends them as hidden columns to every top/bottom list (and its emits);
// plain and distinct lists are ordered by their columns alone and are left as they are.
#pragma once
#include "plan/plan.h"

namespace gamut {

// The hidden columns, in this order after a top/bottom list's own columns.
inline constexpr const char* kProvenanceColumns[] = {"__key", "__b", "__i", "__j"};
inline constexpr int kProvenanceColumnCount = 4;

// A copy of `plan` whose top/bottom lists end with the hidden columns (key: the key's type;
// b, i, j: i32; b is 0 without a batch axis). Records "list-provenance" in Plan::rewrites.
Plan with_list_provenance(const Plan& plan);

// Whether list `l` of a plan made by with_list_provenance carries the hidden columns.
bool has_provenance(const ListOutput& list);

}  // namespace gamut
