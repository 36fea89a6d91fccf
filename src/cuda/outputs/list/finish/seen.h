// Distinct lists on a seen table (gm::SeenCells): the value range of vectors in device memory
// (what codegen's seen_boxes needs for a caller's device arrays), and the list's rows from the
// bitmap the kernel set. The rows come out distinct and in ascending order: the list is final.
#pragma once
#include <vector>

#include "cuda/codegen/seen_box.h"
#include "cuda/runtime.h"

namespace gamut::cuda {

// seen_boxes' reader of device vectors: one small kernel per vector and one copy (one wait) for all.
DeviceVectorRange device_vector_range();

// The rows of the set cells of `seen` (box.words() words), in ascending cell order, into `out`
// (a buffer per column, storage types `types`); returns how many. `count` is scratch.
uint64_t seen_rows(const DeviceBuffer& seen, const SeenBox& box, const std::vector<DType>& types,
                   std::vector<DeviceBuffer>& out, DeviceBuffer& count);

}  // namespace gamut::cuda
