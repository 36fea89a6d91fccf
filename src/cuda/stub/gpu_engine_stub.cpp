// gpu_engine.h for a build without CUDA (GAMUT_CUDA=OFF): no device. Code generation and
// tile choice (src/cuda/codegen/) are compiled in this build too.
#include "core/error.h"
#include "cuda/gpu_engine.h"

namespace gamut::cuda {

bool gpu_available(std::string* why) {
  if (why) *why = "built without CUDA";
  return false;
}

std::shared_ptr<void> new_kernel_memo() { return nullptr; }

KernelTarget current_kernel_target() {
  throw Error(ExitCode::Device, "device error: no GPU backend: built without CUDA");
}
TunedDevice current_tuned_device() { throw Error(ExitCode::Device, "device error: no GPU backend: built without CUDA"); }

void replay_launch(const LaunchRecord&, const std::vector<const void*>&, const std::vector<void*>&, void*) {
  throw Error(ExitCode::Device, "device error: no GPU backend: built without CUDA");
}

Results run_gpu(const Instance&, const GpuRunOptions&, GpuRunStats*) {
  throw Error(ExitCode::Device, "device error: no GPU backend: built without CUDA");
}

}  // namespace gamut::cuda
