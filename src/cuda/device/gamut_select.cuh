// Device-side selection of top/bottom list candidates (src/cuda/list_select.cpp drives it).
// The candidates are the rows the main kernel appended (unordered). Per group (the whole list,
// each (b, i) for `per i`, each (b, j) for `per j`) a radix select over gm::rank32 finds T_g,
// the smallest rank with at least N candidates at or below it; only candidates with
// rank <= T_g are kept (the N best plus ties of rank), the host orders them (finalize_list).
// Rounds, one bit each from the top: count per group, then fix the bit. No sorting, no
// shared memory: every kernel is a grid-stride loop over candidates or groups.
#pragma once
#include "gamut_list.cuh"

namespace gm {

// Argument words of every selection kernel.
struct SelArgs { unsigned long long s[16]; };
enum SelSlot {
  kSelN = 0,        // candidates
  kSelKey = 1,      // key column (storage type)
  kSelB = 2, kSelI = 3, kSelJ = 4,   // int32 columns
  kSelThr = 5,      // unsigned[G]: T_g (0xffffffff: keeps all)
  kSelCnt = 6,      // unsigned[G]: counts of the current round
  kSelG = 7,        // groups
  kSelLimit = 8,    // N
  kSelBegin = 9,    // first row (per i) / column (per j) of the range
  kSelExtent = 10,  // rows (per i) / columns (per j) of the range
  kSelLow = 11,     // count ranks <= (thr | low)
  kSelBit = 12,     // the bit that update fixes
  kSelIdx = 13,     // unsigned[N]: kept candidate indices
  kSelKept = 14,    // u64 counter of kept candidates
};

template <int PER>
GM_DEV u64 sel_group(const SelArgs& a, u64 c) {
  if (PER == 0) return 0;
  const int* bv = reinterpret_cast<const int*>(a.s[kSelB]);
  const int* xv = reinterpret_cast<const int*>(PER == 1 ? a.s[kSelI] : a.s[kSelJ]);
  return u64(i64(bv[c]) * i64(a.s[kSelExtent]) + (i64(xv[c]) - i64(a.s[kSelBegin])));
}

template <class K, bool TOP>
GM_DEV unsigned sel_rank(const SelArgs& a, u64 c) {
  return rank32(widen(reinterpret_cast<const K*>(a.s[kSelKey])[c]), TOP);
}

// cnt[g] += candidates of g with rank <= thr[g] | low. Warp lanes of one group add once.
template <class K, bool TOP, int PER>
GM_DEV void sel_count(const SelArgs& a) {
  const u64 n = a.s[kSelN];
  const unsigned* thr = reinterpret_cast<const unsigned*>(a.s[kSelThr]);
  unsigned* cnt = reinterpret_cast<unsigned*>(a.s[kSelCnt]);
  const unsigned low = unsigned(a.s[kSelLow]);
  const u64 step = u64(gridDim.x) * blockDim.x;
  // base is the same in the whole block, so every lane runs every iteration (the _sync calls).
  for (u64 base = u64(blockIdx.x) * blockDim.x; base < n; base += step) {
    const u64 c = base + threadIdx.x;
    u64 g = ~0ull;
    bool in = false;
    if (c < n) {
      g = sel_group<PER>(a, c);
      in = sel_rank<K, TOP>(a, c) <= (thr[g] | low);
    }
    const unsigned peers = __match_any_sync(0xffffffffu, g);
    const unsigned hits = __ballot_sync(0xffffffffu, in) & peers;
    if (in && int(threadIdx.x & 31u) == __ffs(int(hits)) - 1) atomicAdd(&cnt[g], unsigned(__popc(hits)));
  }
}

// After the count of all candidates (low = ~0): groups with more than N start at T = 0, the
// others keep everything (T = ~0).
GM_DEV void sel_start(const SelArgs& a) {
  unsigned* thr = reinterpret_cast<unsigned*>(a.s[kSelThr]);
  const unsigned* cnt = reinterpret_cast<const unsigned*>(a.s[kSelCnt]);
  const i64 limit = i64(a.s[kSelLimit]);
  for (u64 g = u64(blockIdx.x) * blockDim.x + threadIdx.x; g < a.s[kSelG]; g += u64(gridDim.x) * blockDim.x)
    thr[g] = i64(cnt[g]) > limit ? 0u : 0xffffffffu;
}

// One bit of T for the crowded groups: it stays 0 when that leaves at least N at or below.
GM_DEV void sel_update(const SelArgs& a) {
  unsigned* thr = reinterpret_cast<unsigned*>(a.s[kSelThr]);
  const unsigned* cnt = reinterpret_cast<const unsigned*>(a.s[kSelCnt]);
  const i64 limit = i64(a.s[kSelLimit]);
  const unsigned bit = unsigned(a.s[kSelBit]);
  for (u64 g = u64(blockIdx.x) * blockDim.x + threadIdx.x; g < a.s[kSelG]; g += u64(gridDim.x) * blockDim.x)
    if (thr[g] != 0xffffffffu && i64(cnt[g]) < limit) thr[g] |= 1u << bit;
}

// idx[...] = every candidate with rank <= T_g (in no particular order).
template <class K, bool TOP, int PER>
GM_DEV void sel_keep(const SelArgs& a) {
  const u64 n = a.s[kSelN];
  const unsigned* thr = reinterpret_cast<const unsigned*>(a.s[kSelThr]);
  unsigned* idx = reinterpret_cast<unsigned*>(a.s[kSelIdx]);
  const ListAppend out{reinterpret_cast<u64*>(a.s[kSelKept]), n};
  const u64 step = u64(gridDim.x) * blockDim.x;
  for (u64 base = u64(blockIdx.x) * blockDim.x; base < n; base += step) {
    const u64 c = base + threadIdx.x;
    const bool in = c < n && sel_rank<K, TOP>(a, c) <= thr[sel_group<PER>(a, c)];
    const u64 slot = out.reserve(in);   // every lane, together
    if (in) idx[slot] = unsigned(c);
  }
}

// dst[r] = src[idx[r]] for r < m: one column of the kept rows (T: an unsigned of the width).
template <class T>
GM_DEV void sel_gather(T* dst, const T* src, const unsigned* idx, u64 m) {
  for (u64 r = u64(blockIdx.x) * blockDim.x + threadIdx.x; r < m; r += u64(gridDim.x) * blockDim.x)
    dst[r] = src[idx[r]];
}

}  // namespace gm
