// Radix-sortable keys for the row order of plain and distinct lists (finalize_list's cmp_row):
// per column, numbers ascending, NaN after every number, then the raw bits as an unsigned
// tie-break (+0.0 before -0.0, NaNs by bits). That order is total over bit patterns and has one
// element per pattern, so it is a bijection onto unsigned numbers of the column's width: one
// key of 8 * bytes bits per column, the value order and the tie-break in one.
// Plain C++17 with no gamut includes: nvcc compiles it into src/cuda/outputs/list/finish/sort.cu, and the CPU
// tests check it against cmp_row.
#pragma once
#include <cstdint>

#if defined(__CUDACC__)
#define GAMUT_HD __host__ __device__ __forceinline__
#else
#define GAMUT_HD inline
#endif

namespace gamut::cuda::order {

enum class KeyKind : int { Unsigned, Signed, Float16, BFloat16, Float32, Float64 };

// Key of one value given as its raw bits (zero-extended), for a column of `bytes` bytes.
GAMUT_HD uint64_t column_key(KeyKind kind, int bytes, uint64_t bits) {
  const int width = 8 * bytes;
  const uint64_t sign = uint64_t(1) << (width - 1);
  if (kind == KeyKind::Unsigned) return bits;
  if (kind == KeyKind::Signed) return bits ^ sign;
  // IEEE formats: `inf` is +infinity's bits. In key order: negative numbers from -inf up
  // (inf of them, including -inf), +0, -0, positive numbers up to +inf, positive NaNs, negative
  // NaNs; each run is contiguous, so the keys use every value of the width exactly once.
  const uint64_t inf = kind == KeyKind::Float16    ? 0x7c00u
                       : kind == KeyKind::BFloat16 ? 0x7f80u
                       : kind == KeyKind::Float32  ? 0x7f800000u
                                                   : 0x7ff0000000000000ull;
  const uint64_t neg_inf = sign | inf;
  if (bits == 0) return inf;                  // +0
  if (bits == sign) return inf + 1;           // -0 right after +0
  if (!(bits & sign)) return bits + inf + 1;  // positive numbers, then positive NaNs
  if (bits > neg_inf) return bits;            // negative NaNs: the top of the range
  return neg_inf - bits;                      // negative numbers, -inf first
}

// The sort runs over 64-bit words, most significant column first; a word holds whole columns
// (`first` .. `first + count - 1`, the first in the highest of its `bits` low bits).
struct KeyWord {
  int first = 0, count = 0, bits = 0;
};

// Columns of bits_of(c) key bits (each 1..64), packed greedily in order; returns the word count
// (at most `columns`). An LSD sort runs the words last to first.
template <class BitsOf>
inline int pack_key_columns(BitsOf bits_of, int columns, KeyWord* words) {
  int w = -1;
  for (int c = 0; c < columns; ++c) {
    const int b = bits_of(c);
    if (w < 0 || words[w].bits + b > 64) words[++w] = KeyWord{c, 0, 0};
    words[w].count += 1;
    words[w].bits += b;
  }
  return w + 1;
}

// Columns of `bits[c]` key bits each.
inline int pack_key_bits(const int* bits, int columns, KeyWord* words) {
  return pack_key_columns([bits](int c) { return bits[c]; }, columns, words);
}

// Columns of `bytes[c]` bytes (each 1..8): whole-width keys.
inline int pack_key_words(const int* bytes, int columns, KeyWord* words) {
  return pack_key_columns([bytes](int c) { return 8 * bytes[c]; }, columns, words);
}

// The bits of a key that orders the integers [lo, lo + count) as value - lo (count >= 1).
inline int range_key_bits(uint64_t count) {
  int b = 1;
  while (b < 64 && (uint64_t(1) << b) < count) ++b;
  return b;
}

}  // namespace gamut::cuda::order
