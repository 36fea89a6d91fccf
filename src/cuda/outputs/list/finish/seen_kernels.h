// Device kernels behind seen.h, compiled by nvcc (src/cuda/outputs/list/finish/seen.cu). Plain pointers and
// CUDA error codes only: seen.cpp owns the memory and turns errors into gamut errors.
#pragma once
#include <cuda_runtime_api.h>

#include <cstdint>

#include "cuda/device/core/gamut_constants.cuh"

namespace gamut::cuda::seendev {

// The element types of an integer vector.
enum class IntKind : int { Bool, U8, I8, I16, I32, I64 };

// out[0], out[1] = the smallest and largest value (as int64) of elements first .. first +
// count - 1 of each of `rows` rows, row_stride elements apart (count > 0, rows > 0).
cudaError_t value_range(const void* data, IntKind kind, int64_t rows, int64_t row_stride, int64_t first, int64_t count,
                        int64_t* out, cudaStream_t stream);

// One list column of a seen table's rows: value = lo + (cell / stride) % span, stored in
// `bytes` (1: bool or not, 4: i32, 8: i64) per row.
struct SeenColumn {
  void* out = nullptr;
  int64_t lo = 0, span = 1, stride = 1;
  int bytes = 4;
};
struct SeenColumns {
  SeenColumn col[gm::kSeenColumns];
  int count = 0;
};

// The rows of the set cells of `seen` (words <= kSeenWords) in ascending cell order, and their
// number to *rows (device memory). One block.
cudaError_t seen_rows(const uint32_t* seen, int words, const SeenColumns& cols, uint64_t* rows, cudaStream_t stream);

}  // namespace gamut::cuda::seendev
