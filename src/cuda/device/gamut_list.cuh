// List outputs (`emit`): rows are appended to column buffers through one global counter.
// The counter counts every row that reached the emit, also past the capacity, so the host
// sees how many there were, grows the buffers and runs again: no row is ever dropped.
// Ordering, limits and de-duplication happen on the host (finalize_list).
//
// top/bottom lists first pre-select per block tile (tile_thresholds): a row is appended only
// when its rank is within the N best ranks of its group inside the tile, so a kNN over M x N
// pairs appends about tiles x N rows instead of M x N.
#pragma once
#include "gamut_math.cuh"

namespace gm {

struct ListAppend {
  u64* counter;   // counter[0]: rows reached; counter[1]: N of top/bottom (set by the host)
  u64 capacity;
  // Reserve one row for each lane whose flag is set: one global atomic per warp.
  // Every lane of the warp must call it together. The row exists only if slot < capacity.
  GM_DEV u64 reserve(bool flag) const {
    const unsigned mask = __ballot_sync(0xffffffffu, flag);
    if (mask == 0u) return 0;
    const int lane = int(threadIdx.x & 31u);
    const int leader = __ffs(int(mask)) - 1;
    u64 base = 0;
    if (lane == leader) base = atomicAdd(counter, u64(__popc(mask)));
    base = __shfl_sync(0xffffffffu, base, leader);
    return base + u64(__popc(mask & ((1u << lane) - 1u)));
  }
  GM_DEV i64 limit() const { return i64(__ldg(counter + 1)); }
};

// ---- ranks: the key order of finalize_list as an unsigned number, smaller = better ----------
// Equal keys (also -0.0 / 0.0) get equal ranks, NaN the largest rank in both directions. For
// 64-bit keys the rank is the top half of the exact 64-bit rank: still monotone, so a filter
// "rank > T" never drops a row that an exact comparison would keep (ties only admit more).
GM_DEV unsigned rank_ord64(u64 ord, bool top) { return unsigned((top ? ~ord : ord) >> 32); }
GM_DEV unsigned rank32(bool v, bool top) { return top ? (v ? 0u : 1u) : (v ? 1u : 0u); }
GM_DEV unsigned rank32(int v, bool top) {
  const unsigned ord = unsigned(v) ^ 0x80000000u;
  return top ? ~ord : ord;
}
GM_DEV unsigned rank32(float v, bool top) {
  if (v != v) return 0xffffffffu;
  const unsigned u = v == 0.0f ? 0u : __float_as_uint(v);
  const unsigned ord = (u & 0x80000000u) ? ~u : (u | 0x80000000u);
  return top ? ~ord : ord;   // a number never reaches 0xffffffff (only NaN bit patterns do)
}
GM_DEV unsigned rank32(i64 v, bool top) { return rank_ord64(u64(v) ^ 0x8000000000000000ull, top); }
GM_DEV unsigned rank32(double v, bool top) {
  if (v != v) return 0xffffffffu;
  const u64 u = v == 0.0 ? 0ull : u64(__double_as_longlong(v));
  const u64 ord = (u & 0x8000000000000000ull) ? ~u : (u | 0x8000000000000000ull);
  return rank_ord64(ord, top);   // numbers stay below 0xfff00001: NaN stays strictly last
}

// ---- tile pre-selection ------------------------------------------------------------------
// Groups of a tile: PER 0 = the whole tile, 1 = each row (per i), 2 = each column (per j).
// After the call thr[g] holds T_g, the smallest rank with at least `limit` of group g's
// candidates at or below it (0xffffffff when the group has at most `limit`). A candidate
// with rank > T_g has `limit` strictly better ones in the same group and tile, so it cannot be
// in the group's final N. Radix select, one bit per round, counts in shared memory.
// Every thread of the block calls it; thr and cnt are shared arrays of G words.
template <class Shape, int PER>
struct TileSelect {
  static constexpr int G = PER == 1 ? Shape::BM : PER == 2 ? Shape::BN : 1;
  static constexpr int W = (Shape::TM * Shape::TN + 31) / 32;

  template <class Map>
  GM_DEV static void count(const Map& tmap, const unsigned (&rk)[Shape::TM][Shape::TN], const unsigned (&pres)[W],
                           const unsigned* thr, unsigned low, unsigned* cnt) {
    unsigned total = 0;
#pragma unroll
    for (int m = 0; m < Shape::TM; ++m) {
      unsigned row = 0;
#pragma unroll
      for (int n = 0; n < Shape::TN; ++n) {
        const int e = m * Shape::TN + n;
        const bool p = ((pres[e / 32] >> (e % 32)) & 1u) != 0;
        const int g = PER == 1 ? tmap.row(m) : PER == 2 ? tmap.col(n) : 0;
        const bool in = p && rk[m][n] <= (thr[g] | low);
        if (PER == 2) {
          if (in) atomicAdd(&cnt[g], 1u);
        } else {
          row += in ? 1u : 0u;
        }
      }
      if (PER == 1 && row != 0u) atomicAdd(&cnt[tmap.row(m)], row);
      total += row;
    }
    if (PER == 0) {
      total = __reduce_add_sync(0xffffffffu, total);
      if ((threadIdx.x & 31u) == 0u && total != 0u) atomicAdd(&cnt[0], total);
    }
  }

  template <class Map>
  GM_DEV static void thresholds(const Map& tmap, const unsigned (&rk)[Shape::TM][Shape::TN],
                                const unsigned (&pres)[W], i64 limit, unsigned* thr, unsigned* cnt) {
    const int tid = int(threadIdx.x);
    // Round 0: groups with no more than `limit` candidates keep them all; when every group is
    // like that (large N, sparse emits) the 32 rounds are skipped.
    for (int g = tid; g < G; g += Shape::THREADS) { thr[g] = 0xffffffffu; cnt[g] = 0u; }
    __syncthreads();
    count(tmap, rk, pres, thr, 0u, cnt);
    __syncthreads();
    bool crowded = false;
    for (int g = tid; g < G; g += Shape::THREADS) {
      crowded = crowded || i64(cnt[g]) > limit;
      thr[g] = i64(cnt[g]) > limit ? 0u : 0xffffffffu;
    }
    if (!__syncthreads_or(crowded)) return;
    // Groups with more than `limit`: T is built from the top bit down, keeping each bit 0 when
    // that already leaves at least `limit` candidates at or below.
#pragma unroll 1
    for (int bit = 31; bit >= 0; --bit) {
      for (int g = tid; g < G; g += Shape::THREADS) cnt[g] = 0u;
      __syncthreads();
      count(tmap, rk, pres, thr, (1u << bit) - 1u, cnt);
      __syncthreads();
      // Only crowded groups (thr != ~0) change; a group's thr and cnt belong to one thread.
      for (int g = tid; g < G; g += Shape::THREADS)
        if (thr[g] != 0xffffffffu && i64(cnt[g]) < limit) thr[g] |= 1u << bit;
    }
    __syncthreads();
  }
};

}  // namespace gm
