// Per-tile pre-deduplication of `distinct` list rows (TileDistinct). Where a tile's pairs emit
// few distinct rows (e.g. 16384 pairs, 20 values), the block appends each distinct row once
// instead of once per pair; the device hash set and sort after the kernel (src/cuda/outputs/list/finish/sort.cu) still
// remove the repeats across tiles and any that get through here, so this only has to be exact
// in one direction: a row is dropped only when a bit-identical row of the tile is appended.
//
// Rows are compared as WORDS 32-bit words, the emitted columns' bits (row_put): so -0.0 and 0.0
// differ, as do NaNs with different bits, exactly as finalize_list's distinct. A hash only
// picks where to look; equality is always the full comparison of the words.
//
// Rounds, with no thread ever waiting on another except at the block's barriers. Before each
// round every thread sweeps its marked pairs in order (the generated code): it renders a pair's
// row and looks it up in the table, read-only (holds); a row the table holds is dropped there
// and then, and the first row it does not hold becomes the thread's candidate for the round
// (later pairs wait for the next sweep). So a thread whose rows are mostly in the table already
// spends one round on its next new row, not one per pair. The table does not change during a
// sweep: a round ends with a barrier after its owners mark their slots final, and the
// constructor with one after it clears the table.
//
// A sweep takes up to CANDS candidates (staged in `stage`, one row each), offered in rounds
// 0, 1, ... of their own before the next sweep: with one, every new row cost a sweep, and the
// lanes of a warp sweep together (each map row's loop runs as long as its longest lane), so a
// warp rendered several times as many rows as it had marked pairs; with several, the first
// sweep's candidates put most of a tile's values into
// the table and the next sweep drops the rest in one walk.
//
// In round x, every thread with an x-th candidate has staged its row in `stage`; after a barrier each
// such thread (the lowest lane of the warp's lanes with that row) probes the shared table from
// the row's hash. An atomicCAS on an empty slot makes it the slot's owner (the entry holds its
// thread id); a taken slot holds either a row of an earlier round (in `uniq`) or another
// thread's candidate of this round (in `stage`): equal rows are dropped, other rows probe on.
// The owners copy their rows to `uniq` before the second barrier (in the round, a slot's `uniq`
// row is read only once its entry is final) and mark their entries final (kFinal | thread |
// pair) after it. A row that finds neither its equal nor an empty slot within PROBES slots
// overflows: it is appended as it is, like a plain list's row. When more than 3/4 of a round's
// candidates overflow, not counting those of threads whose sweep dropped rows in the round, the
// table is full of other rows and every remaining pair of the tile overflows at once: no more
// rounds are spent on it, and no row is rendered twice in vain. (A tile of all-distinct rows
// stops after about SLOTS / THREADS + 1 rounds, the sweep adding one look-up per thread and
// round; one with twice SLOTS values, each repeated, keeps going and still drops about half its
// rows.)
//
// At the end, one reservation per block (BlockAppend::reserve_rows) covers every final slot's
// row and every overflow row; slot rows are stored from `uniq` with the (b, i, j) of the pair
// that claimed the slot, overflow rows are rendered again. The list's counter counts all of
// them, also past the capacity (the host grows the buffers and runs again).
#pragma once
#include "gamut_list.cuh"

namespace gm {

// ---- column bits as row words ------------------------------------------------------------
// bool as 0/1 (what list buffers hold), 32-bit types as they are, 64-bit types low word first.
GM_DEV void row_put(unsigned* w, bool v) { w[0] = v ? 1u : 0u; }
GM_DEV void row_put(unsigned* w, int v) { w[0] = unsigned(v); }
GM_DEV void row_put(unsigned* w, float v) { w[0] = __float_as_uint(v); }
GM_DEV void row_put(unsigned* w, i64 v) {
  w[0] = unsigned(u64(v));
  w[1] = unsigned(u64(v) >> 32);
}
GM_DEV void row_put(unsigned* w, double v) { row_put(w, i64(__double_as_longlong(v))); }
GM_DEV void row_get(const unsigned* w, bool& v) { v = w[0] != 0u; }
GM_DEV void row_get(const unsigned* w, int& v) { v = int(w[0]); }
GM_DEV void row_get(const unsigned* w, float& v) { v = __uint_as_float(w[0]); }
GM_DEV void row_get(const unsigned* w, i64& v) { v = i64(u64(w[0]) | (u64(w[1]) << 32)); }
GM_DEV void row_get(const unsigned* w, double& v) {
  i64 x;
  row_get(w, x);
  v = __longlong_as_double(x);
}

template <class Shape, int WORDS, int SLOTS, int CANDIDATES = 1>
struct TileDistinct {
  static constexpr int CANDS = CANDIDATES;  // candidates per sweep
  static_assert(SLOTS >= 32 && (SLOTS & (SLOTS - 1)) == 0, "SLOTS must be a power of two");
  static_assert(Shape::THREADS <= 1024 && Shape::TM * Shape::TN <= 256, "entry layout: 10 + 8 bits");
  static_assert(Shape::TN <= 32, "a map row's pairs in one word (row_bits)");
  static constexpr int W = (Shape::TM * Shape::TN + 31) / 32;
  static constexpr int PROBES = 16;  // linear probing at half load still finds room
  static constexpr unsigned kEmpty = 0xffffffffu;
  static constexpr unsigned kFinal = 0x80000000u;  // | thread << 8 | pair: a slot of an earlier round
  // Shared memory used, at a 16-byte aligned offset (the code generator's smem_plan).
  static constexpr int BYTES = 4 * (SLOTS + SLOTS * WORDS + CANDS * Shape::THREADS * WORDS);
  static_assert(CANDS >= 1 && CANDS <= 4, "candidates' pairs packed 8 bits each in one word");

  unsigned* table;  // (SLOTS,): kEmpty, a thread id (claimed this round), or a final entry
  unsigned* uniq;   // (SLOTS, WORDS): the row of each final slot
  unsigned* stage;  // (CANDS, WORDS, THREADS): the sweep's candidates, word-major (no bank conflicts)

  // Every thread calls it; `smem` may be what the mainloop or an earlier list used.
  GM_DEV explicit TileDistinct(unsigned char* smem)
      : table(reinterpret_cast<unsigned*>(smem)),
        uniq(reinterpret_cast<unsigned*>(smem) + SLOTS),
        stage(reinterpret_cast<unsigned*>(smem) + SLOTS + SLOTS * WORDS) {
    tile_sync<Shape::THREADS>();  // earlier users of the space are done
    for (int s = int(threadIdx.x); s < SLOTS; s += Shape::THREADS) table[s] = kEmpty;
    tile_sync<Shape::THREADS>();  // before the first sweep reads the table
  }

  // Sets pair e's bit. Every word written, with static indices: a store under `w == e / 32`
  // became one store at bits[e / 32], a run-time index that put the bits in local memory.
  GM_DEV static void set(unsigned (&bits)[W], int e) {
#pragma unroll
    for (int w = 0; w < W; ++w) bits[w] |= (w == e / 32 ? 1u : 0u) << (e % 32);
  }

  // The TN bits of map row m (bit n: pair m * TN + n) and their replacement. m is static after
  // unrolling, so the words and shifts fold; the loops over w keep the indices static anyway.
  GM_DEV static unsigned row_bits(const unsigned (&bits)[W], int m) {
    const int o = m * Shape::TN, sh = o % 32;
    unsigned x = 0u;
#pragma unroll
    for (int w = 0; w < W; ++w) {
      if (w == o / 32) x |= bits[w] >> sh;
      if (sh + Shape::TN > 32 && w == o / 32 + 1) x |= bits[w] << (32 - sh);  // the row spans two words
    }
    return Shape::TN == 32 ? x : x & ((1u << (Shape::TN % 32)) - 1u);
  }
  GM_DEV static void set_row_bits(unsigned (&bits)[W], int m, unsigned x) {
    const int o = m * Shape::TN, sh = o % 32;
    const unsigned mask = Shape::TN == 32 ? 0xffffffffu : (1u << (Shape::TN % 32)) - 1u;
    x &= mask;
#pragma unroll
    for (int w = 0; w < W; ++w) {
      if (w == o / 32) bits[w] = (bits[w] & ~(mask << sh)) | (x << sh);
      if (sh + Shape::TN > 32 && w == o / 32 + 1) bits[w] = (bits[w] & ~(mask >> (32 - sh))) | (x >> (32 - sh));
    }
  }

  GM_DEV static unsigned hash(const unsigned (&r)[WORDS]) {
    unsigned h = 0x9e3779b9u;
#pragma unroll
    for (int k = 0; k < WORDS; ++k) {
      h = (h ^ r[k]) * 0xcc9e2d51u;
      h ^= h >> 15;
    }
    h ^= h >> 16;  // murmur3's finaliser: every word bit reaches the low (slot) bits
    h *= 0x85ebca6bu;
    h ^= h >> 13;
    h *= 0xc2b2ae35u;
    return h ^ (h >> 16);
  }
  // Row r equals the words at o, o[stride], ...
  GM_DEV static bool same(const unsigned (&r)[WORDS], const unsigned* o, int stride) {
    bool eq = true;
#pragma unroll
    for (int k = 0; k < WORDS; ++k) eq = eq && o[k * stride] == r[k];
    return eq;
  }

  // The sweep's look-up, read-only: the table holds row r (a slot of an earlier round has it, so
  // its equal is appended from there). Between rounds (after round()'s last barrier) an entry is
  // kEmpty or final, and a final slot's row is in `uniq`.
  GM_DEV bool holds(const unsigned (&r)[WORDS]) const {
    unsigned h = hash(r) & unsigned(SLOTS - 1);
#pragma unroll 1
    for (int p = 0; p < PROBES; ++p) {
      if (table[h] == kEmpty) return false;
      if (same(r, uniq + h * WORDS, 1)) return true;
      h = (h + 1u) & unsigned(SLOTS - 1);
    }
    return false;
  }

  // What round() found: no thread had a candidate, go on, or the table is full.
  static constexpr int kIdle = 0, kNext = 1, kFull = 2;

  // The sweep's x-th candidate row of this thread, staged for round x.
  GM_DEV void offer(int x, const unsigned (&r)[WORDS]) {
#pragma unroll
    for (int k = 0; k < WORDS; ++k) stage[(x * WORDS + k) * Shape::THREADS + int(threadIdx.x)] = r[k];
  }

  // Round x of a sweep's candidates; every thread calls it. has: this thread offered an x-th
  // candidate, pair e; hit: its sweep dropped a row. Overflow rows go to ov; when the table is
  // found full, so does the rest of todo (kFull: no further rounds; the caller moves its later
  // candidates to ov too). kIdle when no thread had an x-th candidate.
  GM_DEV int round(int x, bool has, int e, bool hit, unsigned (&todo)[W], unsigned (&ov)[W]) {
    const int tid = int(threadIdx.x);
    const unsigned* const sx = stage + x * WORDS * Shape::THREADS;  // (WORDS, THREADS)
    const int live = tile_sync_count<Shape::THREADS>(has);  // the stage and the last round's slots are visible
    if (live == 0) return kIdle;
    unsigned r[WORDS];
#pragma unroll
    for (int k = 0; k < WORDS; ++k) r[k] = has ? sx[k * Shape::THREADS + tid] : 0u;
    // Lanes of a warp with the same row: only the lowest one probes, the others are its
    // duplicates (a match over every word is the full comparison). With heavy repetition this
    // spares most probes, and the atomics of a warp's lanes on one slot.
    const unsigned lane_lt = (1u << (tid & 31)) - 1u;
    unsigned twins = __ballot_sync(0xffffffffu, has);
#pragma unroll
    for (int k = 0; k < WORDS; ++k) twins &= __match_any_sync(0xffffffffu, r[k]);
    int slot = -1;
    bool over = false;
    if (has && (twins & lane_lt) == 0u) {
      unsigned h = hash(r) & unsigned(SLOTS - 1);
      over = true;
#pragma unroll 1
      for (int p = 0; p < PROBES; ++p) {
        // A taken slot needs no atomic: its entry never changes again in this round.
        unsigned prev = *reinterpret_cast<volatile unsigned*>(&table[h]);
        if (prev == kEmpty) prev = atomicCAS(&table[h], kEmpty, unsigned(tid));
        if (prev == kEmpty) {
          slot = int(h);
          over = false;
          break;
        }
        const bool dup = (prev & kFinal) ? same(r, uniq + h * WORDS, 1) : same(r, sx + prev, Shape::THREADS);
        if (dup) {
          over = false;
          break;
        }
        h = (h + 1u) & unsigned(SLOTS - 1);
      }
    }
    if (slot >= 0) {  // read only once the entry is final, or by the sweep after the barrier
#pragma unroll
      for (int k = 0; k < WORDS; ++k) uniq[slot * WORDS + k] = r[k];
    }
    // Every probe of the round is done. The sweep leaves only rows the table lacks as candidates,
    // so a candidate that overflows after its thread's sweep dropped rows is no sign of a full
    // table: those rows do not count towards the 3/4 (with ~2 SLOTS values spread over the
    // threads, counting them stopped the rounds after ~6 and appended ~2.6x the rows).
    const int overflowed = tile_sync_count<Shape::THREADS>(over && !hit);
    if (over) set(ov, e);
    if (slot >= 0) table[slot] = kFinal | (unsigned(tid) << 8) | unsigned(e);
    if (4 * overflowed > 3 * live) {  // the same in every thread
#pragma unroll
      for (int w = 0; w < W; ++w) {
        ov[w] |= todo[w];
        todo[w] = 0u;
      }
      return kFull;
    }
    // The final entries are written before the next round or sweep reads the table: a sweep
    // racing with them would still be right (taken either way) but is a shared-memory race to
    // racecheck.
    tile_sync<Shape::THREADS>();
    return kNext;
  }

  // After the rounds, every thread: reserves the rows of this thread's slots (s = tid + x *
  // THREADS) and of its overflow pairs, one global atomic per block. As BlockAppend::reserve.
  GM_DEV bool reserve(const unsigned (&ov)[W], u64* counter, u64& first) const {
    tile_sync<Shape::THREADS>();  // the last round's slots are final
    unsigned mine = 0;
    for (int s = int(threadIdx.x); s < SLOTS; s += Shape::THREADS) mine += table[s] != kEmpty ? 1u : 0u;
#pragma unroll
    for (int w = 0; w < W; ++w) mine += unsigned(__popc(ov[w]));
    return BlockAppend<Shape>::reserve_rows(mine, counter, first);
  }

  // A final entry's thread and pair (m * TN + n): where the slot's (i, j) come from.
  GM_DEV static int owner(unsigned entry) { return int((entry >> 8) & 1023u); }
  GM_DEV static int pair(unsigned entry) { return int(entry & 255u); }
  GM_DEV const unsigned* row(int s) const { return uniq + s * WORDS; }
};

}  // namespace gm
