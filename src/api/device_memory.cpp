#include "api/device_memory.h"

#include <string>

#include "core/error.h"
#include "cuda/runtime.h"

#if GAMUT_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

namespace gamut::api {

#if GAMUT_HAVE_CUDA

namespace {

void check(cudaError_t err, const std::string& what) {
  if (err == cudaSuccess) return;
  cudaGetLastError();
  throw_device_error(what + ": " + cudaGetErrorName(err) + ": " + cudaGetErrorString(err));
}

void require_device() {
  std::string why;
  if (!cuda::device_available(&why)) throw_device_error(why);
}

}  // namespace

void copy_bytes(void* dst, const void* src, size_t bytes, void* stream, bool wait) {
  if (bytes == 0) return;
  require_device();
  auto s = static_cast<cudaStream_t>(stream);
  check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, s), "copying " + std::to_string(bytes) + " bytes");
  if (wait) check(cudaStreamSynchronize(s), "waiting for a copy");
}

void synchronize_stream(void* stream) {
  require_device();
  check(cudaStreamSynchronize(static_cast<cudaStream_t>(stream)), "waiting for the run's device work");
}

DeviceAllocation device_alloc(size_t bytes, int device_id, void* stream) {
  require_device();
  int current = 0;
  check(cudaGetDevice(&current), "cudaGetDevice");
  if (current != device_id) check(cudaSetDevice(device_id), "cudaSetDevice(" + std::to_string(device_id) + ")");
  // cudaMalloc / cudaFree, not stream-ordered: the caller's stream may be gone when the last
  // owner drops the memory. (Framework users give an Allocator instead.)
  (void)stream;
  void* p = nullptr;
  cudaError_t err = cudaMalloc(&p, bytes ? bytes : 1);
  if (current != device_id) cudaSetDevice(current);
  if (err != cudaSuccess) {
    cudaGetLastError();
    size_t free_b = 0, total_b = 0;
    cudaMemGetInfo(&free_b, &total_b);
    throw_device_error("out of device memory: " + std::to_string(bytes) + " bytes asked for an output, " +
                       std::to_string(free_b) + " free");
  }
  DeviceAllocation a;
  a.data = p;
  a.owner = std::shared_ptr<void>(p, [](void* q) { cudaFree(q); });
  return a;
}

#else

void copy_bytes(void*, const void*, size_t bytes, void*, bool) {
  if (bytes) throw_device_error("an array in device memory, but this build has no CUDA");
}

void synchronize_stream(void*) {}

DeviceAllocation device_alloc(size_t, int, void*) {
  throw_device_error("device memory for an output, but this build has no CUDA");
}

#endif

Allocation output_memory(const Options& options, Device device, DType t, const std::vector<int64_t>& shape,
                         size_t bytes, const std::string& what) {
  Allocation a;
  if (options.allocator) {
    a = options.allocator(t, shape, device);
  } else {
    DeviceAllocation m = device_alloc(bytes, device.id, options.stream);
    a = Allocation{m.data, m.owner};
  }
  if (!a.data && bytes) throw_device_error("the output allocator returned no memory for " + what);
  return a;
}

}  // namespace gamut::api
