// Operand copies for the tensor-core mainloops (src/cuda/stages/k_major_copy.h): wgmma reads
// tf32 operands only with k contiguous, so f32 X[k, i] / Y[k, j] are copied k-major; device
// operands whose rows are not whole 16-byte chunks (a torch tensor of 4097 bf16 columns) are
// copied with 16-byte rows. Both are dst[b, p, k] = src[b, p, k] for a `p` / `k` stride pair
// of the caller's choice.
#pragma once
#include "gamut_constants.cuh"
#include "gamut_math.cuh"
#include "gamut_stage_args.cuh"

namespace gm {

static_assert(kStageThreads == 256, "the copy is written for 32 x 8 threads");

// Grid: x = chunks of 32 k, y = chunks of 32 p (looping while p remains), z = batch instances.
// A 32 x 32 tile goes through shared memory: read along src's contiguous axis, written along k,
// so both sides are coalesced whichever axis src has contiguous.
// Elem: the element's bits (unsigned for 4 bytes, unsigned short for 2, unsigned char for 1).
template <typename Elem>
GM_DEV void k_major_copy(const KMajorCopyArgs& a) {
  __shared__ Elem tile[32][33];  // (32 p, 32 k), padded: rows and columns hit distinct banks
  const Elem* __restrict__ src = reinterpret_cast<const Elem*>(a.src);
  Elem* __restrict__ dst = reinterpret_cast<Elem*>(a.dst);
  const int tx = int(threadIdx.x % 32), ty = int(threadIdx.x / 32);
  const bool k_fast = a.k_stride == 1;  // src's contiguous axis
  const long long k0 = (long long)blockIdx.x * 32, b = blockIdx.z;
  const Elem* sb = src + b * a.batch_stride;
  Elem* db = dst + b * a.p_extent * a.dst_pitch;
  for (long long p0 = (long long)blockIdx.y * 32; p0 < a.p_extent; p0 += (long long)gridDim.y * 32) {
    __syncthreads();  // the previous tile is written out
#pragma unroll
    for (int r = 0; r < 4; ++r) {
      const int pl = k_fast ? ty + 8 * r : tx, kl = k_fast ? tx : ty + 8 * r;
      const long long p = p0 + pl, k = k0 + kl;
      tile[pl][kl] = p < a.p_extent && k < a.k_extent ? sb[p * a.p_stride + k * a.k_stride] : Elem(0);
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
