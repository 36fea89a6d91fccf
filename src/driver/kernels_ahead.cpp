#include "driver/kernels_ahead.h"

#include <algorithm>
#include <cstdlib>

#include "cuda/gpu_engine.h"
#include "cuda/runtime.h"

namespace gamut {

KernelsAhead::KernelsAhead(std::vector<KernelSource> kernels, std::string arch, int helpers)
    : kernels_(std::move(kernels)), arch_(std::move(arch)) {
  // The run compiles the first kernel itself: helpers take the others.
  const int n = std::min<int>(helpers, int(kernels_.size()) - 1);
  for (int h = 0; h < n; ++h) {
    try {
      threads_.emplace_back([this] { help(); });
    } catch (...) {
      break;  // (no thread to be had, std::system_error: the run compiles what the helpers leave)
    }
  }
}

void KernelsAhead::wait() {
  for (std::thread& t : threads_)
    if (t.joinable()) t.join();
}

KernelsAhead::~KernelsAhead() {
  stop_ = true;
  wait();
  cuda::CompileOptions co;
  co.arch = arch_;
  try {
    for (const KernelSource& k : kernels_) cuda::claim_compiled_ahead(k.source, co, k.schema);
  } catch (...) {
    // (Only the statistics of a later call of the same kernel are at stake.)
  }
}

void KernelsAhead::help() {
  cuda::CompileOptions co;
  co.arch = arch_;
  for (size_t t = taken_++; t + 1 < kernels_.size() && !stop_; t = taken_++) {
    const KernelSource& k = kernels_[kernels_.size() - 1 - t];
    try {
      cuda::compile_ahead(k.source, co, k.schema);
    } catch (...) {
      // The run compiles it again and reports the error where it belongs.
    }
  }
}

std::unique_ptr<KernelsAhead> compile_kernels_ahead(const Prepared* p, const Instance& inst,
                                                    const RunOptions& options) {
  if (!options.compile_ahead || options.backend == Backend::Cpu || !options.devices.empty()) return nullptr;
  // GAMUT_COMPILE_AHEAD=0: the run compiles every kernel itself (bench/tc_cold_compile.py's A/B).
  if (const char* e = std::getenv("GAMUT_COMPILE_AHEAD"); e && std::string(e) == "0") return nullptr;
  const int cores = int(std::thread::hardware_concurrency());
  if (cores < 2) return nullptr;
  try {
    if (!cuda::gpu_available(nullptr)) return nullptr;
    // The target and options as the run takes them, on this thread (the current device is the
    // calling thread's).
    const cuda::KernelTarget target = cuda::current_kernel_target();
    const cuda::GpuRunOptions go = gpu_run_options(options);
    std::vector<KernelSource> kernels = p ? kernel_sources(*p, target, go) : kernel_sources(inst, target, go);
    if (kernels.size() < 2) return nullptr;
    const std::string arch = go.arch.empty() ? target.arch : go.arch;
    return std::make_unique<KernelsAhead>(std::move(kernels), arch, cores - 1);
  } catch (...) {
    return nullptr;
  }
}

}  // namespace gamut
