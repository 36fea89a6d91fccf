// K-major copies (k_major_copy.h): the kernel of device/stages/gamut_k_major_copy.cuh, compiled
// once per architecture and kept loaded.
#include "cuda/stages/k_major_copy.h"

#include <algorithm>
#include <map>
#include <memory>
#include <mutex>

#include "core/error.h"
#include "core/sizes.h"
#include "cuda/codegen/stage_sources.h"
#include "cuda/device/core/gamut_constants.cuh"
#include "cuda/device/stages/gamut_stage_args.cuh"

namespace gamut::cuda {

namespace {

Kernel& copy_kernel(int element_bytes) {
  static std::mutex mu;
  static std::map<std::string, std::unique_ptr<Kernel>> loaded;
  const DeviceInfo& dev = device();
  CompileOptions co;
  co.arch = arch_for(dev.cc_major, dev.cc_minor);
  const std::string schema = k_major_copy_schema(element_bytes);
  std::lock_guard<std::mutex> lock(mu);
  auto& k = loaded[co.arch + " " + schema];
  if (!k) k = std::make_unique<Kernel>(compile_cached(k_major_copy_source(element_bytes), co, schema), "k_major_copy");
  return *k;
}

}  // namespace

int64_t k_major_pitch(const KMajorSource& s) {
  const int64_t q = 16 / std::max(1, s.element_bytes);  // elements of a 16-byte chunk
  return (std::max<int64_t>(s.k_extent, 1) + q - 1) / q * q;
}

size_t k_major_bytes(const KMajorSource& s) {
  const int64_t rows = size_mul_or_throw(std::max<int64_t>(s.batch, 1), s.p_extent, "a k-major copy");
  return size_t(size_mul_or_throw(size_mul_or_throw(rows, k_major_pitch(s), "a k-major copy"), s.element_bytes,
                                  "a k-major copy"));
}

void k_major_copy(const KMajorSource& s, void* dst) {
  if (s.p_extent <= 0 || s.k_extent <= 0 || s.batch <= 0) return;
  if (s.batch > 65535) throw_device_error("a k-major copy of more than 65535 batch instances is not supported");
  gm::KMajorCopyArgs a{};
  a.src = s.ptr;
  a.dst = uint64_t(reinterpret_cast<uintptr_t>(dst));
  a.p_stride = s.p_stride;
  a.k_stride = s.k_stride;
  a.batch_stride = s.batch_stride;
  a.p_extent = s.p_extent;
  a.k_extent = s.k_extent;
  a.batch = s.batch;
  a.dst_pitch = k_major_pitch(s);
  void* args[] = {&a};
  const int64_t kx = (s.k_extent + 31) / 32, py = std::min<int64_t>((s.p_extent + 31) / 32, 65535);
  if (kx > INT32_MAX) throw_device_error("a k-major copy with more than 2^31 chunks of k");
  copy_kernel(s.element_bytes)
      .launch(unsigned(kx), unsigned(py), unsigned(s.batch), unsigned(gm::kStageThreads), 1, 1, 0, args);
}

}  // namespace gamut::cuda
