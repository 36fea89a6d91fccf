// The whole selection of a small global top / bottom list in one block (src/cuda/outputs/list/finish/select.cpp
// drives it where the candidates are few). The multi-launch path of gamut_select.cuh, then the
// rank sort and the row ordering, cost ~15 launches and two waits after the main kernel, most
// of a small list's time beyond its kernel; here one block of
// kSelSmallThreads does it all and leaves idx[0, m) = the kept candidates in the list's final
// order, m = min(n, N):
//   0. every candidate's rank (gm::rank32, smaller = better) into shared memory, in one pass of
//      independent loads (the later passes read them there);
//   1. the candidates at or below the main kernel's final global threshold (at least N rows,
//      the N best among them) go to shared memory as sort keys (rank, b), (i, j) and their
//      index; where too many lie there, a radix select over the ranks (4 rounds of 8-bit
//      digits) finds T, the N-th smallest rank, and the candidates at or below T go instead
//      (every candidate where n <= N);
//   2. they are ordered by (rank, b, i, j), the order of the multi-launch path's device
//      ordering (a row is one (b, i, j): the order is total): each counts those before it
//      (a few hundred at most), or a bitonic sort; the first m are kept.
// More than kSelSmallCap candidates at or below T (ties): *kept = kSelSmallOverflow and the host
// runs the multi-launch path instead. Arguments: gm::SelectArgs (n, key, b, i, j, limit, idx,
// kept, and thr: the list's global threshold or 0; below, hist, groups, extent are not read).
#pragma once
#include "gamut_select.cuh"

namespace gm {

// (kSelSmallThreads, kSelSmallCap, kSelSmallSmem, kSelSmallOverflow: gamut_constants.cuh.)
// The candidates with rank <= t as sort entries (rank, b), (i, j) and index; returns how many
// there are (entries beyond kSelSmallCap are not stored). Every thread calls it.
template <class K, bool TOP>
GM_DEV unsigned sel_small_collect(const SelectArgs& a, const unsigned* rank, unsigned t, u64* key_rb, u64* key_ij,
                                  unsigned* at, unsigned* count) {
  const int* bv = reinterpret_cast<const int*>(a.b);
  const int* iv = reinterpret_cast<const int*>(a.i);
  const int* jv = reinterpret_cast<const int*>(a.j);
  if (threadIdx.x == 0) *count = 0u;
  __syncthreads();
  for (u64 c = threadIdx.x; c < a.n; c += blockDim.x) {
    const unsigned r = rank[c];
    if (r > t) continue;
    const unsigned s = atomicAdd(count, 1u);
    if (s >= kSelSmallCap) continue;
    key_rb[s] = (u64(r) << 32) | unsigned(bv[c]);
    key_ij[s] = (u64(unsigned(iv[c])) << 32) | unsigned(jv[c]);
    at[s] = unsigned(c);
  }
  __syncthreads();
  return *count;
}

// Entries that sel_small orders by counting (count^2 comparisons, no barrier); more: a bitonic
// sort: counting grows as count^2, too slow at the ~1000 entries a threshold usually keeps.
constexpr unsigned kSelSmallCountSort = 256;

// The N-th smallest of `count` ranks rank_of(0 .. count-1): a radix select in 4 rounds of 8-bit
// digits, each a shared histogram of the ranks that match the digits found so far (lanes with
// the same bin add once: the best ranks share their high digits), then warp 0 finds the first
// digit whose running count reaches N. Every thread calls it; N <= count.
template <class RankOf>
GM_DEV unsigned sel_small_radix(RankOf rank_of, u64 count, u64 limit, unsigned* hist, unsigned* s_prefix,
                                unsigned* s_below) {
  const unsigned tid = threadIdx.x, lane = tid & 31u, threads = blockDim.x;
  unsigned prefix = 0u, below = 0u;  // T's digits so far; ranks whose digits are below them
  for (int shift = 24; shift >= 0; shift -= 8) {
    for (unsigned d = tid; d < 256u; d += threads) hist[d] = 0u;
    __syncthreads();
    const unsigned high = unsigned(shift) + 8u;
    // (base is the same in the whole warp: the _sync calls.)
    for (u64 base = tid & ~31u; base < count; base += threads) {
      const u64 c = base + lane;
      unsigned bin = 0xffffffffu;
      if (c < count) {
        const unsigned r = rank_of(c);
        if (high >= 32u || (r >> high) == (prefix >> high)) bin = (r >> unsigned(shift)) & 255u;
      }
      const unsigned peers = __match_any_sync(0xffffffffu, bin);
      if (bin != 0xffffffffu && int(lane) == __ffs(int(peers)) - 1) atomicAdd(&hist[bin], unsigned(__popc(peers)));
    }
    __syncthreads();
    if (tid < 32u) {  // warp 0: the first digit whose running count reaches N
      unsigned v[kSelChunks];
#pragma unroll
      for (unsigned c = 0; c < kSelChunks; ++c) v[c] = hist[c * 32u + lane];
      u64 run = below;
      unsigned digit = 0u, under = below;
      sel_find_digit(v, 256u, limit, run, digit, under);
      if (lane == 0u) {
        *s_prefix = prefix | (digit << unsigned(shift));
        *s_below = under;
      }
    }
    __syncthreads();
    prefix = *s_prefix;
    below = *s_below;
  }
  return prefix;
}

// Keeps the first `count` sort entries whose rank is <= t, packed at the front (in no order);
// returns how many. Each thread holds its entries (at most kSelSmallCap / blockDim.x) across
// the barrier between the reads and the writes.
GM_DEV unsigned sel_small_compact(unsigned t, unsigned count, u64* key_rb, u64* key_ij, unsigned* at,
                                  unsigned* s_count) {
  constexpr unsigned kPer = kSelSmallCap / kSelSmallThreads;
  u64 rb[kPer], ij[kPer];
  unsigned x[kPer];
  bool keep[kPer];
#pragma unroll
  for (unsigned r = 0; r < kPer; ++r) {
    const unsigned e = threadIdx.x + r * blockDim.x;
    keep[r] = e < count && unsigned(key_rb[e] >> 32) <= t;
    if (keep[r]) {
      rb[r] = key_rb[e];
      ij[r] = key_ij[e];
      x[r] = at[e];
    }
  }
  if (threadIdx.x == 0) *s_count = 0u;
  __syncthreads();
#pragma unroll
  for (unsigned r = 0; r < kPer; ++r)
    if (keep[r]) {
      const unsigned s = atomicAdd(s_count, 1u);
      key_rb[s] = rb[r];
      key_ij[s] = ij[r];
      at[s] = x[r];
    }
  __syncthreads();
  return *s_count;
}

template <class K, bool TOP>
GM_DEV void sel_small(const SelectArgs& a) {
  extern __shared__ __align__(16) unsigned char sel_smem[];
  u64* const key_rb = reinterpret_cast<u64*>(sel_smem);  // (rank, b)
  u64* const key_ij = key_rb + kSelSmallCap;             // (i, j)
  unsigned* const at = reinterpret_cast<unsigned*>(key_ij + kSelSmallCap);
  unsigned* const rank = at + kSelSmallCap;  // [n]: every candidate's rank
  __shared__ unsigned hist[256];
  __shared__ unsigned s_prefix, s_below, s_count;
  const u64 n = a.n, limit = a.limit;
  const unsigned tid = threadIdx.x, threads = blockDim.x;
  // 0. The ranks (the host sends no more than kSelSmallCandidates).
#pragma unroll 4
  for (u64 c = tid; c < n; c += threads) rank[c] = sel_rank<K, TOP>(a, c);
  __syncthreads();
  // 1. The main kernel's global threshold (a.thr: its final value, 0xffffffff where it never
  // fell) has at least N appended rows at or below it, the N best among them (gm::TileSelect's
  // reservoirs): where few candidates lie at or below it, they are all the block needs.
  // Otherwise a radix select finds T, the N-th smallest rank, and the candidates at or below T.
  const unsigned gate = a.thr ? *reinterpret_cast<const unsigned*>(a.thr) : 0xffffffffu;
  unsigned count = sel_small_collect<K, TOP>(a, rank, n <= limit ? 0xffffffffu : gate, key_rb, key_ij, at, &s_count);
  if (n > limit && (count > kSelSmallCap || u64(count) < limit)) {
    const unsigned t = sel_small_radix([&](u64 c) { return rank[c]; }, n, limit, hist, &s_prefix, &s_below);
    count = sel_small_collect<K, TOP>(a, rank, t, key_rb, key_ij, at, &s_count);
  } else if (n > limit && count > kSelSmallCountSort) {
    // Many entries at or below the threshold (Q7: ~1000 for N = 128): T among them, and only
    // those at or below it kept (N plus T's ties), so that they sort by counting.
    const unsigned t =
        sel_small_radix([&](u64 e) { return unsigned(key_rb[e] >> 32); }, count, limit, hist, &s_prefix, &s_below);
    count = sel_small_compact(t, count, key_rb, key_ij, at, &s_count);
  }
  if (count > kSelSmallCap) {
    if (tid == 0u) *reinterpret_cast<u64*>(a.kept) = kSelSmallOverflow;
    return;
  }
  const u64 m = count < limit ? count : limit;
  unsigned* idx = reinterpret_cast<unsigned*>(a.idx);
  // 2. Order by (rank, b, i, j): a row is one (b, i, j), so the order is total. Up to
  // kSelSmallCountSort entries: each thread counts the entries before its own and writes its
  // index there; more (T's ties): a bitonic sort of the next power of two.
  if (count <= kSelSmallCountSort) {
    if (tid < count) {
      const u64 rb = key_rb[tid], ij = key_ij[tid];
      unsigned pos = 0u;
      for (unsigned u = 0; u < count; ++u) pos += key_rb[u] < rb || (key_rb[u] == rb && key_ij[u] < ij);
      if (pos < m) idx[pos] = at[tid];
    }
    if (tid == 0u) *reinterpret_cast<u64*>(a.kept) = m;
    return;
  }
  unsigned p2 = 1u;
  while (p2 < count) p2 <<= 1;
  for (unsigned s = count + tid; s < p2; s += threads) {
    key_rb[s] = ~0ull;
    key_ij[s] = ~0ull;
    at[s] = 0xffffffffu;
  }
  __syncthreads();
  for (unsigned size = 2u; size <= p2; size <<= 1)
    for (unsigned stride = size >> 1; stride > 0u; stride >>= 1) {
      for (unsigned t = tid; t < p2 / 2u; t += threads) {
        const unsigned lo = 2u * t - (t & (stride - 1u)), hi = lo + stride;
        const bool ascending = (lo & size) == 0u;
        const bool greater = key_rb[lo] > key_rb[hi] || (key_rb[lo] == key_rb[hi] && key_ij[lo] > key_ij[hi]);
        if (greater == ascending) {
          const u64 rb = key_rb[lo], ij = key_ij[lo];
          const unsigned x = at[lo];
          key_rb[lo] = key_rb[hi];
          key_ij[lo] = key_ij[hi];
          at[lo] = at[hi];
          key_rb[hi] = rb;
          key_ij[hi] = ij;
          at[hi] = x;
        }
      }
      __syncthreads();
    }
  for (u64 s = tid; s < m; s += threads) idx[s] = at[s];
  if (tid == 0u) *reinterpret_cast<u64*>(a.kept) = m;
}

}  // namespace gm
