// The CUDA C++ of the stage kernels: thin extern "C" instantiations of the device headers
// (device/stages/) per element type. No CUDA needed: `explain --source` and the golden kernels
// use them without the toolkit; the launchers are stages/ and lists/.
#pragma once
#include <string>

#include "core/types.h"
#include "plan/plan.h"

namespace gamut::cuda {

// Each kind's cache-key schema (compile_cached's extra_key): bumped when what shapes the
// kernels changes beside their source.
inline constexpr const char* kSegmentSumSchema = "segment-sum v1";
inline constexpr const char* kBitPackSchema = "bit-pack v1";
inline constexpr const char* kSelectSchema = "gamut-select-3";
inline std::string k_major_copy_schema(int element_bytes) {
  return "gamut-k-major-copy-2 e" + std::to_string(element_bytes);
}

// The accumulator type of a segment sum over `t`: the stage query's `pd_s` type (loads widen,
// bool counts as i32).
CType segment_sum_acc_type(DType t);
// Kernels segment_sum_tiled and segment_sum_direct for source element type `t`.
std::string segment_sum_source(DType t);
// Kernel bit_pack_tiled for source element type `t` (integer or bool; a float type is a device
// error).
std::string bit_pack_source(DType t);
// Kernel k_major_copy: a 4-, 2- or 1-byte operand copied into 16-byte rows (stages/k_major_copy.h).
std::string k_major_copy_source(int element_bytes);
// The top/bottom selection kernels for a key stored as `key`, top or bottom, grouped by `per`:
// gm_sel_hist, gm_sel_digit, gm_sel_keep, gm_sel_sort_rank (the kept rows' columns are
// gathered by sortdev::gather_columns, src/cuda/outputs/list/finish/sort.h).
std::string select_source(DType key, bool top, PerGroup per);

}  // namespace gamut::cuda
