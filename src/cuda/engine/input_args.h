// The generated kernel's input words (ArgLayout): the axis ranges, each access's operand
// (pointer, row pitch, batch stride, aligned chunks), the parameters, and for a key-grouped join
// the gathered operands and its tables. What the words point to lives in InputArgs for the run.
#pragma once
#include <cstdint>
#include <vector>

#include "bind/instance.h"
#include "cuda/codegen/codegen.h"
#include "cuda/codegen/join_groups.h"
#include "cuda/engine/operand_copies.h"
#include "cuda/runtime.h"

namespace gamut::cuda {

struct InputArgs {
  std::vector<DeviceBuffer> uploads;       // per operand: gamut's copy of a host input (or none)
  std::vector<DeviceBuffer> join_buffers;  // grouped joins: gathered operands, maps, tile table
  OperandCopies copies;                    // tensor-core operands copied before every launch
};

// Uploads the host inputs and writes every input word of `w` (sized for the layout). `groups`:
// the key groups of a grouped join (CodegenOptions::grouped_join), else null. `tiles`: the
// launch's tiles per batch instance (no operand copies for an empty launch).
void bind_inputs(const Instance& inst, const KernelSpec& spec, const KernelInfo& info, const JoinGroups* groups,
                 int64_t tiles, std::vector<uint64_t>& w, InputArgs& args);

}  // namespace gamut::cuda
