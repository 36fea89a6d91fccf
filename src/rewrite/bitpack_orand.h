// Boolean (or-and) products bit-packed 32 reduction steps to a word: a bound rewrite.
//
//   r |= X[i,k] & Y[k,j]   ==   r = (OR_w Xp[i,w] & Yp[j,w]) != 0
//
// where Xp[i, w] holds X[i, k] for k in [32w, 32w + 32) as the bits of one i32 word (Yp likewise,
// transposed so that each column's k bits are contiguous). It holds only where every value that
// X and Y contribute is 0 or 1 (bool data, or integers checked on the bound data): `2 & 1` is 0
// though both are non-zero. The rewrite produces three stages: two bit packs (no query can express
// them: StageQuery::bitpack) and one product over words, whose output block is the query's own.
#pragma once
#include <cstdint>
#include <optional>

#include "bind/bind.h"
#include "lang/diagnostics.h"
#include "rewrite/aggregate_pushdown.h"

namespace gamut {

struct BitpackOptions {
  int64_t min_k = 64;   // below this many reduction steps the packing does not pay
};

// The rewritten program for a bound plan, or nothing when the rewrite does not apply. `source`
// is the query text the plan was built from (the output block is taken from it verbatim) and
// `bindings` what it was bound to (the product stage reads the inputs and parameters it uses).
std::optional<PushdownProgram> bitpack_orand(const Plan& plan, const Instance& inst, const Source& source,
                                             const Bindings& bindings, const BitpackOptions& options = {});

}  // namespace gamut
