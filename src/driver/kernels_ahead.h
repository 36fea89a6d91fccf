// A GPU run's kernels compiled ahead on helper threads while the run goes on (the cold first
// call of a query with several kernels: a program's stages, a top/bottom list's selection).
// The run compiles its kernels in order; the helpers take them from the last one back, and
// the in-process cache lets a kernel be compiled once (cuda::compile_ahead): the run waits for
// a helper's compile under way instead of starting its own. A cold kNN call (two norm stages,
// the main kernel, the selection) then takes about its longest compile instead of the sum.
#pragma once
#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "driver/kernel_sources.h"

namespace gamut {

class KernelsAhead {
 public:
  // `kernels` in the order the run compiles them (kernel_sources), for NVRTC's `arch`.
  // `helpers`: threads to start (none when there are fewer than two kernels).
  KernelsAhead(std::vector<KernelSource> kernels, std::string arch, int helpers);
  // Stops the helpers taking kernels and waits for the compiles under way (they cannot be
  // interrupted); what they compiled that the run did not take is then an ordinary memory hit.
  ~KernelsAhead();
  KernelsAhead(const KernelsAhead&) = delete;
  KernelsAhead& operator=(const KernelsAhead&) = delete;
  int helpers() const { return int(threads_.size()); }
  void wait();  // for the helpers to compile every kernel they take (tests)

 private:
  void help();
  std::vector<KernelSource> kernels_;
  std::string arch_;
  std::atomic<size_t> taken_{0};  // kernels the helpers took, from the last one back
  std::atomic<bool> stop_{false};
  std::vector<std::thread> threads_;
};

// The helpers for a run of `p` (or of `inst` where p is null) with `options`, when it runs on
// the current GPU (not in parts over several: the parts choose their own kernels),
// options.compile_ahead allows it, it has two or more kernels and the machine more than one
// core, and GAMUT_COMPILE_AHEAD is not 0; else null. Never throws: what the run will
// report is left to the run.
std::unique_ptr<KernelsAhead> compile_kernels_ahead(const Prepared* p, const Instance& inst, const RunOptions& options);

}  // namespace gamut
