// The wgmma mainloop (sm_90a): the same contract as gm::tc::Mainloop (gamut_tc_mainloop.cuh) --
// run(acc, smem, a, b, k_begin, k_end), Acc, kAcc, SMEM_BYTES, Map -- with the block tile computed
// by warpgroups (4 warps) issuing asynchronous m64nNk16 products from shared memory.
//
// - f16 / bf16 operands, f32 accumulation, both orientations of each operand (wgmma reads 16-bit
//   operands k-major or m/n-major through its transpose bits). Its shapes, tiles and
//   descriptors also serve the TMA form (gamut_tc_wgmma_tma.cuh) for tf32, k-major only.
// - Shared tiles in the canonical 128-byte-swizzled layout (TcTile<..., 128>), filled by cp.async
//   from every thread (zero-fill at the edges, as the mma.sync mainloop), STAGES slices: slices
//   t+1 .. t+STAGES-2 are in flight while warpgroups run slice t's products, one wgmma group in
//   flight across the barrier (slice t's products overlap slice t+1's wait).
// - BM = 64 x (warpgroups), each warpgroup one m64 x BN product; BN = 128 or 256.
// The accumulator map has the same form as mma.sync's: rows g + 8h of the warp's 16-row slab,
// columns 2t + e of each 8-column group.
#pragma once
#ifndef GM_TC_INSTRUCTIONS_PROVIDED
#include "gamut_tc_wgmma_ops.cuh"
#endif
#include "gamut_tc_mainloop.cuh"

namespace gm {
namespace tc {

// A shared-memory matrix descriptor with 128-byte swizzle (PTX ISA "Matrix Descriptor Format"):
// start address, leading and stride byte offsets (all >> 4), swizzle mode 1 in bits 62-63.
//   k contiguous ("K-major"): rows of 128 bytes, 8-row atoms SBO apart, LBO unused (16).
//   p contiguous ("MN-major"): 128-byte blocks of p LBO apart, 8-k-row groups SBO apart.
GM_DEV u64 wgmma_desc(unsigned saddr, unsigned lbo_bytes, unsigned sbo_bytes) {
  return u64((saddr & 0x3ffffu) >> 4) | (u64((lbo_bytes >> 4) & 0x3fffu) << 16) |
         (u64((sbo_bytes >> 4) & 0x3fffu) << 32) | (u64(1) << 62);
}

// ES: bytes per operand element, 2 (f16 / bf16) or 4 (f32 read as tf32); a k-slice is one
// 128-byte swizzle row whatever the type (BK 64 or 32), and a k-step 32 bytes of it.
template <int BM_, int BN_, int STAGES_, int ES_ = 2>
struct WgShape {
  static constexpr int BM = BM_, BN = BN_, STAGES = STAGES_, ES = ES_;
  static constexpr int BK = 128 / ES;
  static_assert(ES == 2 || ES == 4, "16-bit or f32 operands");
  static constexpr int WARPGROUPS = BM / 64;
  static constexpr int THREADS = 128 * WARPGROUPS;
  static_assert(BM == 64 || BM == 128, "one or two warpgroups of m64");
  static_assert(BN == 128 || BN == 256, "wgmma n of 128 or 256");
  static_assert(STAGES >= 3 && STAGES <= 6, "3 to 6 stages (one slice read while the next lands)");
};

// Accumulator map: thread (warpgroup w, warp v in it, lane 4g + t) holds rows 64w + 16v + g + 8h
// (h = m) and columns 8i + 2t + e (n = 2i + e); wgmma's register order is d[4i + 2h + e].
template <class Shape>
struct WgmmaAccMap {
  static constexpr int kRows = 2, kCols = Shape::BN / 4;
  static GM_DEV int row(int m) {
    return int(threadIdx.x / 128) * 64 + int(threadIdx.x / 32 % 4) * 16 + int(threadIdx.x % 32) / 4 + 8 * m;
  }
  static GM_DEV int col(int n) { return (n >> 1) * 8 + 2 * int(threadIdx.x % 4) + (n & 1); }
  static constexpr GM_DEV int index(int m, int n) { return (n >> 1) * 4 + m * 2 + (n & 1); }
};

template <class Math, class Shape, bool A_KC, bool B_KC>
struct WgmmaMainloop {
  typedef typename Math::Acc Acc;
  typedef WgmmaAccMap<Shape> Map;
  typedef typename Math::A Operand;   // picks the instruction (wgmma_f32)
  static_assert(Math::kK * int(sizeof(Operand)) == 32 && int(sizeof(Operand)) == Shape::ES,
                "wgmma mainloop: f16 / bf16 (k16) or tf32 (k8) operands of the shape's size");
  static constexpr int BK = Shape::BK, STAGES = Shape::STAGES, BN = Shape::BN;
  static constexpr int kAcc = BN / 2;
  typedef TcTile<typename Math::A, Shape::BM, BK, Shape::THREADS, A_KC, 128> ATile;
  typedef TcTile<typename Math::B, BN, BK, Shape::THREADS, B_KC, 128> BTile;
  static constexpr int STAGE_BYTES = ATile::BYTES + BTile::BYTES;   // multiples of 1024
  static_assert(ATile::BYTES % 1024 == 0 && BTile::BYTES % 1024 == 0, "swizzle atoms stay 1024-byte aligned");
  static constexpr int SMEM_BYTES = STAGES * STAGE_BYTES + 1024;    // + alignment of the first stage
  static constexpr int KSTEPS = BK / Math::kK;                     // 4 k-steps of 32 bytes

  // Descriptors of k-step ks of a stage: k contiguous: the step's 32 bytes within each 128-byte
  // row; p contiguous: the step's 16 k-rows (2 swizzle atoms of 8 rows).
  template <class Tile, bool KC>
  static GM_DEV u64 desc(unsigned tile, int p_block, int ks) {
    if constexpr (KC) return wgmma_desc(tile + unsigned(p_block * 64 * 128 + 32 * ks), 16, 1024);
    else return wgmma_desc(tile + unsigned(p_block * Tile::ROWS * 128 + ks * 16 * 128), Tile::ROWS * 128, 1024);
  }

  static GM_DEV void run(Acc (&acc)[kAcc], void* smem, const TcOperand& a, const TcOperand& b, int k_begin,
                         int k_end) {
    static_assert(sizeof(Operand) == 2, "the cp.async form takes 16-bit operands (tf32 comes by TMA)");
    ATile ta;
    BTile tb;
    ta.init(a);
    tb.init(b);
    const unsigned s0 = (smem_addr(smem) + 1023u) & ~1023u;   // swizzle atoms are 1024-byte aligned
    const int nk = k_end > k_begin ? (k_end - k_begin + BK - 1) / BK : 0;
    constexpr int D = STAGES - 2;   // slices in flight ahead of the one computed
#pragma unroll
    for (int st = 0; st < D; ++st) {
      if (st < nk) {
        const unsigned s = s0 + unsigned(st * STAGE_BYTES);
        ta.issue(s, k_begin + st * BK, k_end);
        tb.issue(s + ATile::BYTES, k_begin + st * BK, k_end);
      }
      cp_async_commit();
    }
    const int wg = int(threadIdx.x / 128);
    int rs = 0, ws = D;
#pragma unroll 1
    for (int t = 0; t < nk; ++t) {
      cp_async_wait<D - 1>();   // slice t has landed (this thread's copies) ...
      fence_proxy_async();      // ... and is visible to wgmma ...
      __syncthreads();          // ... everybody's; every warpgroup has finished slice t-2's products
      const int nt = t + D;
      if (nt < nk) {            // into the stage slice t-2 used
        const unsigned sw = s0 + unsigned(ws * STAGE_BYTES);
        ta.issue(sw, k_begin + nt * BK, k_end);
        tb.issue(sw + ATile::BYTES, k_begin + nt * BK, k_end);
      }
      cp_async_commit();
      const unsigned stage = s0 + unsigned(rs * STAGE_BYTES);
      // The k-steps unrolled and the accumulators fenced on both sides: ptxas then keeps them in
      // place across the asynchronous products (a loop here made it inject warpgroup arrives; a
      // single loop over (t, ks) made it serialize the wgmmas).
      fence_registers(acc);
      wgmma_fence();
#pragma unroll
      for (int ks = 0; ks < KSTEPS; ++ks)
        wgmma_f32<BN, Operand, A_KC ? 0 : 1, B_KC ? 0 : 1>(acc, desc<ATile, A_KC>(stage, wg, ks),
                                                          desc<BTile, B_KC>(stage + ATile::BYTES, 0, ks));
      wgmma_commit();
      wgmma_wait<1>();          // slice t-1's products are done; slice t's may run on
      fence_registers(acc);
      rs = rs + 1 == STAGES ? 0 : rs + 1;
      ws = ws + 1 == STAGES ? 0 : ws + 1;
    }
    wgmma_wait<0>();
    fence_registers(acc);
    cp_async_wait<0>();
    __syncthreads();
  }
};

}  // namespace tc
}  // namespace gm
