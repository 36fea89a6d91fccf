// What `gamut explain --source` shows: the CUDA source of every kernel a bound query runs on the
// GPU, with the tile and code variants `run` picks for the bound sizes. No device needed.
#pragma once
#include <cstddef>
#include <string>
#include <vector>

#include "cuda/gpu_engine.h"
#include "driver/pipeline.h"

namespace gamut {

struct KernelSource {
  std::string name;    // "main", "select-LIST", "stage2", "stage3-main", ...: unique per query
  std::string title;   // one comment line: what the kernel is and, for the main kernel, its tile
  std::string source;  // the CUDA C++ NVRTC compiles
  std::string schema;  // its cache key's extra part (cuda::compile_cached's extra_key)
};

// The kernels of `p` in the order a run compiles them on `target` with `options` (its tile, masked_joins,
// f32_math, seen_tables and arch): the main kernel as run_gpu chooses it (cuda::gpu_kernel_spec,
// its title naming the spec's label, which run statistics report as the tile), the k-major copy
// of f32 operands it reads under tf32 / tf32x3 (launched before it), the top/bottom selection
// after it, and for a rewritten program (aggregate push-down, bit-packed or-and) each
// stage's kernels. A stage that reads an earlier stage's output binds arrays of its type and
// extents filled with zeros: data-dependent variants of a stage's kernel (packed 16-bit steps)
// assume that its inputs fit them. A program on device inputs plans its stages as execute() does
// there (no bound rewrites).
std::vector<KernelSource> kernel_sources(const Prepared& p, const cuda::KernelTarget& target,
                                         const cuda::GpuRunOptions& options);
// The kernels of one bound instance (a query that is not a program).
std::vector<KernelSource> kernel_sources(const Instance& inst, const cuda::KernelTarget& target,
                                         const cuda::GpuRunOptions& options);
// The same on an sm_90a device of `sm_count` SMs and `smem_per_block` bytes of shared memory per
// block, with `tile` ("" or --tile's text), `masked_joins` and `f32_math`.
std::vector<KernelSource> kernel_sources(const Prepared& p, int sm_count, size_t smem_per_block,
                                         const std::string& tile = "", bool masked_joins = false,
                                         F32Math f32_math = F32Math::Ieee);

// The device `explain` chooses kernels for: the current one, or without one an H100 / H200
// (cuda::KernelTarget's defaults).
cuda::KernelTarget explained_target();

}  // namespace gamut
