// The whole selection of a small global top / bottom list in one block (src/cuda/lists/select.cpp
// drives it where the candidates are few: session 17, bench/NOTES.md). The multi-launch path of
// gamut_select.cuh, then the rank sort and the row ordering, cost ~15 launches and two waits
// after the main kernel, most of a Q7 call's 0.2 ms beyond its kernel; here one block of
// kSelSmallThreads does it all and leaves idx[0, m) = the kept candidates in the list's final
// order, m = min(n, N):
//   0. every candidate's rank (gm::rank32, smaller = better) into shared memory, in one pass of
//      independent loads (reading them from global memory in every round instead kept the
//      block waiting on one load after another: 42 us for Q7's candidates, session 17);
//   1. a radix select over them (4 rounds of 8-bit digits) finds T, the N-th smallest rank
//      (none where n <= N: every candidate stays);
//   2. the candidates with rank <= T (fewer than N below T, plus T's ties) go to shared
//      memory as sort keys (rank, b), (i, j) and their index;
//   3. a bitonic sort orders them by (rank, b, i, j), the order of the multi-launch path's
//      device ordering (a row is one (b, i, j): the order is total), and the first m are kept.
// More than kSelSmallCap candidates at or below T (ties): *kept = kSelSmallOverflow and the host
// runs the multi-launch path instead. Arguments: gm::SelectArgs (n, key, b, i, j, limit, idx,
// kept; thr, below, hist, groups, extent are not read).
#pragma once
#include "gamut_select.cuh"

namespace gm {

// (kSelSmallThreads, kSelSmallCap, kSelSmallSmem, kSelSmallOverflow: gamut_constants.cuh.)
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
  const unsigned tid = threadIdx.x, lane = tid & 31u, threads = blockDim.x;
  const int* bv = reinterpret_cast<const int*>(a.b);
  const int* iv = reinterpret_cast<const int*>(a.i);
  const int* jv = reinterpret_cast<const int*>(a.j);
  const bool all = n <= limit;
  // 0. The ranks (the host sends no more than kSelSmallCandidates).
#pragma unroll 4
  for (u64 c = tid; c < n; c += threads) rank[c] = sel_rank<K, TOP>(a, c);
  __syncthreads();
  unsigned prefix = 0xffffffffu;  // T (every rank is <= it where all are kept)
  if (!all) {
    prefix = 0u;
    unsigned below = 0u;  // candidates whose rank's digits so far are below T's
    for (int shift = 24; shift >= 0; shift -= 8) {
      for (unsigned d = tid; d < 256u; d += threads) hist[d] = 0u;
      __syncthreads();
      const unsigned high = unsigned(shift) + 8u;
      // Lanes with the same bin add once: the best ranks share their high digits, and one
      // shared counter taking every candidate's add made this block take 32 us for Q7's ~20K
      // candidates (H100, session 17). (base is the same in the whole warp: the _sync calls.)
      for (u64 base = tid & ~31u; base < n; base += threads) {
        const u64 c = base + lane;
        unsigned bin = 0xffffffffu;
        if (c < n) {
          const unsigned r = rank[c];
          if (high >= 32u || (r >> high) == (prefix >> high)) bin = (r >> unsigned(shift)) & 255u;
        }
        const unsigned peers = __match_any_sync(0xffffffffu, bin);
        if (bin != 0xffffffffu && int(lane) == __ffs(int(peers)) - 1) atomicAdd(&hist[bin], unsigned(__popc(peers)));
      }
      __syncthreads();
      if (tid < 32u) {  // warp 0: the first digit whose running count reaches N
        unsigned run = below, digit = 0u, under = below;
        bool found = false;  // the same in every lane
        for (unsigned c = 0; c < 8u; ++c) {
          const unsigned v = hist[c * 32u + lane];
          unsigned incl = v;
#pragma unroll
          for (unsigned o = 1; o < 32u; o <<= 1) {
            const unsigned t = __shfl_up_sync(0xffffffffu, incl, o);
            if (lane >= o) incl += t;
          }
          const unsigned hit = __ballot_sync(0xffffffffu, u64(run) + incl >= limit);
          if (!found && hit != 0u) {
            const int l = __ffs(int(hit)) - 1;
            under = run + __shfl_sync(0xffffffffu, incl - v, l);
            digit = c * 32u + unsigned(l);
            found = true;
          }
          run += __shfl_sync(0xffffffffu, incl, 31);
        }
        if (lane == 0u) {
          s_prefix = prefix | (digit << unsigned(shift));
          s_below = under;
        }
      }
      __syncthreads();
      prefix = s_prefix;
      below = s_below;
    }
  }
  // 2. The candidates at or below T, as sort keys.
  if (tid == 0u) s_count = 0u;
  __syncthreads();
  for (u64 c = tid; c < n; c += threads) {
    const unsigned r = rank[c];
    if (r > prefix) continue;
    const unsigned s = atomicAdd(&s_count, 1u);
    if (s >= kSelSmallCap) continue;
    key_rb[s] = (u64(r) << 32) | unsigned(bv[c]);
    key_ij[s] = (u64(unsigned(iv[c])) << 32) | unsigned(jv[c]);
    at[s] = unsigned(c);
  }
  __syncthreads();
  const unsigned count = s_count;
  if (count > kSelSmallCap) {
    if (tid == 0u) *reinterpret_cast<u64*>(a.kept) = kSelSmallOverflow;
    return;
  }
  // 3. Bitonic sort of the next power of two, the padding last.
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
  const u64 m = count < limit ? count : limit;
  unsigned* idx = reinterpret_cast<unsigned*>(a.idx);
  for (u64 s = tid; s < m; s += threads) idx[s] = at[s];
  if (tid == 0u) *reinterpret_cast<u64*>(a.kept) = m;
}

}  // namespace gm
