// The CUDA runtime layer: device discovery, memory, NVRTC compilation with caches, kernel launch.
//
// cudart is linked statically; it opens the driver on first use, so every function here
// works (and reports "no device") on a machine without a driver. Nothing in this header
// exposes CUDA types, so the rest of gamut compiles without CUDA headers.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/types.h"

namespace gamut::cuda {

struct DeviceInfo {
  std::string name;
  int ordinal = 0;
  int cc_major = 0, cc_minor = 0;  // 9, 0 on Hopper
  int sm_count = 0;
  size_t smem_per_block_optin = 0;  // bytes, cudaDevAttrMaxSharedMemoryPerBlockOptin
  size_t smem_per_sm = 0;
  int regs_per_sm = 0;
  size_t l2_bytes = 0;
  size_t total_mem = 0;
  int driver_version = 0;  // cudaDriverGetVersion: 12090 is 12.9
};

// True when a CUDA device can be used; never throws. `why` gets the reason when false:
// "no usable CUDA device: " then kNoDeviceReason (no device, or no driver library at all) or
// "CUDA error: ..." (a driver older than the runtime, out of memory, an exclusive or busy
// device: a machine with a GPU that cannot be used); "built without CUDA" without the backend.
bool device_available(std::string* why = nullptr);
inline constexpr const char* kNoDeviceReason = "no NVIDIA GPU found";
// Whether `why` (device_available's reason) says there is nothing to run on (no device, no
// driver, no CUDA backend) rather than a CUDA error on a machine with a driver.
inline bool device_absent(const std::string& why) {
  return why.find(kNoDeviceReason) != std::string::npos || why.find("built without CUDA") != std::string::npos;
}
// The calling thread's current device (ordinal 0 unless set_current_device chose another).
// Throws Error(ExitCode::Device) when there is none.
const DeviceInfo& device();
const DeviceInfo& device_info(int ordinal);
// Devices visible to this process (CUDA_VISIBLE_DEVICES applies); 0 without a usable one.
int device_count();
// The calling thread's device (cudaGetDevice / cudaSetDevice: per thread). Every allocation,
// copy and launch of that thread goes to it; a device that is not visible is a device error.
int current_device();
void set_current_device(int ordinal);

// Device memory a new allocation can get: free memory (cudaMemGetInfo) plus what the memory pool
// keeps unused; and the device's total.
struct DeviceMemory {
  size_t free = 0, total = 0;
};
DeviceMemory device_memory();

// The arch string NVRTC gets for a device: "sm_90a" for cc 9.0, else "sm_XY".
std::string arch_for(int cc_major, int cc_minor);

// The stream (a cudaStream_t) this thread's launches, copies, allocations and frees go to: the
// legacy default stream, unless a StreamScope is active (the library runs on its caller's
// stream). Work on it is ordered; synchronize() waits for it alone.
void* current_stream();
class StreamScope {
 public:
  explicit StreamScope(void* stream);
  ~StreamScope();
  StreamScope(const StreamScope&) = delete;
  StreamScope& operator=(const StreamScope&) = delete;

 private:
  void* previous_;
};

// Device memory, freed on destruction. Allocation failure throws Error(ExitCode::Device) with
// the bytes asked for and the bytes free.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(size_t bytes);
  DeviceBuffer(DeviceBuffer&&) noexcept;
  DeviceBuffer& operator=(DeviceBuffer&&) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer();
  void* get() const { return ptr_; }
  size_t size() const { return bytes_; }
  // The device and stream it was allocated on (and is freed on).
  int device_ordinal() const { return device_; }
  void* stream() const { return stream_; }
  void upload(const void* host, size_t bytes, size_t offset = 0);
  void download(void* host, size_t bytes, size_t offset = 0) const;
  // In stream order without waiting: `host` (pinned: thread_pinned_scratch) holds the bytes once
  // the stream is synchronised.
  void download_async(void* host, size_t bytes, size_t offset = 0) const;
  void fill_bytes(int value);  // cudaMemset
  // Rows of `row_bytes` each, `pitch` bytes apart on the device (cudaMemcpy2D): inputs whose
  // rows are padded so every row starts 16-byte aligned.
  void upload_rows(const void* host, size_t rows, size_t row_bytes, size_t pitch);
  void download_rows(void* host, size_t rows, size_t row_bytes, size_t pitch) const;
  // Rows of `row_bytes` each, `pitch` bytes apart on both sides, starting at byte `offset` of
  // this buffer and of `host` (a block of a C-order array the host holds whole: one part's slice).
  void download_block(void* host, size_t offset, size_t rows, size_t row_bytes, size_t pitch) const;

 private:
  void* ptr_ = nullptr;
  size_t bytes_ = 0;
  void* stream_ = nullptr;  // allocated (and freed) in order on this stream
  int device_ = 0;          // of this device (freed there whichever device is current)
};

// Page-locked host memory of the calling thread, at least `bytes` (grown as asked, freed when the
// thread ends; growing frees the old block, which waits for the device): small copies between
// host and device run in stream order without a pageable copy's staging and wait. What it holds
// is the caller's until the thread next asks (callers wait for their copies before returning).
void* thread_pinned_scratch(size_t bytes);

struct CompileOptions {
  std::string arch = "sm_90a";     // NVRTC --gpu-architecture
  std::vector<std::string> extra;  // further NVRTC options, part of the cache key
};

// Where a module came from, for `--json` and the compile-latency benchmark.
enum class CacheHit { Compiled, Disk, Memory };
inline const char* cache_hit_name(CacheHit h) {
  return h == CacheHit::Compiled ? "compiled" : h == CacheHit::Disk ? "disk" : "memory";
}

struct CompiledModule {
  std::string key;          // hex hash: the cache key
  std::string cubin;        // the binary
  std::string source_path;  // the kept .cu on disk ("" if the disk cache is off)
  CacheHit hit = CacheHit::Compiled;
  double compile_ms = 0;  // NVRTC time when hit == Compiled
};

// Compile CUDA C++ `source` (it may #include any embedded device header by file name) for
// options.arch with NVRTC, through the in-process cache and the disk cache. `extra_key` adds
// anything else that shapes the code (e.g. the canonical plan text and tile parameters).
// A compile error throws Error(ExitCode::Query) whose text is one line naming the kept .cu
// ("query error: ... kept at PATH"); the full NVRTC log follows on the next lines of what()
// (the CLI prints it whole). The key also covers the NVRTC version, the full option list, the
// embedded headers' text and a schema number. Bad options (e.g. an unknown arch) and NVRTC's
// own failures are device errors.
CompiledModule compile_cached(const std::string& source, const CompileOptions& options,
                              const std::string& extra_key = "");
// The same compile for a later compile_cached of the same arguments (driver/kernels_ahead.h):
// nothing when the module is in memory or another caller is compiling it. That later call waits
// for a compile still under way, and reports the compile as its own (hit and time).
void compile_ahead(const std::string& source, const CompileOptions& options, const std::string& extra_key = "");
// The module compile_ahead made of these arguments, if no caller took it, marked as taken: a later
// caller finds a memory hit, not a compile of its own.
void claim_compiled_ahead(const std::string& source, const CompileOptions& options, const std::string& extra_key = "");
// NVRTC only, no cache (tests and the benchmark of cold compiles).
std::string nvrtc_compile(const std::string& source, const CompileOptions& options, std::string* log_out = nullptr);
std::string nvrtc_version();  // "13.0"

// The disk cache directory: $GAMUT_CACHE_DIR, else $XDG_CACHE_HOME/gamut, else ~/.cache/gamut.
std::string cache_dir();
// valid: KEY.cubin matches the size and checksum in KEY.meta (a failed compile leaves only
// KEY.cu: listed, not valid). Only files named like cache entries are listed or removed.
struct CacheEntry {
  std::string key;
  size_t cubin_bytes;
  std::string source_path;
  bool valid;
};
std::vector<CacheEntry> cache_list();
size_t cache_clear();       // entries removed; also empties the in-process cache
void clear_memory_cache();  // tests and the benchmark

// A loaded module and one kernel in it. kernel_name is the cubin symbol, so kernels are
// declared extern "C". Launches go to current_stream() on the current device. One Kernel serves
// every device: the module is a context-independent cudaLibrary_t, which cudart loads into each
// device's context on its first launch there (no per-device module cache is needed).
class Kernel {
 public:
  Kernel(const CompiledModule& module, const std::string& kernel_name);
  ~Kernel();
  Kernel(const Kernel&) = delete;
  Kernel& operator=(const Kernel&) = delete;
  // Set the dynamic shared memory limit (above 48 KiB needs this). The attribute is per device:
  // it is set here for the current device and again before the first launch on any other.
  void set_max_dynamic_smem(size_t bytes);
  // args: pointers to each kernel argument, as cudaLaunchKernel takes them. On current_stream().
  void launch(unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz, size_t dyn_smem,
              void** args);
  int max_active_blocks_per_sm(int block_threads, size_t dyn_smem) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

void synchronize();  // waits for current_stream()

// Device memory gamut does not own (a caller's output), on current_stream(): set every byte, or
// copy from the host (staged before this returns).
void fill_device_bytes(void* device, int value, size_t bytes);
void copy_host_to_device(void* device, const void* host, size_t bytes);
// Device to device (any devices), in order on current_stream(), without waiting.
void copy_device_to_device(void* dst, const void* src, size_t bytes);

// A TMA tensor map (CUtensorMap, 128 bytes) of one tensor-core operand (16-bit, or f32 with k
// contiguous), for the TMA-fed wgmma mainloop: element (p, k) of batch instance b at
// ptr + (b * batch_stride + (k_contiguous ? p * ld + k : k * ld + p)) * element size, p in
// [0, p_extent), k in [0, k_extent); boxes of one 128-byte row of k x box_p rows (k contiguous)
// or 64 p x 64 k, 128-byte swizzled, zeros outside. tile_map_fits: whether TMA can address such an operand
// (16-byte aligned start, row and batch pitches).
struct TileMapShape {
  uint64_t ptr = 0;
  int64_t ld = 0, batch_stride = 0, batch = 1;
  int64_t p_extent = 0, k_extent = 0;
  bool k_contiguous = true;
  int box_p = 128;
  bool tf32 = false;  // f32 elements rounded to TF32 as they land (the TFLOAT32 map type)
};
inline bool tile_map_fits(uint64_t ptr, int64_t ld, int64_t batch_stride, int64_t batch, int element_bytes) {
  const int64_t e = element_bytes, most = int64_t(1) << 40;
  return ptr % 16 == 0 && ld > 0 && (ld * e) % 16 == 0 && ld * e < most &&
         (batch <= 1 || (batch_stride > 0 && (batch_stride * e) % 16 == 0 && batch_stride * e < most));
}
void encode_tile_map(void* out128, DType type, const TileMapShape& shape);
// The map `map128` (encode_tile_map's) with its operand at `ptr` instead (a launch record's
// replay: the same shape, strides and alignment).
void replace_tile_map_address(void* map128, uint64_t ptr);

// Device memory held through DeviceBuffer: the peak since the last reset (benchmarks report it).
size_t device_bytes_peak();
void reset_device_bytes_peak();
// Buffers kept between runs (a kernel memo's list buffers) are parked while idle: not counted as
// held, so that a run's peak is its own; unparked (counted again) when a run takes them.
void park_device_bytes(size_t bytes);
void unpark_device_bytes(size_t bytes);

// CUDA events for benchmarks: elapsed milliseconds of the work `fn` enqueues.
class EventTimer {
 public:
  EventTimer();
  ~EventTimer();
  void start();
  double stop_ms();  // records, synchronizes, returns elapsed
  // The same in two steps, so that more work may be enqueued between: stop() records,
  // elapsed_ms() waits for that record (not for work after it) and returns the time to it.
  void stop();
  double elapsed_ms();

 private:
  void* begin_ = nullptr;
  void* end_ = nullptr;
};

// A helper kernel's run for its result, then, with repeats > 0, a warm-up and `repeats` timed
// runs for benchmarks. `once` runs the kernel once (from its initial state) and returns its
// CUDA-event milliseconds; the device is idle when this returns.
template <class Once>
void run_timed(Once once, int repeats, double& first_ms, std::vector<double>& runs_ms) {
  first_ms = once();
  if (repeats > 0) {
    once();
    for (int r = 0; r < repeats; ++r) runs_ms.push_back(once());
  }
  synchronize();
}

}  // namespace gamut::cuda
