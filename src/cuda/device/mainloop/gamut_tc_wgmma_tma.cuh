// The TMA-fed wgmma mainloop (sm_90a): the products of gamut_tc_wgmma.cuh with the copies
// taken off the consumers. A producer warp after the consumer warpgroups issues one TMA box per
// operand and slice (the 128-byte-swizzled layout the descriptors read, zeros outside the
// tensor); full / empty mbarriers per stage replace the block barrier, so each warpgroup runs
// as soon as its slice has landed and never waits for the other.
//
//   threads [0, THREADS)                 consumers: wait full[s], 4 wgmma k-steps, release the
//                                        stage of the slice before (its products are done)
//   threads [THREADS, THREADS + 32)      producer (lane 0): wait empty[s], expect the stage's
//                                        bytes on full[s], issue the boxes; then leaves
//
// Contract as WgmmaMainloop (Acc, kAcc, Map, SMEM_BYTES), with TmaOperand instead of
// TcOperand, plus BLOCK_THREADS and producer(): after run() the kernel returns in the
// producer's threads, and the output operators synchronize the consumers only
// (gm::tile_sync<Shape::THREADS>, barrier 1), never with __syncthreads.
//
// f32 operands (tf32, tf32x3) are read k-major only (the host hands over k-major copies of
// others, src/cuda/stages/k_major_copy.h). tf32: the tensor map's TFLOAT32 type rounds each
// element to TF32 as it lands. tf32x3: the map copies f32 bits; once a slice has landed the
// consumers split it in place, x -> big = tf32(x) in the stage and small = tf32(x - big) in the
// stage's twin (same layout, after the stages), and each k-step issues small*big, big*small,
// big*big (the small terms first, as the mma.sync form). The twin lives and dies with its
// stage: written after full[s], read by the products that release empty[s].
#pragma once
#ifndef GM_TC_INSTRUCTIONS_PROVIDED
#include "gamut_tma_ops.cuh"
#endif
#include "gamut_tc_wgmma.cuh"

namespace gm {
namespace tc {

// One operand as the TMA unit reads it: a 3-d tensor map (contiguous axis, other axis, batch;
// built by the host, src/cuda/runtime/tensor_map.cpp), the tile's first row / column p0 and the
// batch instance.
struct TmaOperand {
  const void* map;
  int p0;
  int batch;
};

template <class Math, class Shape, bool A_KC, bool B_KC>
struct WgmmaTmaMainloop {
  typedef WgmmaMainloop<Math, Shape, A_KC, B_KC> Products;  // descriptors, tiles, sizes
  typedef typename Math::Acc Acc;
  typedef typename Products::Map Map;
  typedef typename Products::ATile ATile;
  typedef typename Products::BTile BTile;
  typedef typename Products::Operand Operand;
  static constexpr bool kSplit = Math::kPasses == 3;   // tf32x3
  static constexpr int BK = Shape::BK, STAGES = Shape::STAGES, BN = Shape::BN, BM = Shape::BM;
  static constexpr int kAcc = Products::kAcc, KSTEPS = Products::KSTEPS;
  static constexpr int STAGE_BYTES = Products::STAGE_BYTES;
  static constexpr int THREADS = Shape::THREADS, BLOCK_THREADS = THREADS + 32;
  static constexpr int CONSUMER_WARPS = THREADS / 32;
  // Stages (1024-byte aligned), their tf32x3 twins, then full[STAGES] and empty[STAGES]
  // mbarriers of 8 bytes.
  static constexpr int SPLIT_BYTES = kSplit ? STAGES * STAGE_BYTES : 0;
  static constexpr int SMEM_BYTES = STAGES * STAGE_BYTES + SPLIT_BYTES + 1024 + 128;
  static_assert(int(sizeof(Operand)) == 2 || (A_KC && B_KC), "f32 operands come k-major");
  static_assert(STAGES <= 8, "the barriers' 128 bytes hold 8 stages");

  static GM_DEV bool producer() { return int(threadIdx.x) >= THREADS; }

  // The boxes of one operand's slice at k0 into the stage tile at `dst`: k contiguous: one box
  // of BK k x P rows; else (16-bit) P / 64 boxes of 64 p x 64 k, 64 x 64 x 2 bytes apart.
  template <bool KC, int P>
  static GM_DEV void load(unsigned dst, const TmaOperand& op, int k0, unsigned bar) {
    if constexpr (KC) {
      tma_load_3d(dst, op.map, k0, op.p0, op.batch, bar);
    } else {
#pragma unroll
      for (int q = 0; q < P / 64; ++q)
        tma_load_3d(dst + unsigned(q * BK * 128), op.map, op.p0 + 64 * q, k0, op.batch, bar);
    }
  }

  // tf32x3: the stage at shared address `stage` split in place (big) and into its twin (small),
  // 16 bytes per thread and step; every consumer thread takes part.
  static GM_DEV void split(void* smem, unsigned stage) {
    unsigned char* base = static_cast<unsigned char*>(smem) + (stage - smem_addr(smem));
#pragma unroll 4
    for (int c = int(threadIdx.x); c < STAGE_BYTES / 16; c += THREADS) {
      const uint4 x = *reinterpret_cast<const uint4*>(base + 16 * c);
      unsigned v[4] = {x.x, x.y, x.z, x.w}, small[4];
      split_tf32(v, small);
      *reinterpret_cast<uint4*>(base + 16 * c) = make_uint4(v[0], v[1], v[2], v[3]);
      *reinterpret_cast<uint4*>(base + SPLIT_BYTES + 16 * c) = make_uint4(small[0], small[1], small[2], small[3]);
    }
  }

  // tf32x3's consumers. The tensor cores add products into the accumulators rounding toward
  // zero: summed over all of K, tf32x3's error grew with K to 20x SGEMM's at K = 16384 (H200,
  // bench/NOTES.md, session 8). So each slice's products go into a zeroed partial, added to acc
  // with f32 adds (to nearest). The split of slice t+1 runs while slice t's products are in
  // flight (a different stage and twin); a consumer barrier then makes it everybody's.
  static GM_DEV void consume_split(Acc (&acc)[kAcc], void* smem, unsigned s0, unsigned full0, unsigned empty0,
                                   int nk) {
    const int wg = int(threadIdx.x / 128);
    Acc part[kAcc];
    auto land = [&](int t) {  // slice t has landed, is split, and is visible to wgmma
      mbar_wait(full0 + 8u * unsigned(t % STAGES), unsigned(t / STAGES) & 1u);
      split(smem, s0 + unsigned((t % STAGES) * STAGE_BYTES));
      fence_proxy_async();
    };
    if (nk > 0) land(0);
    tile_sync<THREADS>();
#pragma unroll 1
    for (int t = 0; t < nk; ++t) {
      const unsigned stage = s0 + unsigned((t % STAGES) * STAGE_BYTES);
#pragma unroll
      for (int e = 0; e < kAcc; ++e) part[e] = 0;
      fence_registers(part);
      wgmma_fence();
#pragma unroll
      for (int ks = 0; ks < KSTEPS; ++ks) {
        const u64 da = Products::template desc<ATile, true>(stage, wg, ks),
                  db = Products::template desc<BTile, true>(stage + unsigned(ATile::BYTES), 0, ks),
                  sa = Products::template desc<ATile, true>(stage + unsigned(SPLIT_BYTES), wg, ks),
                  sb = Products::template desc<BTile, true>(stage + unsigned(SPLIT_BYTES + ATile::BYTES), 0, ks);
        wgmma_f32<BN, Operand, 0, 0>(part, sa, db);  // small terms first
        wgmma_f32<BN, Operand, 0, 0>(part, da, sb);
        wgmma_f32<BN, Operand, 0, 0>(part, da, db);
      }
      wgmma_commit();
      if (t + 1 < nk) land(t + 1);
      wgmma_wait<0>();
      fence_registers(part);
#pragma unroll
      for (int e = 0; e < kAcc; ++e) acc[e] += part[e];
      if (threadIdx.x % 32 == 0) mbar_arrive(empty0 + 8u * unsigned(t % STAGES));  // slice t's products are done
      tile_sync<THREADS>();  // slice t+1's split is everybody's
    }
  }

  static GM_DEV void run(Acc (&acc)[kAcc], void* smem, const TmaOperand& a, const TmaOperand& b, int k_begin,
                         int k_end) {
    const unsigned s0 = (smem_addr(smem) + 1023u) & ~1023u;
    const unsigned full0 = s0 + unsigned(STAGES * STAGE_BYTES + SPLIT_BYTES), empty0 = full0 + 8u * STAGES;
    const int nk = k_end > k_begin ? (k_end - k_begin + BK - 1) / BK : 0;
    if (threadIdx.x == 0) {
#pragma unroll
      for (int s = 0; s < STAGES; ++s) {
        mbar_init(full0 + 8u * unsigned(s), 1);                          // the producer's arrival + bytes
        mbar_init(empty0 + 8u * unsigned(s), unsigned(CONSUMER_WARPS));  // one per consumer warp
      }
      mbar_fence_init();
    }
    __syncthreads();  // the barriers exist for everybody (the last whole-block barrier)
    if (producer()) {
      if (threadIdx.x % 32 == 0) {
        int s = 0;
        unsigned use = 0;  // how often stage s was filled before
#pragma unroll 1
        for (int t = 0; t < nk; ++t) {
          if (use > 0) mbar_wait(empty0 + 8u * unsigned(s), (use - 1) & 1u);  // its last slice's products are done
          const unsigned stage = s0 + unsigned(s * STAGE_BYTES), full = full0 + 8u * unsigned(s);
          mbar_arrive_expect_tx(full, unsigned(STAGE_BYTES));
          load<A_KC, BM>(stage, a, k_begin + t * BK, full);
          load<B_KC, BN>(stage + unsigned(ATile::BYTES), b, k_begin + t * BK, full);
          if (++s == STAGES) {
            s = 0;
            ++use;
          }
        }
      }
      return;
    }
    if constexpr (kSplit) {
      consume_split(acc, smem, s0, full0, empty0, nk);
      tile_sync<THREADS>();  // every consumer's products are done: the stages may be reused
      return;
    }
    const int wg = int(threadIdx.x / 128);
    int s = 0, prev = STAGES - 1;
    unsigned use = 0;
#pragma unroll 1
    for (int t = 0; t < nk; ++t) {
      mbar_wait(full0 + 8u * unsigned(s), use & 1u);  // slice t has landed
      const unsigned stage = s0 + unsigned(s * STAGE_BYTES);
      fence_registers(acc);
      wgmma_fence();
#pragma unroll
      for (int ks = 0; ks < KSTEPS; ++ks)
        wgmma_f32<BN, Operand, A_KC ? 0 : 1, B_KC ? 0 : 1>(
            acc, Products::template desc<ATile, A_KC>(stage, wg, ks),
            Products::template desc<BTile, B_KC>(stage + unsigned(ATile::BYTES), 0, ks));
      wgmma_commit();
      wgmma_wait<1>();  // slice t-1's products are done: its stage may be refilled
      fence_registers(acc);
      if (t > 0 && threadIdx.x % 32 == 0) mbar_arrive(empty0 + 8u * unsigned(prev));
      prev = s;
      if (++s == STAGES) {
        s = 0;
        ++use;
      }
    }
    wgmma_wait<0>();
    fence_registers(acc);
    tile_sync<THREADS>();  // every consumer's products are done: the stages may be reused
  }
};

}  // namespace tc
}  // namespace gm
