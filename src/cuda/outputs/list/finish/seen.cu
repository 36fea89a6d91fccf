// Kernels of seen tables (seen_kernels.h): the value range of an index-like vector and the
// rows of a bitmap's set cells. Both run as one block: their inputs are vectors and bitmaps of
// at most a few thousand words, and one block needs no second pass or atomics.
#include <cub/block/block_reduce.cuh>
#include <cub/block/block_scan.cuh>

#include "cuda/outputs/list/finish/seen_kernels.h"

namespace gamut::cuda::seendev {

namespace {

constexpr int kRangeThreads = 512;
constexpr int kRowsThreads = gm::kSeenWords;  // one word per thread

__device__ __forceinline__ int64_t load_int(const void* data, IntKind kind, int64_t e) {
  switch (kind) {
    case IntKind::Bool: return static_cast<const uint8_t*>(data)[e] != 0 ? 1 : 0;
    case IntKind::U8: return static_cast<const uint8_t*>(data)[e];
    case IntKind::I8: return static_cast<const int8_t*>(data)[e];
    case IntKind::I16: return static_cast<const int16_t*>(data)[e];
    case IntKind::I32: return static_cast<const int32_t*>(data)[e];
    default: return static_cast<const int64_t*>(data)[e];
  }
}

struct MinMax {
  int64_t lo, hi;
};
struct CombineMinMax {
  __device__ MinMax operator()(const MinMax& a, const MinMax& b) const {
    return {a.lo < b.lo ? a.lo : b.lo, a.hi > b.hi ? a.hi : b.hi};
  }
};

__global__ void __launch_bounds__(kRangeThreads)
    range_kernel(const void* data, IntKind kind, int64_t rows, int64_t row_stride, int64_t first, int64_t count,
                 int64_t* out) {
  MinMax m{INT64_MAX, INT64_MIN};
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t e = threadIdx.x; e < count; e += kRangeThreads) {
      const int64_t v = load_int(data, kind, r * row_stride + first + e);
      m.lo = v < m.lo ? v : m.lo;
      m.hi = v > m.hi ? v : m.hi;
    }
  using Reduce = cub::BlockReduce<MinMax, kRangeThreads>;
  __shared__ typename Reduce::TempStorage temp;
  const MinMax all = Reduce(temp).Reduce(m, CombineMinMax());
  if (threadIdx.x == 0) {
    out[0] = all.lo;
    out[1] = all.hi;
  }
}

__global__ void __launch_bounds__(kRowsThreads)
    rows_kernel(const uint32_t* seen, int words, const SeenColumns cols, uint64_t* rows) {
  const int w = int(threadIdx.x);
  uint32_t bits = w < words ? seen[w] : 0u;
  using Scan = cub::BlockScan<uint32_t, kRowsThreads>;
  __shared__ typename Scan::TempStorage temp;
  uint32_t row = 0, total = 0;
  Scan(temp).ExclusiveSum(uint32_t(__popc(bits)), row, total);
  for (; bits != 0u; bits &= bits - 1u, ++row) {
    const int64_t cell = int64_t(w) * 32 + (__ffs(int(bits)) - 1);
    for (int c = 0; c < cols.count; ++c) {
      const SeenColumn& k = cols.col[c];
      const int64_t v = k.lo + (cell / k.stride) % k.span;
      if (k.bytes == 1)
        static_cast<uint8_t*>(k.out)[row] = uint8_t(v);
      else if (k.bytes == 4)
        static_cast<int32_t*>(k.out)[row] = int32_t(v);
      else
        static_cast<int64_t*>(k.out)[row] = v;
    }
  }
  if (w == 0) *rows = total;
}

}  // namespace

cudaError_t value_range(const void* data, IntKind kind, int64_t rows, int64_t row_stride, int64_t first, int64_t count,
                        int64_t* out, cudaStream_t stream) {
  range_kernel<<<1, kRangeThreads, 0, stream>>>(data, kind, rows, row_stride, first, count, out);
  return cudaGetLastError();
}

cudaError_t seen_rows(const uint32_t* seen, int words, const SeenColumns& cols, uint64_t* rows, cudaStream_t stream) {
  if (words < 0 || words > gm::kSeenWords) return cudaErrorInvalidValue;
  rows_kernel<<<1, kRowsThreads, 0, stream>>>(seen, words, cols, rows);
  return cudaGetLastError();
}

}  // namespace gamut::cuda::seendev
