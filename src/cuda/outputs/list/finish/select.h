// Device-side selection for top/bottom lists (device/stages/gamut_select.cuh, its kernels from
// codegen/stage_sources.h): reduces the candidates the main kernel appended to each group's N
// best (plus rows whose rank ties the N-th), on the device, so that the host downloads and
// orders (finalize_list) only those.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/types.h"
#include "cuda/codegen/stage_sources.h"
#include "cuda/runtime.h"
#include "plan/plan.h"

namespace gamut::cuda {

struct SelectInput {
  uint64_t n = 0;                                               // candidates
  const DeviceBuffer* key = nullptr;                            // storage type `key_dtype`
  const DeviceBuffer *b = nullptr, *i = nullptr, *j = nullptr;  // int32
  DType key_dtype = DType::F32;
  bool top = true;
  PerGroup per = PerGroup::None;
  int64_t limit = 0;              // N (> 0)
  int64_t begin = 0, extent = 1;  // of the group axis (per i: rows, per j: columns)
  int64_t groups = 1;             // extent * batch, or 1
  // The main kernel's global thresholds (u32 ranks, one per group; gm::TileSelect), or null:
  // select_small starts from them.
  const DeviceBuffer* threshold = nullptr;
};

// Indices (uint32) of the kept candidates, in no order; `kept` gets their number.
DeviceBuffer select_candidates(const SelectInput& in, uint64_t* kept);

// A global list (per None) of at most gm::kSelSmallCandidates candidates and N <= 2048, with an
// exact sort rank: the whole selection and ordering in one block (gamut_select_small.cuh).
bool small_selection_fits(const SelectInput& in);
// Indices (uint32) of the list's final rows, in the list's order, and `rows` their number
// (min(n, N)); false (nothing kept) where more than the block's room tie at the N-th rank: then
// select_candidates and the row ordering do it.
bool select_small(const SelectInput& in, DeviceBuffer& idx, uint64_t* rows);

// Whether sort_ranks orders keys of this storage type exactly (32 bits or fewer: bool, i32, f32).
bool exact_sort_rank(DType key);
// dst (m int32) = the rank of each of the m kept rows' keys (`key`, gathered), an int that orders
// like finalize_list (smaller = better, -0.0 and 0.0 alike, NaN last): with (b, group, rank,
// other axis) the kept rows sort into the list's order on the device.
void sort_ranks(const SelectInput& in, const DeviceBuffer& key, uint64_t m, DeviceBuffer& dst);

}  // namespace gamut::cuda
