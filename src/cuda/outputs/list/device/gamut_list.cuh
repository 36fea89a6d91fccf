// List outputs (`emit`): rows are appended to column buffers through one global counter.
// The counter counts every row that reached the emit, also past the capacity, so the host
// sees how many there were, grows the buffers and runs again: no row is ever dropped.
// Ordering, limits and de-duplication happen after the kernel, on the device (src/cuda/outputs/list/finish/),
// as finalize_list on the host defines them.
//
// The kernel's epilogue appends in two passes over the thread's pairs (BlockAppend): pass 1
// marks the pairs whose row reached the emit (one bit each), a block-wide prefix sum gives
// every thread its first row with ONE global atomic per block tile, pass 2 renders the
// emit's columns again for the marked pairs and stores them at consecutive rows.
//
// top/bottom lists first pre-select per block tile (TileSelect): a row is appended only when
// its rank is within the N best ranks of its group inside the tile and not above the group's
// global threshold, so a kNN over M x N pairs appends about tiles x N rows instead of M x N,
// and tiles that run later skip most of the work. Choices (why):
//  - Global thresholds, one u32 rank per group in device memory (DeviceLists resets them to
//    0xffffffff before every launch). A tile counts only the candidates at or below them; a
//    group with at most N of those needs no radix rounds, and a crowded one lowers the global
//    value with atomicMin after the rounds. That is where the time goes on Q7 / kNN.
//  - The rounds start below the highest bit in which a crowded group's candidates differ
//    (their smallest and largest rank, taken in the first count): the bits above are those
//    of every candidate, hence of T. Integer-valued or clustered keys need few rounds.
//  - One bit per round, counted with warp reductions / shared atomics: 2-4-bit digits would
//    halve or quarter the rounds but need a histogram per group (16x the shared counters,
//    and per-pair atomics where one bit needs one per warp or row); not done.
//  - No rank is held in registers per pair: the selection calls rank(m, n), which the
//    generated code either reads from shared memory (each pair's rank computed once into the
//    space the mainloop frees, where BM x BN words fit: tensor-core tiles) or computes again
//    from the accumulators, so the largest tiles (128 accumulators per thread) do not spill.
//    gm::opaque keeps the compiler from hoisting the recomputation out of the rounds. Ranks
//    read from shared memory (StashedRanks) let a global list's passes visit only the marked
//    pairs, 8 at a time, in loops that are not unrolled (a shorter compile).
#pragma once
#include "gamut_accumulator_map.cuh"
#include "gamut_constants.cuh"
#include "gamut_math.cuh"

namespace gm {

struct ListAppend {
  u64* counter;   // kListCounterWords: [0] rows reached; [1] N of top/bottom (set by the host)
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

// The lowest pair e set in bits, cleared; false when none is left. Static indices only (the
// bits stay in registers).
template <int W>
GM_DEV bool next_bit(unsigned (&bits)[W], int& e) {
  bool found = false;
#pragma unroll
  for (int w = 0; w < W; ++w)
    if (!found && bits[w] != 0u) {
      e = w * 32 + __ffs(int(bits[w])) - 1;
      bits[w] &= bits[w] - 1u;
      found = true;
    }
  return found;
}

// The value f(Pair<E>{}) of the thread's pair E == e (0 <= e < N), chosen by a tree of selects on
// e's bits: N - 1 selects whose predicates (one per bit) every level shares, and no run-time
// register index (which would move the accumulators to local memory). Pass 2's loop over marked
// pairs picks each pair's accumulators so.
template <int E>
struct Pair {
  static constexpr int value = E;
};
constexpr int pair_tree_bits(int n) { return n <= 1 ? 0 : 1 + pair_tree_bits((n + 1) / 2); }
template <int N, int Lo, int Bit, class F>
GM_DEV auto pick_pair_bits(unsigned e, const F& f) {
  if constexpr (Bit < 0) {
    return f(Pair<Lo>{});
  } else if constexpr (Lo + (1 << Bit) >= N) {
    return pick_pair_bits<N, Lo, Bit - 1>(e, f);
  } else {
    const auto low = pick_pair_bits<N, Lo, Bit - 1>(e, f);
    const auto high = pick_pair_bits<N, Lo + (1 << Bit), Bit - 1>(e, f);
    return ((e >> Bit) & 1u) != 0u ? high : low;
  }
}
template <int N, class F>
GM_DEV auto pick_pair(int e, const F& f) {
  static_assert(N > 0, "a thread holds at least one pair");
  return pick_pair_bits<N, 0, pair_tree_bits(N) - 1>(unsigned(e), f);
}

// ---- append with one global atomic per block tile -------------------------------------------
// bits: one per pair of the thread's fragment (m * TN + n), set where a row reached the emit.
template <class Shape>
struct BlockAppend {
  static constexpr int W = (Shape::TM * Shape::TN + 31) / 32;
  static constexpr int WARPS = Shape::THREADS / 32;

  // Every thread of the block calls it. Adds the block's rows to *counter once; `first` gets
  // this thread's first row (its rows are consecutive, in the order of its bits). Returns
  // false, in every thread, when the block has no row at all (pass 2 can be skipped).
  GM_DEV static bool reserve(unsigned (&bits)[W], u64* counter, u64& first) {
    opaque_bits(bits);
    unsigned mine = 0;
#pragma unroll
    for (int w = 0; w < W; ++w) mine += unsigned(__popc(bits[w]));
    return reserve_rows(mine, counter, first);
  }

  // The same for `mine` rows of this thread, however counted (TileDistinct: its table slots
  // and overflow rows).
  GM_DEV static bool reserve_rows(unsigned mine, u64* counter, u64& first) {
    // (One set per tile group: a ping-pong kernel's groups append apart, GM_TILE_GROUPS.)
    __shared__ unsigned warp_first_of[GM_TILE_GROUPS][WARPS];
    __shared__ unsigned block_rows_of[GM_TILE_GROUPS];
    __shared__ u64 block_first_of[GM_TILE_GROUPS];
    const int group = tile_group<Shape::THREADS>();
    unsigned* const warp_first = warp_first_of[group];
    unsigned& block_rows = block_rows_of[group];
    u64& block_first = block_first_of[group];
    const int lane = int(threadIdx.x & 31u), warp = tile_thread<Shape::THREADS>() >> 5;
    const unsigned incl = warp_inclusive_sum(mine);
    tile_sync<Shape::THREADS>();   // an earlier call's readers are done with the shared words
    if (lane == 31) warp_first[warp] = incl;
    tile_sync<Shape::THREADS>();
    if (warp == 0) {
      const unsigned rows = lane < WARPS ? warp_first[lane] : 0u;
      const unsigned sum = warp_inclusive_sum(rows);
      if (lane < WARPS) warp_first[lane] = sum - rows;
      if (lane == 31) {
        block_rows = sum;
        block_first = sum != 0u ? atomicAdd(counter, u64(sum)) : 0ull;
      }
    }
    tile_sync<Shape::THREADS>();
    first = block_first + warp_first[warp] + (incl - mine);
    return block_rows != 0u;
  }
};

// Plain and distinct lists hold one NaN (docs/semantics.md): every NaN a column computes or
// reads is stored as the quiet NaN, as the CPU engine emits it, so that rows order and
// de-duplicate alike on every engine (CUDA's arithmetic gives 0x7fffffff, x86's 0xffc00000, an
// input NaN its own bits).
GM_DEV float one_nan(float v) { return v != v ? __int_as_float(0x7fc00000) : v; }
GM_DEV double one_nan(double v) { return v != v ? __longlong_as_double(0x7ff8000000000000LL) : v; }

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

// rank32(v, top) <= t, the test of TileSelect::gate. For f32 the threshold becomes the key it
// ranks (once per group, hoisted) and each pair costs one comparison instead of the rank's six
// instructions. A threshold that no number's rank reaches in that way (all ranks: 0xffffffff,
// or a bit mask of the rounds that decodes to NaN) passes everything: the gate only has to
// keep every pair select keeps. A flushed subnormal compares as 0 on both sides (FTZ keeps
// the order), which can only pass more.
template <class T>
GM_DEV bool rank_within(T v, unsigned t, bool top) {
  return rank32(v, top) <= t;
}
GM_DEV bool rank_within(float v, unsigned t, bool top) {
  // Without branches, so that the bound is computed once for all pairs of a threshold.
  const unsigned ord = top ? ~t : t;
  const float bound = __uint_as_float((ord & 0x80000000u) ? (ord & 0x7fffffffu) : ~ord);
  const bool all = (t == 0xffffffffu) | (bound != bound);
  return all | (top ? v >= bound : v <= bound);   // NaN v: false, its rank 0xffffffff is above any other t
}

// Ranks a tile keeps in shared memory (store_ranks in the generated code; pair e of thread t
// at e x THREADS + t), readable at any pair, static or not. With them a global list's
// selection visits only the marked pairs, 8 at a time in a loop that is not unrolled
// (TileSelect::for_each_marked): the same work in less code for NVRTC (ranks computed again
// from the accumulators need every pair's static index, hence the unrolled passes).
template <int THREADS, int COLS>
struct StashedRanks {
  static constexpr bool kIndexed = true;
  const unsigned* words;
  GM_DEV unsigned operator()(int m, int n) const { return words[(m * COLS + n) * THREADS + int(threadIdx.x)]; }
};
template <class R, class = void>
struct indexed_ranks {
  static constexpr bool value = false;
};
template <class R>
struct indexed_ranks<R, decltype(void(R::kIndexed))> {
  static constexpr bool value = R::kIndexed;
};

// ---- tile pre-selection ------------------------------------------------------------------
// Groups of a tile (PER, a gm::ListGroup): the whole tile, each row (per i), each column (per j).
// Every thread of the block calls select() with the same limit. The list's global thresholds
// are global[at(g)] for tile group g (at(g) < 0: the group holds no pair of the range).
//
// Why no row of a group's final N is lost: T_g always has at least N candidates of group g
// (in one tile) with rank <= T_g, and those are appended. A candidate with rank > T_g is
// strictly behind all of them in the key order (ranks are monotone), so it cannot be among
// the group's N best; a candidate with rank == T_g is kept, so ties of the N-th key still
// reach the device selection and finalize_list, which break them by (b, i, j). The global
// value is the minimum of such T_g over the tiles done so far, so the same holds for it, and
// a stale (larger) read of it is only less selective.
template <class Shape, int PER>
struct TileSelect {
  static constexpr int G = PER == kGroupRow ? Shape::BM : PER == kGroupCol ? Shape::BN : 1;
  static constexpr int W = (Shape::TM * Shape::TN + 31) / 32;

  struct Smem {
    unsigned thr[G];           // the group's threshold: rows with rank <= thr are kept
    unsigned cnt[G];           // candidates counted in the current round
    unsigned lo[G], hi[G];     // smallest / largest rank counted in the first round
    unsigned char crowded[G];  // more than N candidates at or below the global threshold
    unsigned touched[G];       // the tile put a row of the group into its reservoir
    unsigned span;             // OR of (lo ^ hi) over the crowded groups
  };

  GM_DEV static int group(int row, int col) { return PER == kGroupRow ? row : PER == kGroupCol ? col : 0; }
  GM_DEV static bool bit(const unsigned (&b)[W], int e) { return ((b[e / 32] >> (e % 32)) & 1u) != 0u; }
  // (Static indices into b for a run-time e: the words stay in registers.)
  GM_DEV static void clear_bit(unsigned (&b)[W], int e) {
#pragma unroll
    for (int w = 0; w < W; ++w)
      if (w == e / 32) b[w] &= ~(1u << (e % 32));
  }

  // cnt[g] += candidates of g with rank <= thr[g] | low; SPAN: also their smallest / largest rank.
  template <bool SPAN, class Map, class Rank>
  GM_DEV static void count(const Map& tmap, const Rank& rank, const unsigned (&marks)[W], unsigned low, Smem& s) {
    unsigned pres[W];   // read afresh in every round, not hoisted out of the rounds loop
#pragma unroll
    for (int w = 0; w < W; ++w) pres[w] = marks[w];
    opaque_bits(pres);
    if constexpr (indexed_ranks<Rank>::value && PER == kGroupAll) {
      count_marked<SPAN>(rank, pres, low, s);
      return;
    }
    unsigned total = 0, tlo = 0xffffffffu, thi = 0u;
#pragma unroll
    for (int m = 0; m < Shape::TM; ++m) {
      unsigned row = 0, rlo = 0xffffffffu, rhi = 0u;
#pragma unroll
      for (int n = 0; n < Shape::TN; ++n) {
        const int g = group(tmap.row(m), tmap.col(n));
        const unsigned r = rank(m, n);
        const bool in = bit(pres, m * Shape::TN + n) && r <= (s.thr[g] | low);
        if (PER == kGroupCol) {
          if (in) {
            atomicAdd(&s.cnt[g], 1u);
            if (SPAN) { atomicMin(&s.lo[g], r); atomicMax(&s.hi[g], r); }
          }
        } else {
          row += in ? 1u : 0u;
          if (SPAN && in) { rlo = r < rlo ? r : rlo; rhi = r > rhi ? r : rhi; }
        }
      }
      if (PER == kGroupRow && row != 0u) {
        atomicAdd(&s.cnt[tmap.row(m)], row);
        if (SPAN) { atomicMin(&s.lo[tmap.row(m)], rlo); atomicMax(&s.hi[tmap.row(m)], rhi); }
      }
      total += row;
      tlo = rlo < tlo ? rlo : tlo;
      thi = rhi > thi ? rhi : thi;
    }
    if (PER == kGroupAll) {
      total = __reduce_add_sync(0xffffffffu, total);
      if (SPAN) { tlo = __reduce_min_sync(0xffffffffu, tlo); thi = __reduce_max_sync(0xffffffffu, thi); }
      if ((threadIdx.x & 31u) == 0u && total != 0u) {
        atomicAdd(&s.cnt[0], total);
        if (SPAN) { atomicMin(&s.lo[0], tlo); atomicMax(&s.hi[0], thi); }
      }
    }
  }

  // f(e) for each marked pair e of the thread, in ascending order: 8 pairs at a time in
  // unrolled code, so that their shared-memory reads are in flight together (a loop of one
  // pair per turn waited on each: Q7's kernel +5-8 %), and chunks without a mark skipped.
  template <class F>
  GM_DEV static void for_each_marked(const unsigned (&pres)[W], const F& f) {
#pragma unroll
    for (int w = 0; w < W; ++w) {
#pragma unroll 1
      for (int c = 0; c < 32; c += 8) {
        const unsigned chunk = (pres[w] >> c) & 0xffu;
        if (chunk == 0u) continue;
#pragma unroll
        for (int b = 0; b < 8; ++b)
          if ((chunk >> b) & 1u) f(w * 32 + c + b);
      }
    }
  }

  // count over the marked pairs only (indexed ranks, one group: a global list). Per-i / per-j
  // groups keep the unrolled passes: their rounds read every pair's group threshold, which the
  // unrolled code loads once per row (marked-pair loops made kNN's tile selection slower).
  template <bool SPAN, class Rank>
  GM_DEV static void count_marked(const Rank& rank, const unsigned (&pres)[W], unsigned low, Smem& s) {
    static_assert(PER == kGroupAll, "one group");
    const unsigned t = s.thr[0] | low;
    unsigned total = 0, tlo = 0xffffffffu, thi = 0u;
    for_each_marked(pres, [&](int e) {
      const int m = e / Shape::TN, n = e - m * Shape::TN;
      const unsigned r = rank(m, n);
      if (r > t) return;
      ++total;
      if (SPAN) { tlo = r < tlo ? r : tlo; thi = r > thi ? r : thi; }
    });
    total = __reduce_add_sync(0xffffffffu, total);
    if (SPAN) { tlo = __reduce_min_sync(0xffffffffu, tlo); thi = __reduce_max_sync(0xffffffffu, thi); }
    if ((threadIdx.x & 31u) == 0u && total != 0u) {
      atomicAdd(&s.cnt[0], total);
      if (SPAN) { atomicMin(&s.lo[0], tlo); atomicMax(&s.hi[0], thi); }
    }
  }

  // The selection's first step, before select: the group thresholds from the global ones into
  // s, and the marks of pairs that cannot be kept cleared (within(m, n, t) false: the pair's
  // rank is above its group's threshold t; see rank_within). Returns, the same in every
  // thread, whether the block has a mark left. When it has none, the tile adds nothing to the
  // list: select, the rows and the reservoirs are skipped. Once the global thresholds have
  // fallen that is most tiles of a top N over the whole product (Q7).
  template <class Map, class Within, class At>
  GM_DEV static bool gate(const Map& tmap, const Within& within, unsigned (&pres)[W], i64 limit, unsigned* global,
                          const At& at, Smem& s) {
    static_assert(map_fits<Map, Shape>(), "the accumulator map's grid is Shape's thread tile");
    const int tid = int(threadIdx.x);
    opaque_bits(pres);
    if (limit <= 0) {   // the same in every thread: N = 0 keeps nothing
#pragma unroll
      for (int w = 0; w < W; ++w) pres[w] = 0u;
      return false;
    }
    for (int g = tid; g < G; g += Shape::THREADS) {
      // An L2 read (other blocks lower it with atomicMin); any value it ever had is valid.
      const i64 x = at(g);
      s.thr[g] = x >= 0 ? __ldcg(global + x) : 0xffffffffu;
      s.cnt[g] = 0u;
      s.lo[g] = 0xffffffffu;
      s.hi[g] = 0u;
      s.touched[g] = 0u;
    }
    if (tid == 0) s.span = 0u;
    tile_sync<Shape::THREADS>();
    const unsigned t_all = s.thr[0];   // (PER == kGroupAll: one threshold for the tile)
    unsigned left = 0u;
#pragma unroll
    for (int m = 0; m < Shape::TM; ++m) {
      const unsigned t_row = PER == kGroupRow ? s.thr[tmap.row(m)] : t_all;
#pragma unroll
      for (int n = 0; n < Shape::TN; ++n) {
        const int e = m * Shape::TN + n;
        const unsigned t = PER == kGroupCol ? s.thr[tmap.col(n)] : t_row;
        if (!within(m, n, t)) pres[e / 32] &= ~(1u << (e % 32));
      }
    }
#pragma unroll
    for (int w = 0; w < W; ++w) left |= pres[w];
    return tile_sync_count<Shape::THREADS>(left != 0u) != 0;
  }

  // Clears the bits of pres whose row is not kept: rank above its group's threshold, which is
  // afterwards T_g (the smallest rank with at least `limit` candidates of g at or below it in
  // the tile) for crowded groups, else the global threshold gate read. rank(m, n) is the
  // gm::rank32 of the thread's pair (m, n): held in shared memory, or computed again from the
  // accumulators (then nothing per pair is held). Every thread calls it, after gate returned true.
  template <class Map, class Rank, class At>
  GM_DEV static void select(const Map& tmap, const Rank& rank, unsigned (&pres)[W], i64 limit, unsigned* global,
                            const At& at, Smem& s) {
    static_assert(map_fits<Map, Shape>(), "the accumulator map's grid is Shape's thread tile");
    const int tid = int(threadIdx.x);
    opaque_bits(pres);
    count<true>(tmap, rank, pres, 0u, s);
    tile_sync<Shape::THREADS>();
    // Crowded groups start from the bits their candidates share (T lies in [lo, hi]); a group
    // with exactly `limit` candidates has T = hi without rounds.
    unsigned span = 0u;
    for (int g = tid; g < G; g += Shape::THREADS) {
      const i64 c = i64(s.cnt[g]);
      const bool crowded = c > limit;
      s.crowded[g] = crowded ? 1 : 0;
      if (crowded) {
        const unsigned d = s.lo[g] ^ s.hi[g];
        span |= d;
        s.thr[g] = d == 0u ? s.lo[g] : s.lo[g] & ~((2u << (31 - __clz(d))) - 1u);
      } else if (c == limit) {
        s.thr[g] = s.hi[g];
        const i64 x = at(g);
        if (x >= 0) atomicMin(global + x, s.hi[g]);
      }
    }
    if (span != 0u) atomicOr(&s.span, span);
    tile_sync<Shape::THREADS>();
    span = s.span;
    // Radix rounds from the highest differing bit down: keep the bit 0 when that already leaves
    // at least `limit` candidates at or below. Groups not crowded do not change.
#pragma unroll 1
    for (int b = span == 0u ? -1 : 31 - __clz(span); b >= 0; --b) {
      for (int g = tid; g < G; g += Shape::THREADS) s.cnt[g] = 0u;
      tile_sync<Shape::THREADS>();
      count<false>(tmap, rank, pres, (1u << b) - 1u, s);
      tile_sync<Shape::THREADS>();
      // A group's thr and cnt belong to one thread.
      for (int g = tid; g < G; g += Shape::THREADS)
        if (s.crowded[g] && i64(s.cnt[g]) < limit) s.thr[g] |= 1u << b;
    }
    tile_sync<Shape::THREADS>();
    for (int g = tid; g < G; g += Shape::THREADS)
      if (s.crowded[g]) {
        const i64 x = at(g);
        if (x >= 0) atomicMin(global + x, s.thr[g]);
      }
    if constexpr (indexed_ranks<Rank>::value && PER == kGroupAll) {
      const unsigned t = s.thr[0];
      unsigned kept[W];
#pragma unroll
      for (int w = 0; w < W; ++w) kept[w] = pres[w];
      for_each_marked(pres, [&](int e) {
        const int m = e / Shape::TN, n = e - m * Shape::TN;
        if (rank(m, n) > t) clear_bit(kept, e);
      });
#pragma unroll
      for (int w = 0; w < W; ++w) pres[w] = kept[w];
    } else {
#pragma unroll
      for (int m = 0; m < Shape::TM; ++m)
#pragma unroll
        for (int n = 0; n < Shape::TN; ++n) {
          const int e = m * Shape::TN + n;
          if (rank(m, n) > s.thr[group(tmap.row(m), tmap.col(n))]) pres[e / 32] &= ~(1u << (e % 32));
        }
    }
  }

  // ---- reservoirs: global thresholds from the rows of all tiles, not of one ----
  // A tile lowers a group's global threshold only when it alone holds more than N candidates,
  // so on its own the threshold stays near the N-th best of one tile (a kNN row tile of 64
  // columns: the best ~15%), and every later tile is crowded again. Each group therefore also
  // has S reservoir slots in device memory (u32 ranks, 0xffffffff = empty; S = gm::reservoir_slots):
  // every row a tile appends goes into slot hash(i, j) % S with atomicMin. A slot only ever
  // holds the rank of a row that was appended, and distinct slots hold distinct rows, so the
  // N-th smallest of a group's S slots (when at least N are filled) has at least N appended
  // rows at or below it: a valid global threshold, whatever the order of the tiles, and it
  // falls towards the N-th best of all rows appended so far, not of one tile. With S = N it
  // is the largest slot, about 3x the ideal quantile (random slots); with S = 32 >= 2N, the
  // N-th of 32 slot minima, about 1.2x (kNN, N = 10: ~160 -> ~65 appended rows per row).
  GM_DEV static unsigned slot_of(int i, int j, int slots) {
    const unsigned h = (unsigned(i) * 0x9E3779B1u) ^ (unsigned(j) * 0x85EBCA77u);
    return (h ^ (h >> 15)) % unsigned(slots);
  }
  // A row the tile appends (rank r, pair (i, j) of tile group g at global group x).
  GM_DEV static void keep(unsigned* slots, i64 limit, i64 x, int g, int i, int j, unsigned r, Smem& s) {
    if (slots == nullptr || x < 0) return;
    const int S = gm::reservoir_slots(limit);
    atomicMin(slots + x * S + slot_of(i, j, S), r);
    atomicOr(&s.touched[g], 1u);   // (an atomic: racecheck-clean where several threads mark)
  }
  // After every row of the tile is kept: the touched groups' global thresholds fall to the
  // N-th smallest of their slots. Every thread of the block calls it.
  template <class At>
  GM_DEV static void refresh(unsigned* global, unsigned* slots, i64 limit, const At& at, Smem& s) {
    if (slots == nullptr || limit <= 0) return;
    const int tid = int(threadIdx.x), S = gm::reservoir_slots(limit);
    tile_sync<Shape::THREADS>();   // the tile's atomicMin on the slots are done (and seen through L2)
    if (S == 32) {
      // A warp per touched group: the 32 slots sorted across the lanes (bitonic), lane N-1
      // holds the N-th smallest.
      const int lane = tid & 31, warps = Shape::THREADS / 32;
      for (int g = tid >> 5; g < G; g += warps) {   // g is the same in the whole warp
        const i64 x = at(g);
        if (!s.touched[g] || x < 0) continue;
        unsigned v = __ldcg(slots + x * 32 + lane);
#pragma unroll
        for (int k = 2; k <= 32; k <<= 1)
#pragma unroll
          for (int j = k >> 1; j > 0; j >>= 1) {
            const unsigned o = __shfl_xor_sync(0xffffffffu, v, j);
            const bool keep_min = ((lane & j) == 0) == ((lane & k) == 0);
            v = keep_min ? (o < v ? o : v) : (o > v ? o : v);
          }
        const unsigned t = __shfl_sync(0xffffffffu, v, int(limit) - 1);
        if (lane == 0 && t != 0xffffffffu) atomicMin(global + x, t);
      }
      return;
    }
    for (int g = tid; g < G; g += Shape::THREADS) s.hi[g] = 0u;
    tile_sync<Shape::THREADS>();
    // (The host gives reservoirs only where G * S is at most the tile's pairs.)
    const int total = G * S;
    for (int e = tid; e < total; e += Shape::THREADS) {
      const int g = e / S;
      const i64 x = at(g);
      if (!s.touched[g] || x < 0) continue;
      atomicMax(&s.hi[g], __ldcg(slots + x * S + (e - g * S)));
    }
    tile_sync<Shape::THREADS>();
    for (int g = tid; g < G; g += Shape::THREADS) {
      const i64 x = at(g);
      if (s.touched[g] && x >= 0 && s.hi[g] != 0xffffffffu) atomicMin(global + x, s.hi[g]);
    }
  }
};

}  // namespace gm
