// Top / bottom lists per i (per j) with block-resident thresholds (KernelInfo::resident_top).
// A persistent block runs contiguous tiles with column (row) tiles fastest, so it sees the
// tiles of one row (column) band in a row. For each row (column) of the band it keeps in
// shared memory the 32 smallest ranks (gm::rank32) of the pairs it appended, sorted, and their
// N-th as the group's threshold: a pair whose rank is above it cannot be among its group's N
// best (N appended rows are at or below it), one at it may tie and is kept.
//
// Per tile (ResidentTop::select): the marked pairs whose rank is at or below their group's
// threshold go into the group's candidate buffer (C slots); a warp per group with candidates
// merges them into the sorted 32 and sets the new threshold; pairs that found the buffer full
// try again against it. Finally the marks of pairs above the merged threshold are cleared: the
// tile appends only rows at or below it. Why this shape: one loop that tested and offered each
// pair kept the epilogue latency-bound; loops over the
// passed pairs that picked each one's accumulator at a run-time index spent most instructions
// on the picks, and walks over the static pairs missed the instruction cache. So every key is
// computed once in straight-line code, the accumulators are kept in shared memory for the
// rounds and the rows, and a merge of one or two candidates is a ballot-and-shift insertion.
// No global memory is read or written here: no global thresholds, no reservoirs (the tile
// selection of gamut_list.cuh serves the other kernels). A group appends about N (1 + ln(n /
// N)) rows over n pairs in random order, the rows that ever entered its best N.
//
// Per i on a map whose warps own their rows (gm::warp_owns_rows: the wgmma map, warp w holding
// the rows 16 w .. 16 w + 15 at every column), a group's pairs all lie in one warp, so the
// rounds, the merges and the append's reserve synchronize that warp alone (__syncwarp, votes),
// and a warp whose pairs all fail goes on to its next tile's products: no block-wide barrier
// in the selection. Elsewhere (per j; maps that spread a row over warps) the block's.
#pragma once
#include "gamut_accumulator_map.cuh"
#include "gamut_list.cuh"

namespace gm {

// OwnerMap: the accumulator map, whose kWarpRows decides WARP (void: none, the block's selection).
template <class Shape, int PER, class OwnerMap>
struct ResidentTop {
  static_assert(PER == kGroupRow || PER == kGroupCol, "resident thresholds are per i or per j");
  static constexpr int G = PER == kGroupRow ? Shape::BM : Shape::BN;  // groups of a band
  static constexpr int KEEP = 32;  // ranks kept per group: N <= 32 (the host's condition)
  static constexpr int C = 32;     // candidate slots per group and round
  static constexpr int W = (Shape::TM * Shape::TN + 31) / 32;
  static constexpr int WARPS = Shape::THREADS / 32;
  static_assert(G % WARPS == 0, "the groups spread evenly over the warps");
  static constexpr int GW = G / WARPS;  // groups a warp merges
  // Each warp selects its own rows (groups GW w .. GW w + GW - 1) alone.
  static constexpr bool WARP = PER == kGroupRow && warp_owns_rows<OwnerMap>();
  static_assert(!WARP || GW <= 32, "a warp's groups fit one ballot");

  struct Smem {
    unsigned best[G][KEEP];  // (G, KEEP) ascending; 0xffffffff: empty
    unsigned cand[G][C];     // (G, C) this round's candidates
    unsigned count[G];       // candidates offered this round (also past C)
    unsigned thr[G];         // N-th of best: a rank above it is not kept
  };

  GM_DEV static int group(int row, int col) { return PER == kGroupRow ? row : col; }
  // (Static indices into b for a run-time e too: the bits stay in registers.)
  GM_DEV static void clear(unsigned (&b)[W], int e) {
#pragma unroll
    for (int w = 0; w < W; ++w)
      if (w == e / 32) b[w] &= ~(1u << (e % 32));
  }

  GM_DEV static int warp() { return tile_thread<Shape::THREADS>() >> 5; }
  // Group q of this warp's groups.
  GM_DEV static int group_of_warp(int q) { return WARP ? GW * warp() + q : warp() + WARPS * q; }
  // The selection's barrier: the warp's or the tile's.
  GM_DEV static void sync() {
    if constexpr (WARP)
      __syncwarp();
    else
      tile_sync<Shape::THREADS>();
  }
  // The same, returning whether p holds in any of its threads.
  GM_DEV static bool any_sync(bool p) {
    if constexpr (WARP) {
      __syncwarp();
      return __any_sync(0xffffffffu, p);
    } else {
      return tile_sync_count<Shape::THREADS>(p) != 0;
    }
  }

  // A new band: nothing kept. Every thread of the tile calls it.
  GM_DEV static void reset(Smem& s) {
    if constexpr (WARP) {  // the warp's own groups
      const int lane = int(threadIdx.x & 31u), g0 = GW * warp();
      for (int e = lane; e < GW * KEEP; e += 32) s.best[g0 + e / KEEP][e % KEEP] = 0xffffffffu;
      if (lane < GW) {
        s.count[g0 + lane] = 0u;
        s.thr[g0 + lane] = 0xffffffffu;
      }
    } else {
      for (int e = int(threadIdx.x); e < G * KEEP; e += Shape::THREADS) (&s.best[0][0])[e] = 0xffffffffu;
      for (int g = int(threadIdx.x); g < G; g += Shape::THREADS) {
        s.count[g] = 0u;
        s.thr[g] = 0xffffffffu;
      }
    }
    sync();
  }

  // One round's merge: a warp per group that has candidates. A few (the steady state: a tile
  // brings a group one or two) are inserted one at a time into the sorted 32 (a ballot finds
  // the place, the ranks after it move up a lane); more (a band's first tiles) are sorted
  // across the lanes (bitonic), and min(best[l], cand[31 - l]), a bitonic sequence holding
  // the 32 smallest of both, is merged into order. Buffers hold at most C = 32 ranks.
  GM_DEV static void merge(i64 limit, Smem& s) {
    static_assert(C == 32 && KEEP == 32, "one rank per lane");
    const int lane = int(threadIdx.x & 31u);
    const int nth = int(limit < KEEP ? limit : KEEP) - 1;  // (limit >= 1 here)
    // This warp's groups (group_of_warp), 32 at a time: a ballot of those with candidates.
    for (int q0 = 0; q0 < GW; q0 += 32) {
      // (Lanes past the warp's groups read nothing: another warp may be clearing its counts.)
      const bool mine = q0 + lane < GW;
      unsigned with = __ballot_sync(0xffffffffu, mine && s.count[group_of_warp(mine ? q0 + lane : 0)] != 0u);
      while (with != 0u) {
        const int g = group_of_warp(q0 + __ffs(int(with)) - 1);
        with &= with - 1u;
        const unsigned offered = s.count[g];
        const unsigned n = offered < unsigned(C) ? offered : unsigned(C);
        unsigned w = s.best[g][lane];
        if (n <= 4u) {
          for (unsigned q = 0; q < n; ++q) {
            const unsigned c = s.cand[g][q];
            const int at = __popc(__ballot_sync(0xffffffffu, w <= c));  // after the ranks equal to it
            const unsigned up = __shfl_up_sync(0xffffffffu, w, 1);
            w = lane < at ? w : lane == at ? c : up;
          }
        } else {
          unsigned v = unsigned(lane) < n ? s.cand[g][lane] : 0xffffffffu;
#pragma unroll
          for (int k = 2; k <= 32; k <<= 1)
#pragma unroll
            for (int j = k >> 1; j > 0; j >>= 1) {
              const unsigned o = __shfl_xor_sync(0xffffffffu, v, j);
              const bool keep_min = ((lane & j) == 0) == ((lane & k) == 0);
              v = keep_min ? min(o, v) : max(o, v);
            }
          w = min(w, __shfl_sync(0xffffffffu, v, 31 - lane));
#pragma unroll
          for (int j = 16; j > 0; j >>= 1) {
            const unsigned o = __shfl_xor_sync(0xffffffffu, w, j);
            w = (lane & j) == 0 ? min(o, w) : max(o, w);
          }
        }
        s.best[g][lane] = w;
        const unsigned t = __shfl_sync(0xffffffffu, w, nth);
        __syncwarp();  // every lane has read the count (racecheck: the write below follows the reads)
        if (lane == 0) {
          s.count[g] = 0u;
          // (N > KEEP never reaches here; were it to, nothing is filtered.)
          s.thr[g] = limit > KEEP ? 0xffffffffu : t;
        }
      }
    }
  }

  // The tile's selection over the thread's marked pairs `marks` (pass 1's, bit e = m * TN +
  // n): afterwards a mark is set only where the pair's rank is at or below its group's
  // threshold. key(m, n) is the pair's key for static m, n, computed once for every pair in
  // straight-line code that also tests it against the group's threshold (gm::rank_within);
  // key_at(e) is the same key at a run-time e, for the few pairs that passed (the generated
  // code keeps the tile's accumulators in shared memory for it: key() stores them). Every
  // thread of the tile calls it; returns, the same in every thread of the tile (of the warp
  // where WARP), false where no pair of the tile (warp) passed (nothing to append) and true
  // where some did. Two barriers a tile where pairs pass (a round; more rounds where a buffer
  // filled), one where none does.
  template <bool TOP, class Map, class Key, class KeyAt>
  GM_DEV static bool select(const Map& tmap, const Key& key, const KeyAt& key_at, unsigned (&marks)[W], i64 limit,
                            Smem& s) {
    static_assert(map_fits<Map, Shape>(), "the accumulator map's grid is Shape's thread tile");
    opaque_bits(marks);
    if (limit <= 0) {  // N = 0 keeps nothing (the same in every thread)
#pragma unroll
      for (int w = 0; w < W; ++w) marks[w] = 0u;
      return false;
    }
#pragma unroll
    for (int m = 0; m < Shape::TM; ++m) {
      const unsigned t_row = PER == kGroupRow ? s.thr[tmap.row(m)] : 0u;
#pragma unroll
      for (int n = 0; n < Shape::TN; ++n) {
        const int e = m * Shape::TN + n;
        const unsigned t = PER == kGroupRow ? t_row : s.thr[tmap.col(n)];
        if (!rank_within(key(m, n), t, TOP)) clear(marks, e);
      }
    }
    unsigned any = 0u;
#pragma unroll
    for (int w = 0; w < W; ++w) any |= marks[w];
    unsigned pend[W];  // passed, not yet in their group's buffer
#pragma unroll
    for (int w = 0; w < W; ++w) pend[w] = marks[w];
#pragma unroll 1
    for (bool first = true;; first = false) {
      unsigned todo[W];
#pragma unroll
      for (int w = 0; w < W; ++w) todo[w] = pend[w];
      int e = 0;
#pragma unroll 1
      while (next_bit(todo, e)) {
        const int g = group(tmap.row(e / Shape::TN), tmap.col(e % Shape::TN));
        const unsigned r = rank32(key_at(e), TOP);
        if (r > s.thr[g]) {  // (another pair of the group lowered it)
          clear(pend, e);
          clear(marks, e);
          continue;
        }
        const unsigned slot = atomicAdd(&s.count[g], 1u);
        if (slot < unsigned(C)) {
          s.cand[g][slot] = r;
          clear(pend, e);
        }
      }
      unsigned left = 0u;
#pragma unroll
      for (int w = 0; w < W; ++w) left |= pend[w];
      // The round's candidates are in the buffers. (The first round's barrier also says whether
      // any pair of the tile passed: where none did, nothing was offered and nothing is left.)
      if (!first)
        sync();
      else if (!any_sync(any != 0u))
        return false;
      merge(limit, s);
      // (the barrier also orders the merge's thresholds before the next reads)
      if (!any_sync(left != 0u)) break;
    }
    unsigned todo[W];
#pragma unroll
    for (int w = 0; w < W; ++w) todo[w] = marks[w];
    int e = 0;
#pragma unroll 1
    while (next_bit(todo, e)) {
      const int g = group(tmap.row(e / Shape::TN), tmap.col(e % Shape::TN));
      if (rank32(key_at(e), TOP) > s.thr[g]) clear(marks, e);
    }
    // Some mark is left (no barrier to count them): a group offered a candidate keeps its N best
    // ranks of the round marked, since the merged threshold is the N-th of ranks that include them.
    return true;
  }

  // The append's reserve of the thread's marked rows on *counter (gm::BlockAppend::reserve):
  // where WARP one atomic per warp with rows, the warp's threads together; else the block's.
  GM_DEV static bool reserve(unsigned (&bits)[W], u64* counter, u64& first) {
    if constexpr (!WARP) {
      return BlockAppend<Shape>::reserve(bits, counter, first);
    } else {
      opaque_bits(bits);
      unsigned mine = 0;
#pragma unroll
      for (int w = 0; w < W; ++w) mine += unsigned(__popc(bits[w]));
      const int lane = int(threadIdx.x & 31u);
      const unsigned incl = warp_inclusive_sum(mine);
      const unsigned rows = __shfl_sync(0xffffffffu, incl, 31);
      if (rows == 0u) return false;
      u64 base = 0;
      if (lane == 31) base = atomicAdd(counter, u64(rows));
      first = __shfl_sync(0xffffffffu, base, 31) + (incl - mine);
      return true;
    }
  }
};

}  // namespace gm
