// Operand copies for the tensor-core mainloops, made once per run into a buffer [batch, p, k]
// with 16-byte rows (device/stages/gamut_k_major_copy.cuh; engine/operand_copies.h decides):
// - f32 operands for tf32 / tf32x3: wgmma reads tf32 only with k contiguous in shared memory and
//   TMA copies boxes as they lie in memory, so X[k, i] / Y[k, j] (or an operand whose rows TMA
//   cannot address) is copied k-major;
// - tensor-core operands in device memory whose rows are not whole 16-byte chunks (4097 bf16
//   columns: 8194-byte rows; K = 1023; a start off 16 bytes): copied as they lie (p = the slow
//   axis, k = the contiguous one), only re-pitched, so that TMA or the cp.async loaders read
//   them in 16-byte chunks instead of element by element (bench/unaligned_inputs.py: i8 4097^3
//   ran 5.4x the time of 4096^3, a bf16 kNN at K = 1023 3.6x that at 1024).
// A copy costs one read and one write of the operand, against the product's 2 M N K operations.
#pragma once
#include <cstdint>

#include "cuda/runtime.h"

namespace gamut::cuda {

// An operand in device memory: element (b, p, k) at ptr + element_bytes (b batch_stride +
// p p_stride + k k_stride); p in [0, p_extent), k in [0, k_extent), b in [0, batch).
struct KMajorSource {
  uint64_t ptr = 0;
  int64_t p_stride = 0, k_stride = 1, batch_stride = 0;
  int64_t p_extent = 0, k_extent = 0, batch = 1;
  int element_bytes = 4;  // 4, 2 or 1
};

// The buffer a copy needs and its row pitch (elements, whole 16-byte chunks).
int64_t k_major_pitch(const KMajorSource& s);
size_t k_major_bytes(const KMajorSource& s);  // throws a device error where it would overflow

// Launches the copy of `s` into `dst` (k_major_bytes(s) bytes) on the current stream.
void k_major_copy(const KMajorSource& s, void* dst);

}  // namespace gamut::cuda
