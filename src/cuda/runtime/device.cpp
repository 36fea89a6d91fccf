// Device discovery and device memory through the statically linked cudart.
#include <cuda_runtime_api.h>
#include <dlfcn.h>

#include <atomic>
#include <cstdio>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "core/error.h"
#include "cuda/runtime.h"
#include "cuda/runtime/internal.h"

namespace gamut::cuda {

namespace detail {

void check(cudaError_t err, const std::string& what) {
  if (err == cudaSuccess) return;
  // Clear the per-thread error so later checks do not report this one again (sticky errors
  // such as an illegal address stay regardless).
  cudaGetLastError();
  throw_device_error(what + ": " + cudaGetErrorName(err) + ": " + cudaGetErrorString(err));
}

namespace {
struct Probe {
  bool ok = false;
  std::string why;
};

// Whether a CUDA driver library can be loaded at all (static cudart dlopens libcuda.so.1 itself).
bool driver_library_loadable() {
  void* h = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
  if (!h) return false;
  dlclose(h);
  return true;
}

// Runs once. Static cudart loads libcuda itself, so on a machine without a driver this
// returns an error code (cudaErrorInsufficientDriver) instead of failing to start.
// The reason tells "nothing to run on" (kNoDeviceReason: no device, or no driver library at
// all) from a CUDA error on a machine that has a driver (a driver older than the runtime,
// out of memory, an exclusive-mode or busy device, ...): tests skip on the first and report
// the second as what it is (tests/gpu/gpu_skip.h, tests/python/conftest.py).
Probe probe_device() {
  Probe p;
  const std::string lead = "no usable CUDA device: ";
  int count = 0;
  cudaError_t err = cudaGetDeviceCount(&count);
  if (err == cudaSuccess && count == 0) {
    p.why = lead + kNoDeviceReason + " (0 devices)";
    return p;
  }
  if (err == cudaErrorNoDevice) {
    p.why = lead + kNoDeviceReason + " (cudaErrorNoDevice: the driver sees no CUDA device)";
    cudaGetLastError();
    return p;
  }
  // Without a driver library cudart answers "driver version is insufficient" (or, with only
  // the toolkit's stub library on the path, cudaErrorStubLibrary): no driver, not a mismatch.
  if (err == cudaErrorStubLibrary || (err == cudaErrorInsufficientDriver && !driver_library_loadable())) {
    p.why = lead + kNoDeviceReason +
            (err == cudaErrorStubLibrary ? " (only the toolkit's stub libcuda, no driver: cudaErrorStubLibrary)"
                                         : " (no CUDA driver: libcuda.so.1 cannot be loaded)");
    cudaGetLastError();
    return p;
  }
  // cudaSetDevice creates the primary context, so a device that cannot be used fails here.
  if (err == cudaSuccess) err = cudaSetDevice(0);
  if (err != cudaSuccess) {
    p.why = lead + "CUDA error: " + cudaGetErrorString(err) + " (" + cudaGetErrorName(err) + ")";
    cudaGetLastError();
    return p;
  }
  p.ok = true;
  return p;
}
}  // namespace

void require_device() {
  std::string why;
  if (!device_available(&why)) throw_device_error(why);
}

}  // namespace detail

bool device_available(std::string* why) {
  static const detail::Probe probe = detail::probe_device();
  if (!probe.ok && why) *why = probe.why;
  return probe.ok;
}

int device_count() {
  if (!device_available()) return 0;
  int count = 0;
  detail::check(cudaGetDeviceCount(&count), "cudaGetDeviceCount");
  return count;
}

int current_device() {
  detail::require_device();
  int dev = 0;
  detail::check(cudaGetDevice(&dev), "cudaGetDevice");
  return dev;
}

void set_current_device(int ordinal) {
  // The probe (once per process) selects device 0 in whichever thread runs it: run it first.
  detail::require_device();
  const int count = device_count();
  if (ordinal < 0 || ordinal >= count)
    throw_device_error("no CUDA device " + std::to_string(ordinal) + ": " + std::to_string(count) +
                       (count == 1 ? " device is" : " devices are") + " visible");
  detail::check(cudaSetDevice(ordinal), "cudaSetDevice(" + std::to_string(ordinal) + ")");
}

const DeviceInfo& device_info(int ordinal) {
  detail::require_device();
  // Filled once per ordinal (a few hundred microseconds each), then read without a lock.
  constexpr int kMaxDevices = 64;
  static std::mutex mu;
  static std::unique_ptr<DeviceInfo> infos[kMaxDevices];
  static std::atomic<bool> ready[kMaxDevices];
  if (ordinal < 0 || ordinal >= kMaxDevices || ordinal >= device_count())
    throw_device_error("no CUDA device " + std::to_string(ordinal) + ": " + std::to_string(device_count()) +
                       " visible");
  if (ready[ordinal].load(std::memory_order_acquire)) return *infos[ordinal];
  std::lock_guard<std::mutex> lock(mu);
  if (!infos[ordinal]) {
    cudaDeviceProp p{};
    detail::check(cudaGetDeviceProperties(&p, ordinal), "cudaGetDeviceProperties");
    auto d = std::make_unique<DeviceInfo>();
    d->name = p.name;
    d->ordinal = ordinal;
    d->cc_major = p.major;
    d->cc_minor = p.minor;
    d->sm_count = p.multiProcessorCount;
    d->smem_per_block_optin = p.sharedMemPerBlockOptin;
    d->smem_per_sm = p.sharedMemPerMultiprocessor;
    d->regs_per_sm = p.regsPerMultiprocessor;
    d->l2_bytes = static_cast<size_t>(p.l2CacheSize);
    d->total_mem = p.totalGlobalMem;
    if (cudaDriverGetVersion(&d->driver_version) != cudaSuccess) d->driver_version = 0;
    infos[ordinal] = std::move(d);
    ready[ordinal].store(true, std::memory_order_release);
  }
  return *infos[ordinal];
}

const DeviceInfo& device() { return device_info(current_device()); }

std::string arch_for(int cc_major, int cc_minor) {
  // sm_90a unlocks wgmma/TMA/setmaxnreg on Hopper; such a cubin runs only on cc 9.0.
  std::string arch = "sm_" + std::to_string(cc_major) + std::to_string(cc_minor);
  if (cc_major == 9 && cc_minor == 0) arch += "a";
  return arch;
}

namespace {
std::string gib(size_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f GiB", static_cast<double>(bytes) / (1024.0 * 1024 * 1024));
  return buf;
}

void check_range(const char* op, size_t bytes, size_t offset, size_t size) {
  if (offset > size || bytes > size - offset)
    throw_device_error(std::string(op) + " of " + std::to_string(bytes) + " bytes at offset " + std::to_string(offset) +
                       " outside a buffer of " + std::to_string(size) + " bytes");
}
// Bytes held by DeviceBuffers now, and the most held at once since the last reset.
std::atomic<size_t> g_held{0}, g_peak{0};
void account_alloc(size_t bytes) {
  size_t now = g_held.fetch_add(bytes) + bytes, peak = g_peak.load();
  while (now > peak && !g_peak.compare_exchange_weak(peak, now)) {
  }
}
}  // namespace

size_t device_bytes_peak() { return g_peak.load(); }
void reset_device_bytes_peak() { g_peak.store(g_held.load()); }
void park_device_bytes(size_t bytes) { g_held.fetch_sub(bytes); }
void unpark_device_bytes(size_t bytes) { account_alloc(bytes); }

// Device memory comes from the device's default memory pool, in stream order on the legacy
// default stream (every launch, copy and CUB call here uses it): a cudaFree synchronises the
// device, and the device-side list work (selection, sort) allocates and frees scratch between
// its launches, which then waited for each other. The pool keeps freed memory for the process
// (release threshold: all of it), so a repeated run allocates nothing from the driver; it is
// trimmed before an allocation is reported as out of memory.
namespace {
// The current device's default pool; its release threshold is raised once per device.
cudaMemPool_t pool() {
  static std::mutex mu;
  static std::map<int, cudaMemPool_t> pools;
  const int dev = current_device();
  std::lock_guard<std::mutex> lock(mu);
  if (auto it = pools.find(dev); it != pools.end()) return it->second;
  cudaMemPool_t q = nullptr;
  detail::check(cudaDeviceGetDefaultMemPool(&q, dev), "cudaDeviceGetDefaultMemPool");
  uint64_t keep = UINT64_MAX;
  detail::check(cudaMemPoolSetAttribute(q, cudaMemPoolAttrReleaseThreshold, &keep), "cudaMemPoolSetAttribute");
  pools.emplace(dev, q);
  return q;
}

// A buffer is freed in order on its own device's stream, whichever device the freeing thread
// has current (the multi-device runner frees parts' buffers from its own thread).
void free_on_device(void* ptr, void* stream, int dev) {
  int now = dev;
  cudaGetDevice(&now);
  if (now != dev) cudaSetDevice(dev);
  cudaFreeAsync(ptr, static_cast<cudaStream_t>(stream));
  if (now != dev) cudaSetDevice(now);
}
}  // namespace

namespace {
thread_local void* g_stream = nullptr;
cudaStream_t stream_of(void* s) { return static_cast<cudaStream_t>(s); }
}  // namespace

void* current_stream() { return g_stream; }
StreamScope::StreamScope(void* stream) : previous_(g_stream) { g_stream = stream; }
StreamScope::~StreamScope() { g_stream = previous_; }

DeviceMemory device_memory() {
  detail::require_device();
  size_t free_b = 0, total_b = 0;
  detail::check(cudaMemGetInfo(&free_b, &total_b), "cudaMemGetInfo");
  // Memory the pool holds but no buffer uses is free for the next allocation too.
  uint64_t reserved = 0, used = 0;
  detail::check(cudaMemPoolGetAttribute(pool(), cudaMemPoolAttrReservedMemCurrent, &reserved),
                "cudaMemPoolGetAttribute");
  detail::check(cudaMemPoolGetAttribute(pool(), cudaMemPoolAttrUsedMemCurrent, &used), "cudaMemPoolGetAttribute");
  return {free_b + size_t(reserved > used ? reserved - used : 0), total_b};
}

DeviceBuffer::DeviceBuffer(size_t bytes) {
  detail::require_device();
  if (bytes == 0) return;  // cudaMalloc(0) gives nullptr anyway; skip the call
  stream_ = g_stream;
  device_ = current_device();
  // More than the device has is never tried: a failed request can leave the pool holding memory.
  cudaError_t err = bytes > device().total_mem ? cudaErrorMemoryAllocation
                                               : cudaMallocFromPoolAsync(&ptr_, bytes, pool(), stream_of(stream_));
  if (err == cudaErrorMemoryAllocation &&
      bytes <= device().total_mem) {  // memory the pool keeps may be what is missing
    cudaGetLastError();
    cudaDeviceSynchronize();
    cudaMemPoolTrimTo(pool(), 0);
    cudaDeviceSynchronize();  // the trim returns memory to the driver only once the device is idle
    err = cudaMallocFromPoolAsync(&ptr_, bytes, pool(), stream_of(stream_));
  }
  if (err == cudaErrorMemoryAllocation) {
    cudaGetLastError();
    // The failed request can leave memory it mapped in the pool: hand that back before asking
    // what is free, or an idle device reports almost nothing free.
    cudaDeviceSynchronize();
    cudaMemPoolTrimTo(pool(), 0);
    cudaDeviceSynchronize();
    const DeviceMemory m = device_memory();
    throw_device_error("out of device memory: asked for " + std::to_string(bytes) + " bytes (" + gib(bytes) + "), " +
                       std::to_string(m.free) + " bytes free (" + gib(m.free) + ") of " + std::to_string(m.total) +
                       " (" + gib(m.total) + ")");
  }
  detail::check(err, "cudaMallocFromPoolAsync of " + std::to_string(bytes) + " bytes");
  bytes_ = bytes;
  account_alloc(bytes);
}

DeviceBuffer::DeviceBuffer(DeviceBuffer&& o) noexcept
    : ptr_(o.ptr_), bytes_(o.bytes_), stream_(o.stream_), device_(o.device_) {
  o.ptr_ = nullptr;
  o.bytes_ = 0;
}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& o) noexcept {
  if (this != &o) {
    if (ptr_) {
      free_on_device(ptr_, stream_, device_);
      g_held -= bytes_;
    }
    ptr_ = o.ptr_;
    bytes_ = o.bytes_;
    stream_ = o.stream_;
    device_ = o.device_;
    o.ptr_ = nullptr;
    o.bytes_ = 0;
  }
  return *this;
}

DeviceBuffer::~DeviceBuffer() {
  // Errors cannot be thrown from here; at process exit cudart may already be shutting down.
  if (ptr_) {
    free_on_device(ptr_, stream_, device_);
    g_held -= bytes_;
  }
}

void DeviceBuffer::upload(const void* host, size_t bytes, size_t offset) {
  check_range("upload", bytes, offset, bytes_);
  if (bytes == 0) return;
  // From pageable memory the copy is staged before this returns: `host` may go at once.
  char* to = static_cast<char*>(ptr_) + offset;
  if (detail::staged_upload_rows(to, bytes, host, 1, bytes, stream_of(g_stream))) return;
  detail::check(cudaMemcpyAsync(to, host, bytes, cudaMemcpyHostToDevice, stream_of(g_stream)),
                "cudaMemcpy host to device of " + std::to_string(bytes) + " bytes");
}

void DeviceBuffer::download(void* host, size_t bytes, size_t offset) const {
  download_async(host, bytes, offset);
  if (bytes) detail::check(cudaStreamSynchronize(stream_of(g_stream)), "waiting for a copy to the host");
}

void DeviceBuffer::download_async(void* host, size_t bytes, size_t offset) const {
  check_range("download", bytes, offset, bytes_);
  if (bytes == 0) return;
  detail::check(cudaMemcpyAsync(host, static_cast<const char*>(ptr_) + offset, bytes, cudaMemcpyDeviceToHost,
                                stream_of(g_stream)),
                "cudaMemcpy device to host of " + std::to_string(bytes) + " bytes");
}

void DeviceBuffer::upload_rows(const void* host, size_t rows, size_t row_bytes, size_t pitch) {
  if (rows == 0 || row_bytes == 0) return;
  check_range("upload", (rows - 1) * pitch + row_bytes, 0, bytes_);
  if (detail::staged_upload_rows(ptr_, pitch, host, rows, row_bytes, stream_of(g_stream))) return;
  detail::check(
      cudaMemcpy2DAsync(ptr_, pitch, host, row_bytes, row_bytes, rows, cudaMemcpyHostToDevice, stream_of(g_stream)),
      "cudaMemcpy2D host to device of " + std::to_string(rows * row_bytes) + " bytes");
}

void DeviceBuffer::download_rows(void* host, size_t rows, size_t row_bytes, size_t pitch) const {
  if (rows == 0 || row_bytes == 0) return;
  check_range("download", (rows - 1) * pitch + row_bytes, 0, bytes_);
  detail::check(
      cudaMemcpy2DAsync(host, row_bytes, ptr_, pitch, row_bytes, rows, cudaMemcpyDeviceToHost, stream_of(g_stream)),
      "cudaMemcpy2D device to host of " + std::to_string(rows * row_bytes) + " bytes");
  detail::check(cudaStreamSynchronize(stream_of(g_stream)), "waiting for a copy to the host");
}

void DeviceBuffer::download_block(void* host, size_t offset, size_t rows, size_t row_bytes, size_t pitch) const {
  if (rows == 0 || row_bytes == 0) return;
  check_range("download", (rows - 1) * pitch + row_bytes, offset, bytes_);
  detail::check(cudaMemcpy2DAsync(static_cast<char*>(host) + offset, pitch, static_cast<const char*>(ptr_) + offset,
                                  pitch, row_bytes, rows, cudaMemcpyDeviceToHost, stream_of(g_stream)),
                "cudaMemcpy2D device to host of " + std::to_string(rows * row_bytes) + " bytes");
  detail::check(cudaStreamSynchronize(stream_of(g_stream)), "waiting for a copy to the host");
}

void fill_device_bytes(void* device, int value, size_t bytes) {
  if (bytes == 0) return;
  detail::check(cudaMemsetAsync(device, value, bytes, stream_of(g_stream)), "cudaMemset");
}

void copy_host_to_device(void* device, const void* host, size_t bytes) {
  if (bytes == 0) return;
  detail::check(cudaMemcpyAsync(device, host, bytes, cudaMemcpyHostToDevice, stream_of(g_stream)),
                "cudaMemcpy host to device of " + std::to_string(bytes) + " bytes");
}

void copy_device_to_device(void* dst, const void* src, size_t bytes) {
  if (bytes == 0) return;
  detail::check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, stream_of(g_stream)),
                "cudaMemcpy device to device of " + std::to_string(bytes) + " bytes");
}

namespace {
struct PinnedScratch {
  void* ptr = nullptr;
  size_t bytes = 0;
  ~PinnedScratch() {
    if (ptr) cudaFreeHost(ptr);
  }
};
}  // namespace

void* thread_pinned_scratch(size_t bytes) {
  thread_local PinnedScratch s;
  if (s.bytes < bytes) {
    detail::require_device();
    if (s.ptr) cudaFreeHost(s.ptr);
    s.ptr = nullptr;
    s.bytes = 0;
    const size_t want = std::max<size_t>(bytes, 4096);
    detail::check(cudaMallocHost(&s.ptr, want), "cudaMallocHost of " + std::to_string(want) + " bytes");
    s.bytes = want;
  }
  return s.ptr;
}

void DeviceBuffer::fill_bytes(int value) {
  if (bytes_ == 0) return;
  detail::check(cudaMemsetAsync(ptr_, value, bytes_, stream_of(g_stream)), "cudaMemset");
}

}  // namespace gamut::cuda
