// K-major copies of f32 operands for the tf32 wgmma mainloop: wgmma reads tf32 operands only
// with k contiguous in shared memory, and TMA copies boxes as they lie in memory, so an operand
// X[k, i] / Y[k, j] (or one whose rows TMA cannot address) is copied once per run into a
// buffer [batch, p, k] with 16-byte rows (device/stages/gamut_k_major_copy.cuh). The copy costs
// one read and one write of the operand, against the product's 2 M N K operations.
#pragma once
#include <cstdint>

#include "cuda/runtime.h"

namespace gamut::cuda {

// A 4-byte operand in device memory: element (b, p, k) at ptr + 4 (b batch_stride + p p_stride
// + k k_stride); p in [0, p_extent), k in [0, k_extent), b in [0, batch).
struct KMajorSource {
  uint64_t ptr = 0;
  int64_t p_stride = 0, k_stride = 1, batch_stride = 0;
  int64_t p_extent = 0, k_extent = 0, batch = 1;
};

// The buffer a copy needs and its row pitch (elements, whole 16-byte chunks).
int64_t k_major_pitch(const KMajorSource& s);
size_t k_major_bytes(const KMajorSource& s);  // throws a device error where it would overflow

// Launches the copy of `s` into `dst` (k_major_bytes(s) bytes) on the current stream.
void k_major_copy(const KMajorSource& s, void* dst);

}  // namespace gamut::cuda
