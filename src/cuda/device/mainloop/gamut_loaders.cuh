// Loading iterators: global memory -> shared memory, one per operand kind.
//
// A tile operand (X[r,k], X[k,r], X[k,c], X[c,k]) is read per k-slice in chunks of 4 elements
// along its contiguous dimension (one 16/8/4-byte access when aligned, else predicated scalar
// accesses) and lands in shared memory as (BK, P), so that the mainloop reads P-contiguous
// fragments. TileLoader goes through registers (widening, transposing X[p, k]);
// AsyncTileLoader copies with cp.async (operands stored in their compute type, not transposed);
// StagedTileLoader copies 1- and 2-byte operands raw with cp.async and widens them (and
// transposes X[p, k]) once per slice in shared memory.
// Out-of-range elements read as 0; the mainloop never lets them reach an output.
// X[k] vectors have their own small loader; X[r] / X[c] are read once into registers.
#pragma once
#include "gamut_constants.cuh"
#include "gamut_math.cuh"
#include "gamut_vec.cuh"

namespace gm {

// N contiguous elements of storage type S from global memory (aligned to min(16, N sizeof(S))).
template <class S, int N>
GM_DEV void ldg_vec(S (&dst)[N], const S* src) { vec_ld<S, N, true>(dst, src); }

// One element, widened; 0 when !ok (the pointer is not dereferenced then).
template <class S>
GM_DEV auto ldg_or_zero(const S* p, bool ok) -> decltype(widen(*p)) {
  typedef decltype(widen(*p)) T;
  return ok ? widen(*p) : T(0);
}

// cp.async (sm_80+): global -> shared without registers. With ok false nothing is read and
// the destination is zero-filled (src-size 0).
template <int BYTES>
GM_DEV void cp_async(void* sdst, const void* gsrc, bool ok) {
  const unsigned s = unsigned(__cvta_generic_to_shared(sdst));
  const int n = ok ? BYTES : 0;
  if constexpr (BYTES == 16)
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(s), "l"(gsrc), "r"(n) : "memory");
  else
    asm volatile("cp.async.ca.shared.global [%0], [%1], %2, %3;\n" ::"r"(s), "l"(gsrc), "n"(BYTES), "r"(n)
                 : "memory");
}
GM_DEV void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int N>
GM_DEV void cp_async_wait() { asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory"); }

// Where a thread's chunks of a (P, BK) tile of a matrix operand lie, P being the spatial extent
// (BM or BN), and the global pointers and validity masks of them. Shared by the tile loaders.
// KCONTIG: the operand is X[p, k] (k contiguous in memory), else X[k, p] (p contiguous).
// Per thread it keeps only a pointer and a validity mask per chunk: registers are scarce.
template <class S, int P, int BK, int THREADS, bool KCONTIG>
struct TileChunks {
  static constexpr int V = kChunk;                     // elements per chunk
  static_assert(P % V == 0 && BK % V == 0, "tile extents must be multiples of 4");
  // The transposed store of X[p, k] would hit one bank from the two k-halves of a warp:
  // padding the row by 4 elements shifts them apart (and keeps rows 16-byte aligned).
  static constexpr int PAD = KCONTIG ? 4 : 0;
  static constexpr int LDS = P + PAD;                  // shared row stride, elements
  static constexpr int BUF = BK * LDS;                 // one buffer of the (BK, LDS) tile, elements
  static constexpr int CHUNKS = P * BK / V;
  static constexpr int PER = (CHUNKS + THREADS - 1) / THREADS;
  static constexpr int KCH = BK / V;                   // chunks along k (KCONTIG)
  static constexpr int PCH = P / V;                    // chunks along p (!KCONTIG)

  // Chunk q of this thread: its p (first p of the run) and k offsets within the slice. Chunk c
  // is elements [c V, c V + V) of the slice in memory order ((P, BK) or (BK, P)).
  static GM_DEV int chunk(int q) { return int(threadIdx.x) + q * THREADS; }
  static GM_DEV bool exists(int q) { return CHUNKS % THREADS == 0 || chunk(q) < CHUNKS; }
  // Whether every value this thread's chunks put into the (BK, LDS) tile `s` lies within half
  // the range of the sum type SUM (gm::within_half_range; values past the ranges are zeros). Read
  // back from `s`: a thread's own stores, and its copies once waited for, are visible to it
  // without a barrier (gm::mainloop's vote for the integer tropical step's plain sums).
  template <class SUM, class T>
  static GM_DEV bool own_within_half(const T* s) {
    bool all = true;
#pragma unroll
    for (int q = 0; q < PER; ++q) {
      if (!exists(q)) continue;
      const int p = p_of(q), kk = k_of(q);
#pragma unroll
      for (int e = 0; e < V; ++e) all &= within_half_range<SUM>(s[KCONTIG ? (kk + e) * LDS + p : kk * LDS + p + e]);
    }
    return all;
  }
  static GM_DEV int p_of(int q) { return KCONTIG ? chunk(q) / KCH : (chunk(q) % PCH) * V; }
  static GM_DEV int k_of(int q) { return KCONTIG ? (chunk(q) % KCH) * V : chunk(q) / PCH; }

  const S* src[PER];     // chunk q at k = 0
  unsigned pmask[PER];   // bit e: element e of the chunk has p < p_end; bit V: all do, and aligned
  int ld;                // elements between rows in memory (a row is < 2^31 elements)

  // base: element (0, 0) of this batch instance; p0: this tile's first p; p_end: end of the
  // p range; vec: ld, the range starts and the batch stride are multiples of V.
  GM_DEV void init(const S* base, int ld_, int p0, int p_end, bool vec) {
    ld = ld_;
#pragma unroll
    for (int q = 0; q < PER; ++q) {
      const int gp = p0 + p_of(q);
      src[q] = KCONTIG ? base + i64(gp) * ld + k_of(q) : base + i64(k_of(q)) * ld + gp;
      unsigned m = 0;
#pragma unroll
      for (int e = 0; e < V; ++e)
        if ((KCONTIG ? gp : gp + e) < p_end) m |= 1u << e;
      if (m == (1u << V) - 1 && vec) m |= 1u << V;
      pmask[q] = m;
    }
  }
  // Chunk q of the slice at k0: its first element in memory, whether it can be read whole (one
  // aligned access), and whether element e exists.
  GM_DEV const S* at(int q, int k0) const { return KCONTIG ? src[q] + k0 : src[q] + i64(k0) * ld; }
  GM_DEV bool whole(int q, int k0, int k_end) const {
    const int gk = k0 + k_of(q);
    return (pmask[q] >> V) != 0 && (KCONTIG ? gk + V <= k_end : gk < k_end);
  }
  GM_DEV bool valid(int q, int e, int k0, int k_end) const {
    const int gk = k0 + k_of(q);
    return ((pmask[q] >> e) & 1u) != 0 && (KCONTIG ? gk + e : gk) < k_end;
  }
};

// One value as the mainloop reads it: widened to T; with DUP16 (packed 16-bit steps,
// codegen/packed16.cpp) T is a 32-bit word holding the value's low 16 bits in both halves,
// made once here rather than once per use in the mainloop.
template <class T, bool DUP16, class S>
GM_DEV T widened(S v) {
  if constexpr (DUP16) return T(__byte_perm(unsigned(int(widen(v))), 0u, 0x1010));
  else return widen(v);
}

// The V values of chunk q of a slice into the (BK, LDS) tile `s`: a vector store along p, or
// V scalar stores down the k column for X[p, k] (the transpose).
template <class C, class T>
GM_DEV void put_chunk(T* s, int q, const T (&w)[C::V]) {
  const int p = C::p_of(q), kk = C::k_of(q);
  if constexpr (C::PAD != 0) {
#pragma unroll
    for (int e = 0; e < C::V; ++e) s[(kk + e) * C::LDS + p] = w[e];
  } else {
    vec_st<T, C::V>(s + kk * C::LDS + p, w);
  }
}

// The tile through registers: load() reads the next slice into registers, store() writes it
// widened (and transposed for X[p, k]) into one shared buffer (BK, LDS) of T. For operands that
// neither cp.async path takes: X[p, k] in 4- and 8-byte types (four 4-byte copies per chunk,
// transposed by cp.async, measured 15% slower on the f32 product) and bool.
// S: storage type, T: compute type (DUP16: see widened()).
template <class S, class T, int P, int BK, int THREADS, bool KCONTIG, bool DUP16 = false>
struct TileLoader : TileChunks<S, P, BK, THREADS, KCONTIG> {
  typedef TileChunks<S, P, BK, THREADS, KCONTIG> C;
  using C::PER;
  using C::V;
  S r[PER][V];           // staged chunk(s) of the next k-slice

  GM_DEV void load(T*, int k0, int k_end) {
#pragma unroll
    for (int q = 0; q < PER; ++q) {
      if (!C::exists(q)) continue;
      const S* p = this->at(q, k0);
      if (this->whole(q, k0, k_end)) {
        ldg_vec<S, V>(r[q], p);
      } else {
#pragma unroll
        for (int e = 0; e < V; ++e) r[q][e] = this->valid(q, e, k0, k_end) ? p[e] : S{};
      }
    }
  }

  // Write the staged slice into one shared buffer (BK, LDS), widened.
  GM_DEV void store(T* s) const {
#pragma unroll
    for (int q = 0; q < PER; ++q) {
      if (!C::exists(q)) continue;
      T w[V];
#pragma unroll
      for (int e = 0; e < V; ++e) w[e] = widened<T, DUP16>(r[q][e]);
      put_chunk<C>(s, q, w);
    }
  }
};

// The same tile, copied straight into shared memory with cp.async: for operands whose
// storage type is their compute type (f32, i32, i64, f64), so no widening is needed and no
// register holds the next slice. load() issues the copies into buffer `s`; store() is empty.
template <class S, int P, int BK, int THREADS, bool KCONTIG>
struct AsyncTileLoader : TileChunks<S, P, BK, THREADS, KCONTIG> {
  typedef TileChunks<S, P, BK, THREADS, KCONTIG> C;
  using C::LDS;
  using C::PER;
  using C::V;
  // 2-byte elements (packed 16-bit steps) only as p-contiguous chunks of 8 bytes: cp.async has
  // no 2-byte copy, so a partial chunk at the edge is read with plain loads instead.
  static_assert(sizeof(S) == 4 || sizeof(S) == 8 || (sizeof(S) == 2 && !KCONTIG), "cp.async element size");
  static constexpr int CHUNK_BYTES = V * int(sizeof(S));

  GM_DEV void load(S* s, int k0, int k_end) {
#pragma unroll
    for (int q = 0; q < PER; ++q) {
      if (!C::exists(q)) continue;
      const int gk = k0 + C::k_of(q), p = C::p_of(q), kk = C::k_of(q);
      const S* g = this->at(q, k0);
      const unsigned pm = this->pmask[q];
      if constexpr (KCONTIG) {
        // Transposed into (BK, LDS): one element per copy.
#pragma unroll
        for (int e = 0; e < V; ++e)
          cp_async<int(sizeof(S))>(s + (kk + e) * LDS + p, g + e, ((pm >> e) & 1u) != 0 && gk + e < k_end);
      } else if ((pm >> V) != 0) {
        // Copies of a whole aligned chunk (zero-filled past the end of k): 16 bytes at a time,
        // or one 8-byte copy for a chunk of four 2-byte elements.
        if constexpr (CHUNK_BYTES == 8) {
          cp_async<8>(s + kk * LDS + p, g, gk < k_end);
        } else {
#pragma unroll
          for (int h = 0; h < CHUNK_BYTES / 16; ++h)
            cp_async<16>(s + kk * LDS + p + h * (16 / int(sizeof(S))), g + h * (16 / int(sizeof(S))), gk < k_end);
        }
      } else if constexpr (sizeof(S) == 2) {
#pragma unroll
        for (int e = 0; e < V; ++e) s[kk * LDS + p + e] = ((pm >> e) & 1u) != 0 && gk < k_end ? g[e] : S(0);
      } else {
#pragma unroll
        for (int e = 0; e < V; ++e)
          cp_async<int(sizeof(S))>(s + kk * LDS + p + e, g + e, ((pm >> e) & 1u) != 0 && gk < k_end);
      }
    }
  }
  GM_DEV void store(S*) const {}
};

// The tile of an operand stored narrower than the type it is read in (f16, bf16, i8, u8, i16):
// copied raw by cp.async into a staging ring of kStages slices (S, chunk order: memory order of
// the slice, so each chunk is one 4- or 8-byte copy in either orientation), then widened once
// per slice into the (BK, LDS) tile of T the mainloop reads, transposed there for X[p, k].
// Why: through registers (TileLoader) the next slice's loads must land within one slice's
// compute, hold PER x V registers, and a larger register estimate pushed such plans to smaller
// tiles (bf16 max-plus ran at 128x64 where f32 ran at 128x256); here the copies have as many
// slices in flight as the f32 operands' (gm::mainloop issues them one slice earlier). Widening
// once per slice, each thread its own chunks, costs V conversions per chunk; widening in the
// step's fragment loads instead would convert every value TM or TN times per k. The transpose
// goes in the widening pass because a cp.async copy cannot scatter a chunk down a column.
// Chunks that cannot be copied whole (the edges of the ranges, unaligned rows, starts or
// batch strides: cp.async needs 4- or 8-byte aligned sources) are read element by element with
// plain loads into the staging slice (zeros outside the ranges).
// stage(stg, k0, k_end) issues slice k0 into staging buffer `stg`; widen(stg, s) converts a
// landed staging buffer into tile buffer `s` (after a barrier: other threads' copies).
template <class S, class T, int P, int BK, int THREADS, bool KCONTIG, bool DUP16 = false>
struct StagedTileLoader : TileChunks<S, P, BK, THREADS, KCONTIG> {
  typedef TileChunks<S, P, BK, THREADS, KCONTIG> C;
  using C::PER;
  using C::V;
  static constexpr int CHUNK_BYTES = V * int(sizeof(S));
  static_assert(CHUNK_BYTES == 4 || CHUNK_BYTES == 8, "staged tiles hold 1- or 2-byte elements");
  static constexpr int SBUF = P * BK;  // one staging buffer, elements of S

  GM_DEV void stage(S* stg, int k0, int k_end) {
#pragma unroll
    for (int q = 0; q < PER; ++q) {
      if (!C::exists(q)) continue;
      S* d = stg + C::chunk(q) * V;
      const S* g = this->at(q, k0);
      // For X[k, p] past the end of k the whole chunk is zero-filled (src-size 0).
      if ((this->pmask[q] >> V) != 0 && (!KCONTIG || k0 + C::k_of(q) + V <= k_end)) {
        cp_async<CHUNK_BYTES>(d, g, KCONTIG || k0 + C::k_of(q) < k_end);
      } else {
#pragma unroll
        for (int e = 0; e < V; ++e) d[e] = this->valid(q, e, k0, k_end) ? g[e] : S{};
      }
    }
  }

  GM_DEV void widen(const S* stg, T* s) const {
#pragma unroll
    for (int q = 0; q < PER; ++q) {
      if (!C::exists(q)) continue;
      S v[V];
      vec_ld<S, V, false>(v, stg + C::chunk(q) * V);
      T w[V];
#pragma unroll
      for (int e = 0; e < V; ++e) w[e] = widened<T, DUP16>(v[e]);
      put_chunk<C>(s, q, w);
    }
  }
};

// X[k]: one value per k of the slice, kept in shared memory (BK,) and read as a broadcast.
template <class S, class T, int BK>
struct KVecLoader {
  static constexpr int BUF = BK;
  const S* base;
  S r;
  GM_DEV void init(const S* base_) { base = base_; }
  GM_DEV void load(T*, int k0, int k_end) {
    const int gk = k0 + int(threadIdx.x);
    if (threadIdx.x < BK) r = gk < k_end ? base[gk] : S{};
  }
  GM_DEV void store(T* s) const {
    if (threadIdx.x < BK) s[threadIdx.x] = widen(r);
  }
};

}  // namespace gm
