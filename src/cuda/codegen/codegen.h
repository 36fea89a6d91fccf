// Plan -> CUDA C++ for NVRTC: what the host needs to launch the generated kernel.
// No CUDA headers: built with and without the CUDA backend.
#pragma once
#include <cstddef>
#include <string>
#include <vector>

#include "cuda/codegen/kernel_args.h"
#include "cuda/gpu_engine.h"
#include "plan/plan.h"

namespace gamut::cuda {

struct KernelInfo {
  ArgLayout args;
  int threads = 0;        // block size (1-d)
  size_t smem_bytes = 0;  // dynamic shared memory per block
};

// Everything the host needs to launch the kernel generate_source(plan, tile, options) renders.
// Throws Error(ExitCode::Query) for a plan the generator does not support.
KernelInfo kernel_info(const Plan& plan, const TileConfig& tile, const CodegenOptions& options = {});

// The index positions of dense output d as the kernel and the CPU engine address it: the
// target's, with the batch axis prepended when the plan is batched and the target omits it.
std::vector<OutIndex> output_index(const Plan& plan, int d);

// True when project output d is stored in runs along j (its last index is the column axis).
bool output_runs_along_j(const Plan& plan, int d);

}  // namespace gamut::cuda
