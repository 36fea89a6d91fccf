// What `gamut explain --source` shows: the CUDA source of every kernel a bound query runs on the
// GPU, with the tile and code variants `run` picks for the bound sizes. No device needed.
#pragma once
#include <cstddef>
#include <string>
#include <vector>

#include "driver/pipeline.h"

namespace gamut {

struct KernelSource {
  std::string name;    // "main", "select-LIST", "stage2", "stage3-main", ...: unique per query
  std::string title;   // one comment line: what the kernel is and, for the main kernel, its tile
  std::string source;  // the CUDA C++ NVRTC compiles
};

// The kernels of `p` in the order they run, for a device of `sm_count` SMs and `smem_per_block`
// bytes of shared memory per block: the main kernel (tile and variants as run_gpu picks them;
// `tile` as --tile forces one), the top/bottom selection after it, and for a rewritten program
// (aggregate push-down, bit-packed or-and) each stage's kernels. A stage that reads an earlier
// stage's output binds arrays of its type and extents filled with zeros: data-dependent
// variants of a stage's kernel (packed 16-bit steps) assume that its inputs fit them.
std::vector<KernelSource> kernel_sources(const Prepared& p, int sm_count, size_t smem_per_block,
                                         const std::string& tile = "", bool masked_joins = false,
                                         F32Math f32_math = F32Math::Ieee);

}  // namespace gamut
