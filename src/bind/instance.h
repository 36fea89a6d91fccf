// A plan bound to data: everything an engine needs to run, already validated.
//
// Binding (bind.cpp) resolves axis ranges, checks every operand's shape against its patterns,
// checks index vectors (no negative values, none at or above the output extent), computes the
// output shapes and the `top N` limits. Engines may therefore index without bounds checks.
#pragma once
#include <cstdint>
#include <vector>

#include "core/array.h"
#include "plan/plan.h"

namespace gamut {

struct AxisRange {
  int64_t begin = 0, end = 0;      // half-open; end >= begin
  int64_t size() const { return end - begin; }
};

struct Instance {
  const Plan* plan = nullptr;
  AxisRange row, col, red;
  int64_t batch = 1;               // number of instances (1 when the plan has no batch axis)
  std::vector<const NDArray*> inputs;   // per Plan::operands; C order, dtype == operand dtype
  // per Plan::params: I64 when the bound text is an integer, else F64. Engines convert with
  // convert_scalar() to the type of the Param expression that reads it.
  std::vector<Scalar> params;
  std::vector<std::vector<int64_t>> dense_shapes;  // per Plan::dense (includes batch dim)
  std::vector<int64_t> list_limits;     // per Plan::lists: N of top/bottom (0 otherwise)
  // Inputs that stay in device memory (the library binds its callers' device arrays in place):
  // empty, or one per Plan::operands, `data` null for an input on the host. Such an input's
  // NDArray holds its dtype and shape, and bytes the host never reads. Only the GPU engine runs
  // an instance that has them; strides count elements, the last is 1.
  struct DeviceInput {
    const void* data = nullptr;
    std::vector<int64_t> strides;
  };
  std::vector<DeviceInput> device_inputs;
  bool on_device(size_t operand) const { return operand < device_inputs.size() && device_inputs[operand].data; }

  const AxisRange& range(AxisRole r) const {
    return r == AxisRole::Row ? row : r == AxisRole::Col ? col : red;
  }
};

// What a run produces: one array per Plan::dense, one table per Plan::lists.
struct Results {
  std::vector<NDArray> dense;
  std::vector<Table> lists;
};

}  // namespace gamut
