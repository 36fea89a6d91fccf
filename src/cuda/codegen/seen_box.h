// The value box of a distinct list on a seen table (gm::SeenCells, seen_table_columns): per
// column its first value, its span and the cells per step, row-major (the first column most
// significant, so ascending cells are ascending rows). Which lists get one is decided per run,
// before the kernel is chosen (a plan whose every distinct list has one runs on wgmma). No CUDA
// headers: explain decides as the engine does, from host data.
#pragma once
#include <cstdint>
#include <functional>
#include <optional>
#include <utility>
#include <vector>

#include "bind/instance.h"
#include "cuda/device/core/gamut_constants.cuh"

namespace gamut::cuda {

struct SeenBox {
  std::vector<int64_t> lo, span, stride;  // per column
  int64_t cells = 0;                      // product of the spans, at most kSeenCells
  int64_t words() const { return (cells + 31) / 32; }
};

// The most cells a seen table covers (its shared-memory bitmap, gm::SeenCells).
constexpr int64_t kSeenCells = int64_t(gm::kSeenWords) * 32;

// The box of columns whose values lie in [lo_k, hi_k] (lo_k <= hi_k), or nothing when it has
// more than kSeenCells cells. Spans are computed without overflow (hi - lo may exceed INT64_MAX)
// and multiplied only while the product stays within the limit.
inline std::optional<SeenBox> seen_box_of(const std::vector<std::pair<int64_t, int64_t>>& ranges) {
  if (ranges.empty() || ranges.size() > size_t(gm::kSeenColumns)) return std::nullopt;
  SeenBox box;
  box.cells = 1;
  for (const auto& [lo, hi] : ranges) {
    if (hi < lo) return std::nullopt;
    const uint64_t span = uint64_t(hi) - uint64_t(lo) + 1u;  // 0: the whole 64-bit range
    if (span == 0 || span > uint64_t(kSeenCells) || int64_t(span) * box.cells > kSeenCells) return std::nullopt;
    box.lo.push_back(lo);
    box.span.push_back(int64_t(span));
    box.cells *= int64_t(span);
  }
  box.stride.assign(ranges.size(), 1);
  for (size_t k = ranges.size() - 1; k > 0; --k) box.stride[k - 1] = box.stride[k] * box.span[k];
  return box;
}

// A vector in device memory whose value range is asked for: `rows` rows (batch instances)
// `row_stride` elements apart, elements [first, first + count) of each (count, rows > 0).
struct DeviceVector {
  const void* data;
  DType type;
  int64_t rows, row_stride, first, count;
};
// The smallest and largest value of each vector, in order (one wait for all of them).
using DeviceVectorRange =
    std::function<std::vector<std::pair<int64_t, int64_t>>(const std::vector<DeviceVector>& vectors)>;

// Per list of the plan: the box of its columns' values over the instance's ranges where it may
// take a seen table (seen_table_columns) and the box has at most kSeenCells cells; else none.
// Host vectors are read in place; vectors in device memory through `device_range`, and without
// it they give no box.
std::vector<std::optional<SeenBox>> seen_boxes(const Instance& inst, const DeviceVectorRange& device_range = {});

// True when the plan has distinct lists and every one of them has a box (choose_kernel: wgmma).
bool every_distinct_seen(const Plan& plan, const std::vector<std::optional<SeenBox>>& boxes);

}  // namespace gamut::cuda
