// The dense outputs of a GPU run: their device memory and argument words, their starting
// values (spec section 6: the identity of each output's store operator, none for projections
// the kernel writes everywhere), and the arrays they come back as.
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include "bind/instance.h"
#include "cuda/codegen/kernel_args.h"
#include "cuda/outputs/output_kind.h"
#include "cuda/runtime.h"
#include "plan/plan.h"

namespace gamut::cuda {

// One element of the identity of `op` in output type t, as stored.
std::vector<std::byte> identity_element(StoreOp op, CType t);
// `elements` identities of `op` into device memory at buf, in stream order.
void fill_identity(void* buf, StoreOp op, CType t, int64_t elements);
// A projection that the kernel stores at every element of its shape needs no identity fill
// first (one launch less per call).
bool written_everywhere(const Instance& inst, size_t d);

// The caller's device memory for dense output d (GpuRunOptions::dense_output).
using DenseOutputFn = std::function<void*(size_t d, size_t bytes)>;

// The dense outputs of one run. gamut's own are padded like the inputs (rows of whole 4-element
// chunks, so that row stores can be 16 bytes wide) and come back to the host; the caller's
// (`caller_memory`) are C order and stay on the device, viewed by the results. Their steps in a
// run are OutputBuffers' (outputs/output_kind.h); they never overflow.
class DeviceDenseOutputs final : public OutputBuffers {
 public:
  DeviceDenseOutputs(const Instance& inst, const DenseOutputFn* caller_memory);
  // The outputs' words: pointer, strides per index position, vector stores, elements.
  void bind(const ArgLayout& layout, std::vector<uint64_t>& w) const override;
  // Every output that needs it set to its identity, in stream order (before each launch).
  void before_launch() override;
  // The outputs as the run's results (Results::dense): downloaded, or views of the caller's
  // memory; a data error instead where a computed index fell out of range (computed_index.h).
  void collect(Results& res) override;
  // Output d's elements (padded rows), and whether it starts from its identity (a launch record
  // replays the fill: cuda/launch_record.h).
  int64_t elements(size_t d) const { return rows_[d] * pitch_[d]; }
  bool needs_fill(size_t d) const { return needs_fill_[d]; }
  // Computed output indices: the kernel counts keys out of range, which collect() checks.
  bool counts_key_misses() const { return key_slots_ > 0; }

 private:
  const Instance& inst_;
  bool caller_memory_;
  std::vector<DeviceBuffer> buffers_;  // gamut's own memory, per output
  std::vector<void*> ptr_;             // where output d lies
  std::vector<int64_t> pitch_, rows_;  // elements per row in memory, rows (all but the last extent)
  std::vector<bool> needs_fill_;       // not written_everywhere
  DeviceBuffer misses_;                // gm::KeyMisses per key slot (computed output indices)
  size_t key_slots_ = 0;
};

}  // namespace gamut::cuda
