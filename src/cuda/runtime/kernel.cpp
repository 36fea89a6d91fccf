// Loading cubins and launching kernels through cudart's library API, plus events and sync.
#include <cuda_runtime_api.h>

#include <atomic>
#include <string>

#include "core/error.h"
#include "cuda/runtime.h"
#include "cuda/runtime/internal.h"

namespace gamut::cuda {

// cudaLibrary_t is context-independent: cudart loads it into whichever context is current
// at launch time, and a cudaKernel_t can be passed where cudart takes a function pointer.
struct Kernel::Impl {
  cudaLibrary_t library = nullptr;
  cudaKernel_t kernel = nullptr;
  std::string name;
  std::string key;
  // The dynamic shared memory limit asked for (0: the default), and the devices (bit per
  // ordinal below 64) where it is set: the attribute belongs to a device's context.
  std::atomic<size_t> max_dyn_smem{0};
  std::atomic<uint64_t> smem_set_on{0};
  ~Impl() {
    if (library) cudaLibraryUnload(library);  // no throwing from a destructor
  }
  const void* fn() const { return reinterpret_cast<const void*>(kernel); }
};

Kernel::Kernel(const CompiledModule& module, const std::string& kernel_name)
    : impl_(std::make_unique<Impl>()) {
  detail::require_device();
  impl_->name = kernel_name;
  impl_->key = module.key;
  if (module.cubin.empty()) throw_device_error("module " + module.key + " has no cubin to load");
  detail::check(cudaLibraryLoadData(&impl_->library, module.cubin.data(), nullptr, nullptr, 0,
                                    nullptr, nullptr, 0),
                "loading module " + module.key);
  // Generated kernels are extern "C", so the cubin symbol is the plain name.
  detail::check(cudaLibraryGetKernel(&impl_->kernel, impl_->library, kernel_name.c_str()),
                "kernel '" + kernel_name + "' in module " + module.key);
}

Kernel::~Kernel() = default;

namespace {
void set_smem_attribute(const void* fn, size_t bytes, const std::string& name) {
  detail::check(cudaFuncSetAttribute(fn, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                     static_cast<int>(bytes)),
                "setting " + std::to_string(bytes) + " bytes of dynamic shared memory for '" + name + "'");
}
}  // namespace

void Kernel::set_max_dynamic_smem(size_t bytes) {
  const int dev = current_device();
  set_smem_attribute(impl_->fn(), bytes, impl_->name);
  impl_->max_dyn_smem = bytes;
  impl_->smem_set_on = dev < 64 ? uint64_t(1) << dev : 0;
}

void Kernel::launch(unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                    size_t dyn_smem, void** args) {
  const dim3 grid(gx, gy, gz), block(bx, by, bz);
  // Without the attribute a kernel gets 48 KiB less its static shared memory: a kernel with
  // both, at 48 KiB dynamic, failed to launch (cudaErrorInvalidValue). Asked for once per size.
  if (dyn_smem > impl_->max_dyn_smem) {
    set_max_dynamic_smem(dyn_smem);
  } else if (impl_->max_dyn_smem > 0) {   // first launch on another device (the multi-device runner)
    int dev = 0;
    detail::check(cudaGetDevice(&dev), "cudaGetDevice");
    const uint64_t bit = dev < 64 ? uint64_t(1) << dev : 0;
    if (!(impl_->smem_set_on.load() & bit)) {
      set_smem_attribute(impl_->fn(), impl_->max_dyn_smem, impl_->name);
      impl_->smem_set_on.fetch_or(bit);
    }
  }
  cudaError_t err = cudaLaunchKernel(impl_->fn(), grid, block, args, dyn_smem, static_cast<cudaStream_t>(current_stream()));
  if (err != cudaSuccess) {
    auto dims = [](unsigned x, unsigned y, unsigned z) {
      // Appended piecewise: "(" + to_string(...) trips a GCC 12 -Wrestrict false positive.
      std::string s = "(";
      s += std::to_string(x);
      s += ',';
      s += std::to_string(y);
      s += ',';
      s += std::to_string(z);
      s += ')';
      return s;
    };
    detail::check(err, "launching '" + impl_->name + "' grid " + dims(gx, gy, gz) + " block " +
                           dims(bx, by, bz) + " dynamic smem " + std::to_string(dyn_smem));
  }
}

int Kernel::max_active_blocks_per_sm(int block_threads, size_t dyn_smem) const {
  int blocks = 0;
  detail::check(
      cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, impl_->fn(), block_threads, dyn_smem),
      "occupancy of '" + impl_->name + "'");
  return blocks;
}

void synchronize() {
  detail::require_device();
  // Asynchronous kernel faults (illegal address, trap) surface here.
  detail::check(cudaStreamSynchronize(static_cast<cudaStream_t>(current_stream())), "cudaStreamSynchronize");
}

EventTimer::EventTimer() {
  detail::require_device();
  cudaEvent_t b = nullptr, e = nullptr;
  detail::check(cudaEventCreate(&b), "cudaEventCreate");
  cudaError_t err = cudaEventCreate(&e);
  if (err != cudaSuccess) {
    cudaEventDestroy(b);
    detail::check(err, "cudaEventCreate");
  }
  begin_ = b;
  end_ = e;
}

EventTimer::~EventTimer() {
  if (begin_) cudaEventDestroy(static_cast<cudaEvent_t>(begin_));
  if (end_) cudaEventDestroy(static_cast<cudaEvent_t>(end_));
}

void EventTimer::start() {
  detail::check(cudaEventRecord(static_cast<cudaEvent_t>(begin_), static_cast<cudaStream_t>(current_stream())), "cudaEventRecord");
}

double EventTimer::stop_ms() {
  stop();
  return elapsed_ms();
}

void EventTimer::stop() {
  detail::check(cudaEventRecord(static_cast<cudaEvent_t>(end_), static_cast<cudaStream_t>(current_stream())),
                "cudaEventRecord");
}

double EventTimer::elapsed_ms() {
  auto end = static_cast<cudaEvent_t>(end_);
  detail::check(cudaEventSynchronize(end), "cudaEventSynchronize");
  float ms = 0;
  detail::check(cudaEventElapsedTime(&ms, static_cast<cudaEvent_t>(begin_), end),
                "cudaEventElapsedTime");
  return ms;
}

}  // namespace gamut::cuda
