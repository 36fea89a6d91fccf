// The cells of a distinct list's value box that a tile's pairs reach (gm::SeenCells).
//
// A distinct list whose columns are integer lookups of row and column vectors (Areas(Pzip[i],
// Rzip[j])) has at most as many rows as its columns' values have combinations. Where the host
// finds them in a box of at most kSeenWords * 32 cells (lo_k <= value_k < lo_k + span_k), the
// row of a pair is the cell sum_k (value_k - lo_k) * stride_k, row-major over the columns, so
// ascending cells are the spec's ascending lexicographic order. The cell is a row part (the
// columns read at i) plus a column part (those read at j): the tile computes each tile row's
// and tile column's part once, into shared memory; in the pair loop each pair whose row reaches
// the emit sets its cell's bit in a shared bitmap; after the loop the tile ORs the words it set
// into the run's bitmap in global memory, and after the kernel the set cells become the list's
// rows (src/cuda/outputs/list/finish/seen.cu). Nothing is appended, nothing sorted, and pairs with the same
// row cost one bit each.
//
// Protocol, every thread of the tile: clear(); the parts (row_part[r], col_part[c], written by
// the generated code); ready(); mark() per pair in the pair loop; flush(). A persistent block
// runs it once per tile: clear() waits for the last tile's flush.
#pragma once
#include "gamut_constants.cuh"
#include "gamut_math.cuh"

namespace gm {

template <class Shape>
struct SeenCells {
  // Shared memory, at a 16-byte aligned offset: the bitmap, then the parts.
  static constexpr int BYTES = 4 * (kSeenWords + Shape::BM + Shape::BN);
  unsigned* bits;      // (words,): bit c % 32 of word c / 32 is cell c
  unsigned* row_part;  // (BM,): the cell's part from the columns read at tile row r
  unsigned* col_part;  // (BN,): the part from those read at tile column c
  int words;           // words in use, at most kSeenWords (the host's box)

  GM_DEV SeenCells(unsigned char* smem, int words_in_use)
      : bits(reinterpret_cast<unsigned*>(smem)),
        row_part(reinterpret_cast<unsigned*>(smem) + kSeenWords),
        col_part(reinterpret_cast<unsigned*>(smem) + kSeenWords + Shape::BM),
        words(words_in_use) {}

  GM_DEV void clear() {
    tile_sync<Shape::THREADS>();  // earlier users of the space (the last tile's flush) are done
    for (int w = int(threadIdx.x); w < words; w += Shape::THREADS) bits[w] = 0u;
  }
  GM_DEV void ready() const { tile_sync<Shape::THREADS>(); }  // the bitmap is clear, the parts written

  // The pair at tile row r, column c. A reduction (the old value unused): a check before it
  // (skipping set bits) is slower: its load's latency on every pair.
  // Only where `p`: the loads are unconditional so that the atomic alone is predicated (a
  // branch around all of it cost a divergent region per pair).
  GM_DEV void mark(bool p, int r, int c) {
    const unsigned cell = row_part[r] + col_part[c];
    if (p) atomicOr(bits + (cell >> 5), 1u << (cell & 31u));
  }

  // The direct loop's mark: the cell from parts it holds in registers.
  GM_DEV void mark_cell(unsigned cell) { atomicOr(bits + (cell >> 5), 1u << (cell & 31u)); }

  // The tile's cells into the run's bitmap: one atomic per word that adds bits (a stale read of
  // `seen` only costs an atomic that changes nothing).
  GM_DEV void flush(unsigned* seen) const {
    tile_sync<Shape::THREADS>();  // every mark is in
    for (int w = int(threadIdx.x); w < words; w += Shape::THREADS) {
      const unsigned x = bits[w];
      if (x != 0u && (x & ~__ldcg(seen + w)) != 0u) atomicOr(seen + w, x);
    }
  }
};

}  // namespace gm
