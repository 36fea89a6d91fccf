// A GPU run that was one launch of one kernel, kept so that a repeated call with the same
// signature launches it again without choosing, binding or planning (the library's launch
// records, api/launch_records.h). Plain data: no CUDA headers (built with and without CUDA).
#pragma once
#include <cstdint>
#include <vector>

#include "plan/plan.h"

namespace gamut::cuda {

struct LaunchRecord {
  const void* kernel = nullptr;  // the loaded cuda::Kernel (loaded kernels stay for the process)
  unsigned blocks = 0, threads = 0;
  size_t smem_bytes = 0;
  std::vector<uint64_t> words;  // the kernel's argument as launched (ArgLayout)
  // The words that hold an operand's device pointer: words[slot] = operand's data + delta.
  struct InputSlot {
    int operand = -1;  // Plan::operands
    int slot = -1;
    int64_t delta = 0;
  };
  std::vector<InputSlot> inputs;
  // TMA-fed kernels: the operands' tensor maps (16 words from `slot`), their address likewise.
  std::vector<InputSlot> maps;
  // Per dense output: the word of its pointer, the word of its vector stores (-1: none; they
  // need 16-byte aligned rows) and the identity it starts from, where the kernel does not store
  // every element.
  struct OutputSlot {
    int ptr = -1;
    int vec = -1;
    bool fill = false;
    StoreOp op = StoreOp::Assign;
    CType type = CType::F32;
    int64_t elements = 0;  // filled
  };
  std::vector<OutputSlot> outputs;
};

// The record's launch on the current device and `stream`: the operands' pointers (per
// Plan::operands; null for one the kernel does not read) and the outputs' memory (per dense
// output) written into a copy of its words, the outputs' starting values, the kernel. Nothing
// waits.
void replay_launch(const LaunchRecord& r, const std::vector<const void*>& operands, const std::vector<void*>& outputs,
                   void* stream);

}  // namespace gamut::cuda
