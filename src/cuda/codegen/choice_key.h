// What a kernel choice (gpu_kernel_spec) reads, as one comparable string: a run whose key equals
// an earlier run's of the same plan gets that run's KernelSpec from the kernel memo instead of
// choosing again (the choice, the tuned table's lookup and the variant's names cost ~2.5 us of a
// small call's host time on an H200 host; issue 39's call overhead). Only for instances whose
// inputs are all in device memory: the choice reads the values of host inputs (packed 16-bit
// tropical steps where the sums fit), which the key does not hold.
#pragma once
#include <string>

#include "bind/instance.h"
#include "cuda/gpu_engine.h"

namespace gamut::cuda {

// The instance's extents, its inputs' types, shapes, strides, where they live and their
// addresses modulo 256 (alignment decides vector and TMA loads), its parameters and list limits,
// the options a choice reads, the device, the tuned tables' generation, and the environment's
// GAMUT_ variables (the kernel cache folder, the code generator's experiment switches), HOME and
// XDG_CACHE_HOME.
std::string choice_key(const Instance& inst, const GpuRunOptions& options, int device);

// What of the process a choice reads, appended to `key`: the tuned tables' generation and those
// environment variables (the library's launch records key on it too).
void append_choice_context(std::string& key);

}  // namespace gamut::cuda
