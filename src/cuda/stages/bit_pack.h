// The bit-pack stages of the or-and rewrite on the GPU (rewrite/bit_pack_stage.h): each warp
// turns 32 reduction steps of one row into one word with a ballot. The CPU loop
// (cpu/bit_pack.h) is the definition this kernel must match.
#pragma once
#include <string>
#include <vector>

#include "core/array.h"
#include "cuda/codegen/stage_sources.h"
#include "rewrite/bit_pack_stage.h"

namespace gamut::cuda {

struct BitPackStats {
  double kernel_ms = 0;            // memset + launch, CUDA events
  double compile_ms = 0;
  std::string cache_hit;           // cache_hit_name() ("" when nothing ran)
  std::vector<double> runs_ms;     // one per timed repetition
};

// Run one stage on the GPU; the result is what bit_pack_cpu gives. repeats > 0: one untimed
// warm-up and `repeats` timed runs. Throws Error(ExitCode::Device) without a device.
NDArray bit_pack(const NDArray& src, const BitPack& stage, int repeats = 0, BitPackStats* stats = nullptr);

}  // namespace gamut::cuda
