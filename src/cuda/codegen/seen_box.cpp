#include "cuda/codegen/seen_box.h"

#include <algorithm>

#include "cuda/codegen/codegen.h"

namespace gamut::cuda {

namespace {

// Where the range of the vector of `access` over its axis's range in every batch instance comes
// from: computed here for a host vector, asked of the device for a device vector (queued in
// `device`), or nothing (an empty range, a float vector, a device vector without a reader).
struct RangeSource {
  bool known = false;
  std::pair<int64_t, int64_t> range{0, 0};
  long device = -1;  // the queued device vector
};

RangeSource vector_range(const Instance& inst, int access, bool device_reader, std::vector<DeviceVector>& device) {
  const Plan& P = *inst.plan;
  const Access& acc = P.accesses[size_t(access)];
  const size_t op = size_t(acc.operand);
  const AxisRange& r = acc.pattern == Pattern::RowVec ? inst.row : inst.col;
  const NDArray& a = *inst.inputs[op];
  RangeSource out;
  if (r.size() <= 0 || inst.batch <= 0 || is_float(a.dtype) || a.shape.empty()) return out;
  const int64_t len = a.shape.back();
  const int64_t rows = P.batched ? inst.batch : 1;
  if (inst.on_device(op)) {
    if (!device_reader) return out;
    const Instance::DeviceInput& d = inst.device_inputs[op];
    const int64_t row_stride = P.batched && d.strides.size() >= 2 ? d.strides.front() : len;
    out.known = true;
    out.device = long(device.size());
    device.push_back({d.data, a.dtype, rows, row_stride, r.begin, r.size()});
    return out;
  }
  int64_t lo = INT64_MAX, hi = INT64_MIN;
  for (int64_t b = 0; b < rows; ++b) {
    int64_t l = 0, h = 0;
    a.i64_range(b * len + r.begin, r.size(), l, h);
    lo = std::min(lo, l);
    hi = std::max(hi, h);
  }
  out.known = true;
  out.range = {lo, hi};
  return out;
}

}  // namespace

std::vector<std::optional<SeenBox>> seen_boxes(const Instance& inst, const DeviceVectorRange& device_range) {
  const Plan& P = *inst.plan;
  // Every list's columns first, so that the device vectors of all of them take one wait.
  std::vector<std::vector<RangeSource>> sources(P.lists.size());
  std::vector<DeviceVector> device;
  for (size_t l = 0; l < P.lists.size(); ++l) {
    for (int a : seen_table_columns(P, l)) {
      sources[l].push_back(vector_range(inst, a, bool(device_range), device));
      if (!sources[l].back().known) break;
    }
  }
  std::vector<std::pair<int64_t, int64_t>> device_ranges;
  if (!device.empty()) device_ranges = device_range(device);
  std::vector<std::optional<SeenBox>> boxes(P.lists.size());
  for (size_t l = 0; l < P.lists.size(); ++l) {
    const size_t columns = seen_table_columns(P, l).size();
    if (columns == 0 || sources[l].size() != columns || !sources[l].back().known) continue;
    std::vector<std::pair<int64_t, int64_t>> ranges;
    for (const RangeSource& s : sources[l])
      ranges.push_back(s.device >= 0 ? device_ranges.at(size_t(s.device)) : s.range);
    boxes[l] = seen_box_of(ranges);
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
