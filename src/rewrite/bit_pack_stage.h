// A bit-pack stage of the or-and rewrite (rewrite/bitpack_orand.h): packs one 0/1 operand of
// a boolean product into i32 words, 32 reduction steps to a word. It cannot be written as a
// query, so engines run it directly: a loop on the CPU (cpu/bit_pack.h), a ballot kernel on the
// GPU (cuda/bit_pack.h).
#pragma once
#include <cstdint>
#include <string>

#include "bind/instance.h"

namespace gamut {

// output[r, w] has bit b set when source[r, k] != 0 (src_k_minor) or source[k, r] != 0, with
// k = k_range.begin + 32 w + b, for r in rows and k < k_range.end; every other bit is 0.
// Output: dtype i32, shape (rows.end, words()).
struct BitPack {
  std::string source, output;
  bool src_k_minor = true;
  AxisRange rows, k_range;
  int64_t words() const { return (k_range.size() + 31) / 32; }
};

}  // namespace gamut
