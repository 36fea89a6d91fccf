// Copies of tensor-core operands that run_gpu makes before the kernel (stages/k_major_copy.h):
// k-major copies of f32 operands for tf32 / tf32x3 wgmma, and re-pitched copies (16-byte rows)
// of device operands whose start or strides are off 16 bytes, on every tensor-core mainloop.
// They replace the operands' kernel argument words; their time is the query's (made again
// before every timed repetition).
#pragma once
#include <cstdint>
#include <vector>

#include "bind/instance.h"
#include "cuda/codegen/codegen.h"
#include "cuda/runtime.h"
#include "cuda/stages/k_major_copy.h"
#include "plan/math_choice.h"

namespace gamut::cuda {

// The first index, along the dimension contiguous in memory, that a tile operand's chunks start at.
int64_t contiguous_begin(const Instance& inst, Pattern p);

struct OperandCopies {
  std::vector<KMajorSource> sources;
  std::vector<DeviceBuffer> buffers;
  void run() const;  // launches every copy on the current stream
  // Copies `src`; the operand's words (pointer, row pitch, batch stride) become the copy's.
  void add(const KMajorSource& src, uint64_t& ptr, int64_t& ld, int64_t& batch_stride);
  // The operand as it lies (rows along its slow axis, `cols` contiguous), with 16-byte rows.
  void add_repitched(uint64_t& ptr, int64_t& ld, int64_t& batch_stride, int64_t rows, int64_t cols, int64_t batch,
                     int element_bytes);
};

// Every tensor-core kernel (`tma`: CodegenOptions::tma), first: re-pitched copies of device
// operands off 16 bytes; their words in `w` become the copies'.
void repitch_operands(const Instance& inst, const MathChoice& m, bool tma, const ArgLayout& L, std::vector<uint64_t>& w,
                      OperandCopies& copies);
// TMA-fed kernels, then: the tensor maps from the operands' words in `w`, with the k-major
// copies of f32 operands that tf32 / tf32x3 wgmma need. cluster 2 (KernelInfo::cluster): the
// column operand's k-contiguous boxes hold tile.bn / 2 rows (each block loads one half).
void encode_operand_maps(const Instance& inst, const MathChoice& m, const TileConfig& tile, const ArgLayout& L,
                         std::vector<uint64_t>& w, OperandCopies& copies, int cluster = 1);
// An upper bound of the copies' device memory (both operands copied), for the memory check.
int64_t operand_copies_bytes(const Instance& inst, const MathChoice& m);

}  // namespace gamut::cuda
