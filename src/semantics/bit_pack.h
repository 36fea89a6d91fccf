// Bit-pack stages on the CPU (rewrite/bit_pack_stage.h), and the data check that makes packing
// exact: an operand whose accessed values are all 0 or 1.
#pragma once
#include "core/array.h"
#include "rewrite/bit_pack_stage.h"

namespace gamut {

// True when `src` is an integer or bool array whose every value at (r, k) for r in rows, k in
// k_range (src[r, k] when src_k_minor, else src[k, r]) is 0 or 1.
bool holds_only_bits(const NDArray& src, bool src_k_minor, const AxisRange& rows, const AxisRange& k_range);

// The stage's output (i32, shape (rows.end, words)) for its source array.
NDArray bit_pack_cpu(const NDArray& src, const BitPack& stage);

}  // namespace gamut
