// Loading iterators: global memory -> shared memory, one per operand kind.
//
// A tile operand (X[r,k], X[k,r], X[k,c], X[c,k]) is read per k-slice in chunks of 4 elements
// along its contiguous dimension (one 16/8/4-byte access when aligned, else predicated scalar
// accesses) and lands in shared memory as (BK, P), so that the mainloop reads P-contiguous
// fragments. TileLoader goes through registers (widening small types, transposing X[p, k]);
// AsyncTileLoader copies with cp.async (operands stored in their compute type, not transposed).
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

// A (P, BK) tile of a matrix operand per k-slice, P being the spatial extent (BM or BN).
// KCONTIG: the operand is X[p, k] (k contiguous in memory), else X[k, p] (p contiguous).
// S: storage type, T: compute type. Shared memory per buffer: (BK, LDS) elements of T.
// Per thread it keeps only a pointer and a validity mask per chunk: registers are scarce.
// DUP16 (packed 16-bit steps, codegen/packed16.cpp): T is a 32-bit word holding the value's low
// 16 bits in both halves, made once here rather than once per use in the mainloop.
template <class S, class T, int P, int BK, int THREADS, bool KCONTIG, bool DUP16 = false>
struct TileLoader {
  static constexpr int V = kChunk;                     // elements per chunk
  static_assert(P % V == 0 && BK % V == 0, "tile extents must be multiples of 4");
  // The transposed store of X[p, k] would hit one bank from the two k-halves of a warp:
  // padding the row by 4 elements shifts them apart (and keeps rows 16-byte aligned).
  static constexpr int PAD = KCONTIG ? 4 : 0;
  static constexpr int LDS = P + PAD;                  // shared row stride, elements
  static constexpr int BUF = BK * LDS;                 // one buffer, elements
  static constexpr int CHUNKS = P * BK / V;
  static constexpr int PER = (CHUNKS + THREADS - 1) / THREADS;
  static constexpr int KCH = BK / V;                   // chunks along k (KCONTIG)
  static constexpr int PCH = P / V;                    // chunks along p (!KCONTIG)

  // Chunk q of this thread: its p (first p of the run) and k offsets within the slice.
  static GM_DEV int chunk(int q) { return int(threadIdx.x) + q * THREADS; }
  static GM_DEV bool exists(int q) { return CHUNKS % THREADS == 0 || chunk(q) < CHUNKS; }
  static GM_DEV int p_of(int q) { return KCONTIG ? chunk(q) / KCH : (chunk(q) % PCH) * V; }
  static GM_DEV int k_of(int q) { return KCONTIG ? (chunk(q) % KCH) * V : chunk(q) / PCH; }

  const S* src[PER];     // chunk q at k = 0
  unsigned pmask[PER];   // bit e: element e of the chunk has p < p_end; bit V: all do, and aligned
  int ld;                // elements between rows in memory (a row is < 2^31 elements)
  S r[PER][V];           // staged chunk(s) of the next k-slice

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

  GM_DEV void load(T*, int k0, int k_end) {
#pragma unroll
    for (int q = 0; q < PER; ++q) {
      if (!exists(q)) continue;
      const int gk = k0 + k_of(q);
      const S* p = KCONTIG ? src[q] + k0 : src[q] + i64(k0) * ld;
      const bool full = (pmask[q] >> V) != 0 && (KCONTIG ? gk + V <= k_end : gk < k_end);
      if (full) {
        ldg_vec<S, V>(r[q], p);
      } else {
#pragma unroll
        for (int e = 0; e < V; ++e) {
          const bool ok = ((pmask[q] >> e) & 1u) != 0 && (KCONTIG ? gk + e : gk) < k_end;
          r[q][e] = ok ? p[e] : S{};
        }
      }
    }
  }

  static GM_DEV T staged(S v) {
    if constexpr (DUP16) return T(__byte_perm(unsigned(int(widen(v))), 0u, 0x1010));
    else return widen(v);
  }

  // Write the staged slice into one shared buffer (BK, LDS), widened.
  GM_DEV void store(T* s) const {
#pragma unroll
    for (int q = 0; q < PER; ++q) {
      if (!exists(q)) continue;
      const int p = p_of(q), kk = k_of(q);
      if constexpr (KCONTIG) {
#pragma unroll
        for (int e = 0; e < V; ++e) s[(kk + e) * LDS + p] = staged(r[q][e]);
      } else {
        T w[V];
#pragma unroll
        for (int e = 0; e < V; ++e) w[e] = staged(r[q][e]);
        vec_st<T, V>(s + kk * LDS + p, w);
      }
    }
  }
};

// The same tile, copied straight into shared memory with cp.async: for operands whose
// storage type is their compute type (f32, i32, i64, f64), so no widening is needed and no
// register holds the next slice. load() issues the copies into buffer `s`; store() is empty.
template <class S, int P, int BK, int THREADS, bool KCONTIG>
struct AsyncTileLoader {
  typedef TileLoader<S, S, P, BK, THREADS, KCONTIG> Shape;
  static constexpr int V = Shape::V, LDS = Shape::LDS, BUF = Shape::BUF, PER = Shape::PER;
  // 2-byte elements (packed 16-bit steps) only as p-contiguous chunks of 8 bytes: cp.async has
  // no 2-byte copy, so a partial chunk at the edge is read with plain loads instead.
  static_assert(sizeof(S) == 4 || sizeof(S) == 8 || (sizeof(S) == 2 && !KCONTIG), "cp.async element size");
  static constexpr int CHUNK_BYTES = V * int(sizeof(S));
  const S* src[PER];     // as TileLoader
  unsigned pmask[PER];
  int ld;

  GM_DEV void init(const S* base, int ld_, int p0, int p_end, bool vec) {
    ld = ld_;
#pragma unroll
    for (int q = 0; q < PER; ++q) {
      const int gp = p0 + Shape::p_of(q);
      src[q] = KCONTIG ? base + i64(gp) * ld + Shape::k_of(q) : base + i64(Shape::k_of(q)) * ld + gp;
      unsigned m = 0;
#pragma unroll
      for (int e = 0; e < V; ++e)
        if ((KCONTIG ? gp : gp + e) < p_end) m |= 1u << e;
      if (m == (1u << V) - 1 && vec) m |= 1u << V;
      pmask[q] = m;
    }
  }

  GM_DEV void load(S* s, int k0, int k_end) {
#pragma unroll
    for (int q = 0; q < PER; ++q) {
      if (!Shape::exists(q)) continue;
      const int gk = k0 + Shape::k_of(q), p = Shape::p_of(q), kk = Shape::k_of(q);
      const S* g = KCONTIG ? src[q] + k0 : src[q] + i64(k0) * ld;
      if constexpr (KCONTIG) {
        // Transposed into (BK, LDS): one element per copy.
#pragma unroll
        for (int e = 0; e < V; ++e)
          cp_async<int(sizeof(S))>(s + (kk + e) * LDS + p, g + e, ((pmask[q] >> e) & 1u) != 0 && gk + e < k_end);
      } else if ((pmask[q] >> V) != 0) {
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
        for (int e = 0; e < V; ++e)
          s[kk * LDS + p + e] = ((pmask[q] >> e) & 1u) != 0 && gk < k_end ? g[e] : S(0);
      } else {
#pragma unroll
        for (int e = 0; e < V; ++e)
          cp_async<int(sizeof(S))>(s + kk * LDS + p + e, g + e, ((pmask[q] >> e) & 1u) != 0 && gk < k_end);
      }
    }
  }
  GM_DEV void store(S*) const {}
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
