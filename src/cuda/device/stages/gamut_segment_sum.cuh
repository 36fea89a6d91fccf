// The segment sum of aggregate push-down (src/cuda/stages/segment_sum.h):
//   out[g, k] (or out[k, g]) = sum over the rows i with index[i] == g of src[i, k] (or src[k, i])
// for source storage type S and sum type A (integers unsigned, so that every add wraps as the
// query's i32 / i64 arithmetic does). The kernels are instantiated per element type by
// src/cuda/codegen/stage_sources.cpp.
#pragma once
#include "gamut_constants.cuh"
#include "gamut_math.cuh"
#include "gamut_stage_args.cuh"

namespace gm {

static_assert(kStageThreads == 256 && kStageTile == 32, "the segment sum is written for 8 warps and 32 x 32 tiles");

// Grid: x = tiles of 32 columns k, y = chunks of chunk_rows rows i. Each step stages a 32 x 32
// tile in shared memory (loads coalesced along whichever axis of src is contiguous); then lane c
// of every warp adds column c of its rows into the warp's copy of sums[g][c]. All lanes of a warp
// share one row, hence one g: no bank conflicts, and warps with their own copy never contend.
// At the end every block adds each non-zero sums[g][c] once into out with a global atomic.
template <class S, class A>
GM_DEV void segment_sum_tiled(const SegmentSumArgs& a) {
  extern __shared__ __align__(16) unsigned char smem[];
  const S* __restrict__ src = reinterpret_cast<const S*>(a.src);
  const int* __restrict__ index = reinterpret_cast<const int*>(a.index);
  A* __restrict__ out = reinterpret_cast<A*>(a.out);
  const int groups = int(a.groups), copies = int(a.copies);
  A* tile = (A*)smem;                                  // [32][33]: padded against bank conflicts
  A* sums = tile + 32 * 33;                            // [copies][groups][32]
  int* gidx = (int*)(sums + (long long)copies * groups * 32);  // [32]: group of each staged row
  const int t = threadIdx.x, c = t & 31, w = t >> 5;
  const long long k0 = a.k_begin + (long long)blockIdx.x * 32;
  const long long r_begin = a.i_begin + (long long)blockIdx.y * a.chunk_rows;
  const long long r_end = r_begin + a.chunk_rows < a.i_end ? r_begin + a.chunk_rows : a.i_end;
  for (int e = t; e < copies * groups * 32; e += 256) sums[e] = 0;
  A* mine = sums + (long long)(w % copies) * groups * 32;
  for (long long i0 = r_begin; i0 < r_end; i0 += 32) {
    __syncthreads();  // the previous tile is consumed (first pass: sums are zeroed)
    if (t < 32) gidx[t] = i0 + t < r_end ? index[i0 + t] : -1;
    for (int q = 0; q < 4; ++q) {
      const int e = t + 256 * q;
      const int r = a.k_contig ? (e >> 5) : (e & 31);
      const int cc = a.k_contig ? (e & 31) : (e >> 5);
      const long long i = i0 + r, k = k0 + cc;
      A v = 0;
      if (i < r_end && k < a.k_end) v = A(widen(src[i * a.src_is + k * a.src_ks]));
      tile[r * 33 + cc] = v;
    }
    __syncthreads();
    for (int r = w; r < 32; r += 8) {
      const int g = gidx[r];
      if (g >= 0) atomicAdd(&mine[g * 32 + c], tile[r * 33 + c]);
    }
  }
  __syncthreads();
  for (int e = t; e < groups * 32; e += 256) {
    const int g = e >> 5, cc = e & 31;
    const long long k = k0 + cc;
    if (k >= a.k_end) continue;
    A s = 0;
    for (int cp = 0; cp < copies; ++cp) s += sums[((long long)cp * groups + g) * 32 + cc];
    // out starts at +0 and sums never produce -0 from +0, so skipping zeros changes nothing.
    if (s != 0 || s != s) atomicAdd(&out[g * a.out_gs + k * a.out_ks], s);
  }
}

// Too many groups for shared memory: one global atomic per element, in src memory order.
template <class S, class A>
GM_DEV void segment_sum_direct(const SegmentSumArgs& a) {
  const S* __restrict__ src = reinterpret_cast<const S*>(a.src);
  const int* __restrict__ index = reinterpret_cast<const int*>(a.index);
  A* __restrict__ out = reinterpret_cast<A*>(a.out);
  const long long rows = a.i_end - a.i_begin, cols = a.k_end - a.k_begin, n = rows * cols;
  for (long long e = (long long)blockIdx.x * 256 + threadIdx.x; e < n; e += (long long)gridDim.x * 256) {
    const long long i = a.i_begin + (a.k_contig ? e / cols : e % rows);
    const long long k = a.k_begin + (a.k_contig ? e % cols : e / rows);
    atomicAdd(&out[(long long)index[i] * a.out_gs + k * a.out_ks], A(widen(src[i * a.src_is + k * a.src_ks])));
  }
}

}  // namespace gm
