// The bit-pack stages of the or-and rewrite (src/cuda/stages/bit_pack.h): each warp turns 32
// reduction steps of one row into one word with a ballot. The CPU loop (cpu/bit_pack.h) is the
// definition this kernel must match. Instantiated per element type by
// src/cuda/codegen/stage_sources.cpp.
#pragma once
#include "gamut_constants.cuh"
#include "gamut_math.cuh"
#include "gamut_stage_args.cuh"

namespace gm {

static_assert(kStageThreads == 256 && kStageTile == 32, "the bit pack is written for 8 warps and 32 x 32 tiles");

// Grid: x = words, y = chunks of 32 rows (looping while rows remain). Each step stages a 32 rows
// x 32 k tile of 0/1 bytes, loaded coalesced along whichever axis of src is contiguous; then
// warp v ballots rows v, v + 8, ...: lane b votes for bit b, k = k_begin + 32 w + b.
template <class S>
GM_DEV void bit_pack_tiled(const BitPackArgs& a) {
  __shared__ unsigned char tile[32][33];
  const S* __restrict__ src = reinterpret_cast<const S*>(a.src);
  unsigned* __restrict__ out = reinterpret_cast<unsigned*>(a.out);
  const int t = threadIdx.x, lane = t & 31, warp = t >> 5;
  const long long w = blockIdx.x;
  const long long k0 = a.k_begin + w * 32;
  for (long long r0 = a.r_begin + (long long)blockIdx.y * 32; r0 < a.r_end; r0 += (long long)gridDim.y * 32) {
    __syncthreads();  // the previous tile is consumed
    for (int q = 0; q < 4; ++q) {
      const int e = t + 256 * q;
      const int rr = a.k_contig ? (e >> 5) : (e & 31);
      const int kk = a.k_contig ? (e & 31) : (e >> 5);
      const long long r = r0 + rr, k = k0 + kk;
      unsigned char bit = 0;
      if (r < a.r_end && k < a.k_end) bit = widen(src[a.k_contig ? r * a.ld + k : k * a.ld + r]) != 0;
      tile[rr][kk] = bit;
    }
    __syncthreads();
    for (int rr = warp; rr < 32; rr += 8) {
      const unsigned word = __ballot_sync(0xffffffffu, tile[rr][lane] != 0);
      if (lane == 0 && r0 + rr < a.r_end) out[(r0 + rr) * a.words + w] = word;
    }
  }
}

}  // namespace gm
