#include "cuda/codegen/seen_box.h"

#include <algorithm>

#include "cuda/codegen/codegen.h"

namespace gamut::cuda {

namespace {

// The smallest and largest value the vector of `access` takes over its axis's range in every
// batch instance; nothing for an empty range, or a device vector without `device_range`.
std::optional<std::pair<int64_t, int64_t>> vector_range(const Instance& inst, int access,
                                                        const DeviceVectorRange& device_range) {
  const Plan& P = *inst.plan;
  const Access& acc = P.accesses[size_t(access)];
  const size_t op = size_t(acc.operand);
  const AxisRange& r = acc.pattern == Pattern::RowVec ? inst.row : inst.col;
  const NDArray& a = *inst.inputs[op];
  if (r.size() <= 0 || inst.batch <= 0 || is_float(a.dtype) || a.shape.empty()) return std::nullopt;
  const int64_t len = a.shape.back();
  const int64_t rows = P.batched ? inst.batch : 1;
  if (inst.on_device(op)) {
    if (!device_range) return std::nullopt;
    const Instance::DeviceInput& d = inst.device_inputs[op];
    const int64_t row_stride = P.batched && d.strides.size() >= 2 ? d.strides.front() : len;
    return device_range(d.data, a.dtype, rows, row_stride, r.begin, r.size());
  }
  int64_t lo = INT64_MAX, hi = INT64_MIN;
  for (int64_t b = 0; b < rows; ++b) {
    int64_t l = 0, h = 0;
    a.i64_range(b * len + r.begin, r.size(), l, h);
    lo = std::min(lo, l);
    hi = std::max(hi, h);
  }
  return std::make_pair(lo, hi);
}

}  // namespace

std::vector<std::optional<SeenBox>> seen_boxes(const Instance& inst, const DeviceVectorRange& device_range) {
  const Plan& P = *inst.plan;
  std::vector<std::optional<SeenBox>> boxes(P.lists.size());
  for (size_t l = 0; l < P.lists.size(); ++l) {
    const std::vector<int> access = seen_table_columns(P, l);
    if (access.empty()) continue;
    std::vector<std::pair<int64_t, int64_t>> ranges;
    for (int a : access) {
      const auto r = vector_range(inst, a, device_range);
      if (!r) break;
      ranges.push_back(*r);
    }
    if (ranges.size() == access.size()) boxes[l] = seen_box_of(ranges);
  }
  return boxes;
}

bool every_distinct_seen(const Plan& plan, const std::vector<std::optional<SeenBox>>& boxes) {
  bool any = false;
  for (size_t l = 0; l < plan.lists.size(); ++l) {
    if (plan.lists[l].mode != ListMode::Distinct) continue;
    if (l >= boxes.size() || !boxes[l]) return false;
    any = true;
  }
  return any;
}

}  // namespace gamut::cuda
