// The k-major copy of an f32 operand for the tf32 wgmma mainloop (src/cuda/stages/k_major_copy.h):
// wgmma reads tf32 operands only with k contiguous, so X[k, i] / Y[k, j] (and operands whose rows
// TMA cannot address) are copied once per run into dst[b, p, k], rows 16-byte aligned.
#pragma once
#include "gamut_constants.cuh"
#include "gamut_math.cuh"
#include "gamut_stage_args.cuh"

namespace gm {

static_assert(kStageThreads == 256, "the copy is written for 32 x 8 threads");

// Grid: x = chunks of 32 k, y = chunks of 32 p (looping while p remains), z = batch instances.
// A 32 x 32 tile goes through shared memory: read along src's contiguous axis, written along k,
// so both sides are coalesced whichever axis src has contiguous.
GM_DEV void k_major_copy(const KMajorCopyArgs& a) {
  __shared__ unsigned tile[32][33];  // (32 p, 32 k), padded: rows and columns hit distinct banks
  const unsigned* __restrict__ src = reinterpret_cast<const unsigned*>(a.src);
  unsigned* __restrict__ dst = reinterpret_cast<unsigned*>(a.dst);
  const int tx = int(threadIdx.x % 32), ty = int(threadIdx.x / 32);
  const bool k_fast = a.k_stride == 1;  // src's contiguous axis
  const long long k0 = (long long)blockIdx.x * 32, b = blockIdx.z;
  const unsigned* sb = src + b * a.batch_stride;
  unsigned* db = dst + b * a.p_extent * a.dst_pitch;
  for (long long p0 = (long long)blockIdx.y * 32; p0 < a.p_extent; p0 += (long long)gridDim.y * 32) {
    __syncthreads();  // the previous tile is written out
#pragma unroll
    for (int r = 0; r < 4; ++r) {
      const int pl = k_fast ? ty + 8 * r : tx, kl = k_fast ? tx : ty + 8 * r;
      const long long p = p0 + pl, k = k0 + kl;
      tile[pl][kl] = p < a.p_extent && k < a.k_extent ? sb[p * a.p_stride + k * a.k_stride] : 0u;
    }
    __syncthreads();
#pragma unroll
    for (int r = 0; r < 4; ++r) {
      const long long p = p0 + ty + 8 * r, k = k0 + tx;
      if (p < a.p_extent && k < a.k_extent) db[p * a.dst_pitch + k] = tile[ty + 8 * r][tx];
    }
  }
}

}  // namespace gm
