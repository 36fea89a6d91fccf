// The tensor-core mainloop (mma.sync): a block computes a BM x BN tile of acc[i, j] =
// sum over k of A[i, k] * B[k, j] on the matrix units, in the math's accumulator type.
//
// - Operands in either orientation: A as X[i, k] (k contiguous, "KC") or X[k, i]; B as Y[j, k]
//   (KC) or Y[k, j]. Global -> shared by cp.async, 16 bytes at a time, STAGES slices in flight;
//   8-bit operands without k contiguous are transposed through registers instead (mma.sync
//   wants k-consecutive bytes and ldmatrix cannot transpose bytes).
// - Shared memory rows padded so that ldmatrix's eight 16-byte rows, and the scalar TF32 reads,
//   fall in distinct banks.
// - Every M, N, K: elements outside [p0, p_end) x [k_begin, k_end) are zero-filled (cp.async
//   src-size), so they add 0 to every in-range value. Out-of-range rows / columns produce
//   values the caller must not store (the map's row / col against its bounds).
// - After run(), each thread holds Map::kRows x Map::kCols values (the accumulator map of
//   docs/tensor-cores.md): the output operators iterate them without knowing this mainloop.
//   A wgmma mainloop presents the same map (rows g + 8h of each 16-row slab, columns 2t + e
//   of each 8-column group), so it can replace this one behind it.
#pragma once
// Every PTX instruction this file uses comes from these two headers; a host emulation of the
// instructions (tests/gpu/test_tensor_mainloop_sim.cpp) defines GM_TC_INSTRUCTIONS_PROVIDED and
// supplies its own, to run this file's logic on the CPU.
#ifndef GM_TC_INSTRUCTIONS_PROVIDED
#include "gamut_loaders.cuh"   // cp_async_commit, cp_async_wait
#include "gamut_tc_mma.cuh"
#endif

namespace gm {
namespace tc {

// Block tile BM x BN, k-slice BK (elements), WARPS_M x WARPS_N warps each owning a
// (BM / WARPS_M) x (BN / WARPS_N) warp tile of MI x NI instructions (m16 x n8), STAGES slices
// of shared memory in flight.
template <int BM_, int BN_, int BK_, int WARPS_M_, int WARPS_N_, int STAGES_>
struct TcShape {
  static constexpr int BM = BM_, BN = BN_, BK = BK_, WARPS_M = WARPS_M_, WARPS_N = WARPS_N_, STAGES = STAGES_;
  static constexpr int WM = BM / WARPS_M, WN = BN / WARPS_N;
  static constexpr int MI = WM / 16, NI = WN / 8;
  static constexpr int THREADS = 32 * WARPS_M * WARPS_N;
  static_assert(WARPS_M >= 1 && WARPS_N >= 1 && THREADS <= 1024, "1 to 32 warps");
  static_assert(BM % (16 * WARPS_M) == 0, "a warp tile is whole m16 slabs");
  static_assert(BN % (16 * WARPS_N) == 0, "a warp tile is whole pairs of n8 groups (ldmatrix.x4 loads two)");
  static_assert(MI * NI * 4 <= 128, "at most 128 accumulators per thread (more would spill)");
  static_assert(STAGES >= 2 && STAGES <= 6, "2 to 6 stages");
  // Warp w's place in the block tile: warps first along M.
  static GM_DEV int warp_m() { return int(threadIdx.x / 32) % WARPS_M; }
  static GM_DEV int warp_n() { return int(threadIdx.x / 32) / WARPS_M; }
};

// The accumulator map (docs/tensor-cores.md): grid row m = 2 mi + h is block-tile row
// warp_m WM + 16 mi + g + 8h; grid column n = 2 ni + e is warp_n WN + 8 ni + 2t + e.
template <class Shape>
struct MmaAccMap {
  static constexpr int kRows = 2 * Shape::MI, kCols = 2 * Shape::NI;
  static GM_DEV int row(int m) {
    return Shape::warp_m() * Shape::WM + (m >> 1) * 16 + int(threadIdx.x % 32) / 4 + 8 * (m & 1);
  }
  static GM_DEV int col(int n) {
    return Shape::warp_n() * Shape::WN + (n >> 1) * 8 + 2 * int(threadIdx.x % 4) + (n & 1);
  }
  static constexpr GM_DEV int index(int m, int n) {
    return ((m >> 1) * Shape::NI + (n >> 1)) * 4 + (m & 1) * 2 + (n & 1);
  }
};

// One operand of the product as the mainloop reads it from global memory: element (p, k) is at
// base[p * ld + k] (KC) or base[k * ld + p]; rows / columns p in [p0, p_end) of the tile exist.
// vec: 16-byte chunks along the contiguous axis are 16-byte aligned (base, ld, and p0 or k_begin).
struct TcOperand {
  const void* base;
  i64 ld;
  int p0, p_end;
  bool vec;
};

GM_DEV int clamp_count(int left, int most) { return left <= 0 ? 0 : left >= most ? most : left; }

// One operand's tiles: P (BM or BN) x BK per slice, global -> shared, and shared -> fragments.
// In shared memory k is contiguous (SKC: P rows of BK) when it is in global memory or the
// operand is transposed on the way in; else the rows are k (BK rows of P).
// SWIZZLE 0: padded rows, read by ldmatrix / 32-bit loads (mma.sync). SWIZZLE 128: the wgmma
// canonical layout with 128-byte swizzle (gamut_tc_wgmma.cuh): rows of 128 bytes, the 16-byte
// chunk c of row r stored at chunk c ^ (r % 8); SKC tiles are P rows of 128 bytes (BK * ES ==
// 128); others are blocks of 128 bytes of p by BK rows, one block after another.
template <class T, int P, int BK, int THREADS, bool KC, int SWIZZLE = 0>
struct TcTile {
  static constexpr int ES = int(sizeof(T));
  static constexpr bool TRANSPOSE = ES == 1 && !KC;   // 8-bit X[k, p]: through registers
  static constexpr bool SKC = KC || TRANSPOSE;
  static constexpr bool SCALAR = ES == 4 && !KC;      // f32 X[k, p]: fragments by 32-bit loads
  static constexpr int ROWS = SKC ? P : BK;
  static constexpr int ROW_BYTES = (SKC ? BK : P) * ES;
  static_assert(ROW_BYTES % 32 == 0, "a shared row is whole 32-byte k-steps or pairs of 16-byte chunks");
  // ldmatrix reads 8 rows x 16 bytes: a row stride of an odd number of 16-byte units puts them in
  // 8 distinct bank groups. The scalar f32 reads (k = t, p = g) need a stride of 8 (mod 32) words.
  static constexpr int PAD = SWIZZLE ? 0 : SCALAR ? ((8 - (ROW_BYTES / 4) % 32 + 32) % 32) * 4 : ((ROW_BYTES / 16) % 2 == 0 ? 16 : 0);
  static constexpr int STRIDE = ROW_BYTES + PAD;      // bytes between shared rows (SWIZZLE 0)
  static constexpr int BYTES = ROWS * STRIDE;         // one stage
  static_assert(SWIZZLE == 0 || (SWIZZLE == 128 && (SKC ? ROW_BYTES == 128 : ROW_BYTES % 128 == 0) && ROWS % 8 == 0),
                "128-byte swizzle: 128-byte rows (k contiguous) or whole 128-byte blocks of p, 8-row atoms");
  // Shared byte offset of 16-byte chunk c of row r in a stage.
  static GM_DEV unsigned chunk_offset(int r, int c) {
    if constexpr (SWIZZLE == 0) return unsigned(r * STRIDE + c * 16);
    else return unsigned((c >> 3) * (ROWS * 128) + r * 128 + (((c & 7) ^ (r & 7)) << 4));
  }

  // cp.async path: chunks of 16 bytes along the contiguous axis; thread tid takes chunk column
  // tid % CPR of rows tid / CPR + q * RSTEP.
  static constexpr int E16 = 16 / ES;                 // elements per chunk
  static constexpr int CPR = ROW_BYTES / 16;          // chunks per shared row
  static constexpr int RSTEP = THREADS / CPR;
  static constexpr int PER = TRANSPOSE ? 0 : ROWS * CPR / THREADS;
  static_assert(TRANSPOSE || (THREADS % CPR == 0 && (ROWS * CPR) % THREADS == 0),
                "the tile's 16-byte chunks spread evenly over the threads");
  // Transposed 8-bit path: blocks of 4 k x 4 p (one 32-bit load per k, one 32-bit store per p);
  // thread tid takes k block tid % KW of p blocks tid / KW + q * PSTEP. Threads run along k, so a
  // warp's stores hit distinct banks when a shared row is 64 bytes.
  static constexpr int KW = BK / 4;
  static constexpr int PSTEP = THREADS / KW;
  static constexpr int BPER = TRANSPOSE ? (P / 4) * KW / THREADS : 0;
  static_assert(!TRANSPOSE || (THREADS % KW == 0 && ((P / 4) * KW) % THREADS == 0), "8-bit blocks spread evenly");

  const T* src;      // this thread's first chunk (block) at k = 0
  i64 ld;
  unsigned lim;      // KC: bit q = chunk q's row exists; else elements of a chunk (5 bits per
                     // block when TRANSPOSE) with p < p_end
  bool vec;
  unsigned w[TRANSPOSE ? BPER : 1][4];   // staged 4 x 4 blocks (TRANSPOSE)

  GM_DEV void init(const TcOperand& op) {
    const int tid = int(threadIdx.x);
    const T* base = static_cast<const T*>(op.base);
    ld = op.ld;
    vec = op.vec;
    lim = 0;
    if constexpr (TRANSPOSE) {
      const int k4 = tid % KW, p4 = tid / KW;
      src = base + i64(4 * k4) * op.ld + op.p0 + 4 * p4;
#pragma unroll
      for (int q = 0; q < BPER; ++q)
        lim |= unsigned(clamp_count(op.p_end - (op.p0 + 4 * (p4 + q * PSTEP)), 4)) << (5 * q);
    } else if constexpr (KC) {
      const int row = tid / CPR, cu = tid % CPR;   // row p, chunk along k
      src = base + i64(op.p0 + row) * op.ld + cu * E16;
#pragma unroll
      for (int q = 0; q < PER; ++q)
        if (op.p0 + row + q * RSTEP < op.p_end) lim |= 1u << q;
    } else {
      const int row = tid / CPR, cu = tid % CPR;   // row k, chunk along p
      src = base + i64(row) * op.ld + op.p0 + cu * E16;
      lim = unsigned(clamp_count(op.p_end - (op.p0 + cu * E16), E16));
    }
  }

  // Start fetching the slice that begins at k0 into the stage at shared address s.
  GM_DEV void issue(unsigned s, int k0, int k_end) {
    const int tid = int(threadIdx.x);
    if constexpr (TRANSPOSE) {
      const int kb = k0 + 4 * (tid % KW);
#pragma unroll
      for (int q = 0; q < BPER; ++q) {
        const int n = int((lim >> (5 * q)) & 31u);
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const T* g = src + i64(k0 + e) * ld + q * 4 * PSTEP;
          const bool k_ok = kb + e < k_end;
          if (vec && n == 4 && k_ok) {
            w[q][e] = __ldg(reinterpret_cast<const unsigned*>(g));
          } else {   // at the edges, or unaligned: byte by byte (not unrolled, as above)
            unsigned v = 0;
#pragma unroll 1
            for (int b = 0; b < (k_ok ? n : 0); ++b) v |= unsigned(reinterpret_cast<const unsigned char*>(g)[b]) << (8 * b);
            w[q][e] = v;
          }
        }
      }
    } else {
      const int row = tid / CPR, cu = tid % CPR;
#pragma unroll
      for (int q = 0; q < PER; ++q) {
        int n;   // elements of the chunk that exist
        const T* g;
        if constexpr (KC) {
          n = ((lim >> q) & 1u) != 0 ? clamp_count(k_end - (k0 + cu * E16), E16) : 0;
          g = src + i64(q * RSTEP) * ld + k0;
        } else {
          n = k0 + row + q * RSTEP < k_end ? int(lim) : 0;
          g = src + i64(k0 + q * RSTEP) * ld;
        }
        const unsigned d = s + chunk_offset(row + q * RSTEP, cu);
        if (vec) {
          cp_async16_zfill(d, g, n * ES);
        } else if constexpr (ES == 4) {
#pragma unroll
          for (int e = 0; e < E16; ++e) cp_async4_zfill(d + 4 * e, g + e, e < n ? 4 : 0);
        } else {
          // Unaligned 8- or 16-bit rows (cp.async has no smaller copy): plain loads and stores,
          // in a loop that is not unrolled (a rare path; unrolled it doubles NVRTC's time).
#pragma unroll 1
          for (int e = 0; e < E16; ++e) sts_elem(d + ES * e, e < n ? load_elem(g + e) : 0u);
        }
      }
    }
  }

  static GM_DEV unsigned load_elem(const T* g) {
    if constexpr (ES == 2) return *reinterpret_cast<const unsigned short*>(g);
    else return *reinterpret_cast<const unsigned char*>(g);
  }
  static GM_DEV void sts_elem(unsigned saddr, unsigned v) {
    if constexpr (ES == 2) sts16(saddr, v);
    else sts8(saddr, v);
  }

  // TRANSPOSE: the staged blocks, as k-consecutive bytes per p, into the stage at s.
  GM_DEV void commit(unsigned s) const {
    if constexpr (TRANSPOSE) {
      const int tid = int(threadIdx.x);
      const int k4 = tid % KW, p4 = tid / KW;
#pragma unroll
      for (int q = 0; q < BPER; ++q) {
        // 4 x 4 byte transpose: w[e] holds p = 0..3 at k = e; col[p] gets k = 0..3 at p.
        const unsigned t0 = __byte_perm(w[q][0], w[q][1], 0x5140), t1 = __byte_perm(w[q][2], w[q][3], 0x5140);
        const unsigned t2 = __byte_perm(w[q][0], w[q][1], 0x7362), t3 = __byte_perm(w[q][2], w[q][3], 0x7362);
        const unsigned col[4] = {__byte_perm(t0, t1, 0x5410), __byte_perm(t0, t1, 0x7632),
                                 __byte_perm(t2, t3, 0x5410), __byte_perm(t2, t3, 0x7632)};
        const int p = 4 * (p4 + q * PSTEP);
#pragma unroll
        for (int e = 0; e < 4; ++e) sts32(s + chunk_offset(p + e, k4 / 4) + 4 * (k4 % 4), col[e]);
      }
    }
  }

  // ---- shared -> fragments for k-step ks (32 bytes of k) of the stage at s.
  // A role: MI fragments of rows r0 + 16 mi (mma operand A, 4 registers each).
  template <int MI>
  static GM_DEV void load_a(unsigned (&f)[MI][4], unsigned s, int ks, int r0) {
    static_assert(SWIZZLE == 0, "fragments of padded rows");
    const int l = int(threadIdx.x % 32);
#pragma unroll
    for (int mi = 0; mi < MI; ++mi) {
      if constexpr (SKC) {
        ldmatrix_x4(f[mi], s + unsigned((r0 + 16 * mi + l % 8 + 8 * ((l / 8) % 2)) * STRIDE + 32 * ks + 16 * (l / 16)));
      } else if constexpr (!SCALAR) {
        ldmatrix_x4_trans(f[mi], s + unsigned((16 * ks + l % 8 + 8 * (l / 16)) * STRIDE +
                                              ES * (r0 + 16 * mi + 8 * ((l / 8) % 2))));
      } else {
#pragma unroll
        for (int r = 0; r < 4; ++r)
          f[mi][r] = lds32(s + unsigned((8 * ks + l % 4 + 4 * (r >> 1)) * STRIDE + 4 * (r0 + 16 * mi + l / 4 + 8 * (r & 1))));
      }
    }
  }
  // B role: NI fragments of columns c0 + 8 ni (mma operand B, 2 registers each), NI even.
  template <int NI>
  static GM_DEV void load_b(unsigned (&f)[NI][2], unsigned s, int ks, int c0) {
    static_assert(SWIZZLE == 0, "fragments of padded rows");
    const int l = int(threadIdx.x % 32);
#pragma unroll
    for (int nj = 0; nj < NI / 2; ++nj) {
      unsigned r[4];
      if constexpr (SKC) {
        ldmatrix_x4(r, s + unsigned((c0 + 16 * nj + l % 8 + 8 * (l / 16)) * STRIDE + 32 * ks + 16 * ((l / 8) % 2)));
      } else if constexpr (!SCALAR) {
        ldmatrix_x4_trans(r, s + unsigned((16 * ks + l % 8 + 8 * ((l / 8) % 2)) * STRIDE +
                                          ES * (c0 + 16 * nj + 8 * (l / 16))));
      } else {
#pragma unroll
        for (int e = 0; e < 4; ++e)
          r[e] = lds32(s + unsigned((8 * ks + l % 4 + 4 * (e % 2)) * STRIDE + 4 * (c0 + 16 * nj + 8 * (e / 2) + l / 4)));
      }
      f[2 * nj][0] = r[0];
      f[2 * nj][1] = r[1];
      f[2 * nj + 1][0] = r[2];
      f[2 * nj + 1][1] = r[3];
    }
  }
};

// The mainloop of one math, tile shape and pair of operand orientations. The caller owns the
// accumulators (acc, Map::index order) and SMEM_BYTES of dynamic shared memory (16-byte aligned).
template <class Math, class Shape, bool A_KC, bool B_KC>
struct Mainloop {
  typedef typename Math::Acc Acc;
  typedef MmaAccMap<Shape> Map;
  static constexpr int MI = Shape::MI, NI = Shape::NI, BK = Shape::BK, STAGES = Shape::STAGES;
  static constexpr int kAcc = MI * NI * 4;
  typedef TcTile<typename Math::A, Shape::BM, BK, Shape::THREADS, A_KC> ATile;
  typedef TcTile<typename Math::B, Shape::BN, BK, Shape::THREADS, B_KC> BTile;
  static_assert(BK % Math::kK == 0, "the k-slice is whole instructions");
  static constexpr int KSTEPS = BK / Math::kK;
  static constexpr int STAGE_BYTES = ATile::BYTES + BTile::BYTES;
  static constexpr int SMEM_BYTES = STAGES * STAGE_BYTES;

  // One k-step: every (mi, ni) instruction of the warp tile.
  static GM_DEV void mma_step(Acc (&acc)[kAcc], unsigned (&fa)[MI][4], unsigned (&fb)[NI][2]) {
    if constexpr (Math::kPasses == 3) {   // tf32x3: small terms first, then big * big
      unsigned sa[MI][4], sb[NI][2];
#pragma unroll
      for (int mi = 0; mi < MI; ++mi) split_tf32(fa[mi], sa[mi]);
#pragma unroll
      for (int ni = 0; ni < NI; ++ni) split_tf32(fb[ni], sb[ni]);
#pragma unroll
      for (int mi = 0; mi < MI; ++mi)
#pragma unroll
        for (int ni = 0; ni < NI; ++ni) {
          Acc* d = acc + (mi * NI + ni) * 4;
          Math::mma(d[0], d[1], d[2], d[3], sa[mi], fb[ni]);
          Math::mma(d[0], d[1], d[2], d[3], fa[mi], sb[ni]);
          Math::mma(d[0], d[1], d[2], d[3], fa[mi], fb[ni]);
        }
    } else {
      if constexpr (Math::kK == 8) {   // tf32: round the f32 bits
#pragma unroll
        for (int mi = 0; mi < MI; ++mi) round_tf32(fa[mi]);
#pragma unroll
        for (int ni = 0; ni < NI; ++ni) round_tf32(fb[ni]);
      }
#pragma unroll
      for (int mi = 0; mi < MI; ++mi)
#pragma unroll
        for (int ni = 0; ni < NI; ++ni) {
          Acc* d = acc + (mi * NI + ni) * 4;
          Math::mma(d[0], d[1], d[2], d[3], fa[mi], fb[ni]);
        }
    }
  }

  static GM_DEV void compute(Acc (&acc)[kAcc], unsigned s) {
    const int r0 = Shape::warp_m() * Shape::WM, c0 = Shape::warp_n() * Shape::WN;
#pragma unroll
    for (int ks = 0; ks < KSTEPS; ++ks) {
      unsigned fa[MI][4], fb[NI][2];
      ATile::template load_a<MI>(fa, s, ks, r0);
      BTile::template load_b<NI>(fb, s + ATile::BYTES, ks, c0);
      mma_step(acc, fa, fb);
    }
  }

  // acc += the block tile's products over k in [k_begin, k_end). Ends with a barrier: shared
  // memory is free afterwards.
  static GM_DEV void run(Acc (&acc)[kAcc], void* smem, const TcOperand& a, const TcOperand& b, int k_begin,
                         int k_end) {
    ATile ta;
    BTile tb;
    ta.init(a);
    tb.init(b);
    const unsigned s0 = smem_addr(smem);
    const int nk = k_end > k_begin ? (k_end - k_begin + BK - 1) / BK : 0;
    // Prologue: slices 0 .. STAGES-2 in flight, one cp.async group each (possibly empty).
#pragma unroll
    for (int st = 0; st < STAGES - 1; ++st) {
      if (st < nk) {
        const unsigned s = s0 + unsigned(st * STAGE_BYTES);
        ta.issue(s, k_begin + st * BK, k_end);
        tb.issue(s + ATile::BYTES, k_begin + st * BK, k_end);
        ta.commit(s);
        tb.commit(s + ATile::BYTES);
      }
      cp_async_commit();
    }
    int rs = 0, ws = STAGES - 1;   // stage read by this slice, stage written by the prefetch
#pragma unroll 1
    for (int t = 0; t < nk; ++t) {
      cp_async_wait<STAGES - 2>();   // slice t has landed (this thread's copies) ...
      __syncthreads();               // ... everybody's; and slice t-1's stage is no longer read
      const int nt = t + STAGES - 1;
      const unsigned sw = s0 + unsigned(ws * STAGE_BYTES);
      if (nt < nk) {
        ta.issue(sw, k_begin + nt * BK, k_end);
        tb.issue(sw + ATile::BYTES, k_begin + nt * BK, k_end);
      }
      cp_async_commit();
      compute(acc, s0 + unsigned(rs * STAGE_BYTES));
      if (nt < nk) {   // register-staged (transposed 8-bit) operands: their loads had a slice to land
        ta.commit(sw);
        tb.commit(sw + ATile::BYTES);
      }
      rs = rs + 1 == STAGES ? 0 : rs + 1;
      ws = ws + 1 == STAGES ? 0 : ws + 1;
    }
    cp_async_wait<0>();
    __syncthreads();
  }
};

}  // namespace tc
}  // namespace gm
