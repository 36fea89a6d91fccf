// Aggregate outputs (C[g[i], h[j]] op= v, C[g[i]], C[i], a scalar): a per-thread run combiner
// merges equal consecutive keys, then a shared-memory hash table merges the block's values per
// key before one global atomic per key; a crowded table falls back to global atomics, so nothing
// is ever lost. They take one accumulator-derived value per (i, j) with its output position and
// know nothing of the mainloop.
#pragma once
#include "gamut_atomics.cuh"

namespace gm {

// Aggregate sink without pre-reduction: a global atomic per value (outputs whose every (i, j)
// has its own element, e.g. C[i, j] += v).
template <class T, int OP>
struct GlobalSink {
  T* out;
  GM_DEV void commit(u64 key, T v) { atomic_apply<OP>(out + key, v); }
};

// Aggregate sink with a block-level pre-reduction: an open-addressing table in shared memory,
// keyed by the output element. An output of at most SLOTS elements (Q3's G x G counts) is
// mapped directly instead: one shared atomic per commit and no key CAS or probing, element e
// at slot swizzle(e). The swizzle XORs each 128-byte row's index into the element's bank: a
// warp's commits of one accumulator register cover 8 rows x 4 columns of the tile, and with a
// power-of-two row stride (Q3's 16 x 16 counts) the plain layout puts them in 8 banks. A value
// equal to the operator's
// identity changes nothing and is not committed (Q3's failed comparisons).
// Protocol: init(); gm::tile_sync; commits; gm::tile_sync; flush().
template <class T, int OP, int SLOTS, int THREADS>
struct TableSink {
  static_assert((SLOTS & (SLOTS - 1)) == 0, "SLOTS must be a power of two");
  static constexpr u64 kEmpty = ~0ull;
  static constexpr int kProbes = 8;
  static constexpr int kBytes = SLOTS * int(sizeof(u64) + sizeof(T));   // shared memory used
  u64* keys;   // (SLOTS,)
  T* vals;     // (SLOTS,)
  T* out;      // the output array, indexed by key
  bool direct; // every key < SLOTS: slot = key

  // out_elems: elements of the output array (every key is below it).
  GM_DEV void init(unsigned char* smem, T* out_, u64 out_elems) {
    keys = reinterpret_cast<u64*>(smem);
    vals = reinterpret_cast<T*>(smem + SLOTS * sizeof(u64));
    out = out_;
    direct = out_elems <= u64(SLOTS);
    for (int s = int(threadIdx.x); s < SLOTS; s += THREADS) {
      keys[s] = kEmpty;
      vals[s] = identity<OP, T>();
    }
  }
  // The direct table's slot of output element e (an involution: it gives e back from its slot).
  static constexpr unsigned kRowElems = 128u / unsigned(sizeof(T));  // elements per 128-byte row
  static GM_DEV unsigned swizzle(unsigned e) { return e ^ ((e / kRowElems) % kRowElems); }
  // Direct tables only: output element e (< SLOTS).
  GM_DEV void add_direct(unsigned e, T v) {
    atomic_apply<OP>(&vals[swizzle(e)], v);
  }
  GM_DEV void commit(u64 key, T v) {
    if (direct) {
      add_direct(unsigned(key), v);
      return;
    }
    unsigned h = unsigned((key * 0x9E3779B97F4A7C15ull) >> 40) & (SLOTS - 1);
#pragma unroll 1
    for (int p = 0; p < kProbes; ++p) {
      const u64 prev = atomicCAS(&keys[h], kEmpty, key);
      if (prev == kEmpty || prev == key) {
        atomic_apply<OP>(&vals[h], v);
        return;
      }
      h = (h + 1) & (SLOTS - 1);
    }
    atomic_apply<OP>(out + key, v);
  }
  // A direct slot still at the identity needs no commit: combining the identity changes nothing
  // (so direct commits mark no key).
  GM_DEV void flush() {
    for (int s = int(threadIdx.x); s < SLOTS; s += THREADS) {
      if (direct) {
        if (vals[s] != identity<OP, T>()) atomic_apply<OP>(out + swizzle(unsigned(s)), vals[s]);
      } else if (keys[s] != kEmpty) {
        atomic_apply<OP>(out + keys[s], vals[s]);
      }
    }
  }
};

// The values of one computed output index (`Hist[b] += 1`) that fell outside its extent: the
// host's KeyMisses (semantics/computed_index.h), which makes the run a data error. Such a pair
// stores nothing.
struct KeyMisses {
  u64 count;
  i64 lo, hi;
};
GM_DEV bool key_in_range(i64 key, i64 extent, KeyMisses* miss) {
  if (key >= 0 && key < extent) return true;
  atomicAdd(&miss->count, 1ull);
  atomicMin(&miss->lo, key);
  atomicMax(&miss->hi, key);
  return false;
}

// Per-thread run combiner: consecutive values with the same key are merged in registers;
// a new key commits the pending run to the sink. finish() commits the last run.
template <class T, int OP>
struct AggRun {
  bool has;
  u64 key;
  T val;
  GM_DEV void reset() { has = false; key = 0; val = T(0); }
  template <class Sink>
  GM_DEV void step(bool flag, u64 k, T v, Sink& sink) {
    if (!flag) return;
    if (has && k == key) {
      val = combine<OP>(val, v);
      return;
    }
    if (has) sink.commit(key, val);
    has = true;
    key = k;
    val = v;
  }
  template <class Sink>
  GM_DEV void finish(Sink& sink) {
    if (has) sink.commit(key, val);
    has = false;
  }
};

}  // namespace gm
