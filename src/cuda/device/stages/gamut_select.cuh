// Device-side selection of top/bottom list candidates (src/cuda/outputs/list/finish/select.cpp drives it;
// the kernels are instantiated by src/cuda/codegen/stage_sources.cpp). Arguments: gm::SelectArgs.
// The candidates are the rows the main kernel appended (unordered). Per group (the whole list,
// each (b, i) for `per i`, each (b, j) for `per j`) a radix select over gm::rank32 finds T_g,
// the smallest rank with at least N candidates at or below it; only candidates with
// rank <= T_g are kept (the N best plus ties of rank), the host orders them (finalize_list).
// Rounds, one digit of the rank each from the top (8 bits when the per-group histograms fit,
// else fewer): a histogram of the digit over the candidates that match T_g's digits so far,
// then a warp per group picks the digit where the running count reaches N. No sorting, no
// shared memory: every kernel is a grid-stride loop over candidates or groups.
#pragma once
#include "gamut_list.cuh"
#include "gamut_stage_args.cuh"

namespace gm {

constexpr unsigned kSelAll = 0xffffffffu;  // below[g] of a group that keeps every candidate

template <int PER>
GM_DEV u64 sel_group(const SelectArgs& a, u64 c) {
  if (PER == kGroupAll) return 0;
  const int* bv = reinterpret_cast<const int*>(a.b);
  const int* xv = reinterpret_cast<const int*>(PER == kGroupRow ? a.i : a.j);
  return u64(i64(bv[c]) * i64(a.extent) + (i64(xv[c]) - i64(a.begin)));
}

template <class K, bool TOP>
GM_DEV unsigned sel_rank(const SelectArgs& a, u64 c) {
  return rank32(widen(reinterpret_cast<const K*>(a.key)[c]), TOP);
}

// hist[g][digit] += candidates of g whose rank matches T_g above the digit. Lanes with the
// same bin add once.
template <class K, bool TOP, int PER>
GM_DEV void sel_hist(const SelectArgs& a) {
  const u64 n = a.n;
  const unsigned* thr = reinterpret_cast<const unsigned*>(a.thr);
  const unsigned* below = reinterpret_cast<const unsigned*>(a.below);
  unsigned* hist = reinterpret_cast<unsigned*>(a.hist);
  const unsigned shift = unsigned(a.shift), bits = unsigned(a.bits);
  const unsigned high = shift + bits;  // rank bits above the digit: fixed by earlier rounds
  const u64 step = u64(gridDim.x) * blockDim.x;
  // base is the same in the whole block, so every lane runs every iteration (the _sync calls).
  for (u64 base = u64(blockIdx.x) * blockDim.x; base < n; base += step) {
    const u64 c = base + threadIdx.x;
    u64 bin = ~0ull;
    bool in = false;
    if (c < n) {
      const u64 g = sel_group<PER>(a, c);
      if (below[g] != kSelAll) {
        const unsigned r = sel_rank<K, TOP>(a, c);
        in = high >= 32 || (r >> high) == (thr[g] >> high);
        bin = (g << bits) | ((r >> shift) & ((1u << bits) - 1u));
      }
    }
    const unsigned peers = __match_any_sync(0xffffffffu, in ? bin : ~0ull);
    if (in && int(threadIdx.x & 31u) == __ffs(int(peers)) - 1) atomicAdd(&hist[bin], unsigned(__popc(peers)));
  }
}

// Warp-wide over one group's digit counts (lane l holds bin 32 c + l in v[c], bins <= 256): the
// first digit whose running count from `run` reaches N (`limit`) and the count below it (also
// gm::sel_small's radix select). Returns whether one does, the same in every lane; `run` comes
// back advanced past every bin.
constexpr unsigned kSelChunks = 8;  // 256 bins at most (8-bit digits)
GM_DEV bool sel_find_digit(const unsigned (&v)[kSelChunks], unsigned bins, u64 limit, u64& run, unsigned& digit,
                           unsigned& under) {
  bool found = false;  // the same in every lane
#pragma unroll
  for (unsigned c = 0; c < kSelChunks; ++c) {
    if (c * 32u >= bins) break;                      // the same in every lane
    const unsigned incl = warp_inclusive_sum(v[c]);  // over the chunk's lanes
    // The first lane whose running count reaches N holds the digit.
    const unsigned hit = __ballot_sync(0xffffffffu, run + incl >= limit);
    if (!found && hit != 0u) {
      const int l = __ffs(int(hit)) - 1;
      under = unsigned(run + __shfl_sync(0xffffffffu, incl - v[c], l));
      digit = c * 32u + unsigned(l);
      found = true;
    }
    run += __shfl_sync(0xffffffffu, incl, 31);
  }
  return found;
}

// A warp per group: the digit of T_g is the first whose running count (from below[g]) reaches
// N; the first round also finds the groups with at most N candidates, which keep them all.
// Lane l reads bins 32 c + l of every chunk c of 32 bins, all loads issued before any is used,
// and zeroes them for the next round. (Lanes reading 8 consecutive bins each are uncoalesced;
// chunks read one after another are coalesced but latency-bound.)
GM_DEV void sel_digit(const SelectArgs& a) {
  unsigned* thr = reinterpret_cast<unsigned*>(a.thr);
  unsigned* below = reinterpret_cast<unsigned*>(a.below);
  unsigned* hist = reinterpret_cast<unsigned*>(a.hist);
  const u64 limit = a.limit;
  const unsigned shift = unsigned(a.shift), bits = unsigned(a.bits);
  const unsigned bins = 1u << bits;
  const unsigned lane = threadIdx.x & 31u;
  const u64 warps = (u64(gridDim.x) * blockDim.x) >> 5;
  for (u64 g = (u64(blockIdx.x) * blockDim.x + threadIdx.x) >> 5; g < a.groups; g += warps) {
    const unsigned b = below[g];
    if (b == kSelAll) continue;  // the whole warp: g is the same in every lane
    unsigned* h = hist + (g << bits);
    unsigned v[kSelChunks];
#pragma unroll
    for (unsigned c = 0; c < kSelChunks; ++c) v[c] = c * 32u + lane < bins ? h[c * 32u + lane] : 0u;
#pragma unroll
    for (unsigned c = 0; c < kSelChunks; ++c)
      if (c * 32u + lane < bins) h[c * 32u + lane] = 0u;
    u64 run = b;  // candidates below the chunk (below[g] and the earlier chunks)
    unsigned digit = 0u, under = 0u;
    const bool found = sel_find_digit(v, bins, limit, run, digit, under);  // (the counts always reach N)
    if (lane != 0u) continue;
    if (shift + bits == 32 && run - b <= limit) {
      below[g] = kSelAll;
      thr[g] = 0xffffffffu;
    } else if (found) {
      thr[g] |= digit << shift;
      below[g] = under;
    }
  }
}

// idx[...] = every candidate with rank <= T_g (in no particular order).
template <class K, bool TOP, int PER>
GM_DEV void sel_keep(const SelectArgs& a) {
  const u64 n = a.n;
  const unsigned* thr = reinterpret_cast<const unsigned*>(a.thr);
  unsigned* idx = reinterpret_cast<unsigned*>(a.idx);
  const ListAppend out{reinterpret_cast<u64*>(a.kept), n};
  const u64 step = u64(gridDim.x) * blockDim.x;
  for (u64 base = u64(blockIdx.x) * blockDim.x; base < n; base += step) {
    const u64 c = base + threadIdx.x;
    const bool in = c < n && sel_rank<K, TOP>(a, c) <= thr[sel_group<PER>(a, c)];
    const u64 slot = out.reserve(in);  // every lane, together
    if (in) idx[slot] = unsigned(c);
  }
}

// dst[r] = the rank of key src[r] as an int that orders like it (smaller = better; -0.0 and 0.0
// alike, every NaN last): the sort key that orders the kept rows on the device. Exact for keys
// of 32 bits or fewer only (rank32 of a 64-bit key is its top half).
template <class K, bool TOP>
GM_DEV void sel_sort_rank(const GatherArgs& a) {
  int* dst = reinterpret_cast<int*>(a.dst);
  const K* key = reinterpret_cast<const K*>(a.src);
  for (u64 r = u64(blockIdx.x) * blockDim.x + threadIdx.x; r < a.m; r += u64(gridDim.x) * blockDim.x)
    dst[r] = int(rank32(widen(key[r]), TOP) ^ 0x80000000u);
}

}  // namespace gm
