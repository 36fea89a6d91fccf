// runtime.h for a build without CUDA (GAMUT_CUDA=OFF): no device, every operation that would
// need CUDA throws a device error. Pure helpers (arch_for, cache_dir) still work.
#include <cstdlib>
#include <filesystem>

#include "core/error.h"
#include "cuda/runtime.h"

namespace gamut::cuda {

namespace {
const char* const kWhy = "built without CUDA";
[[noreturn]] void no_cuda() { throw_device_error(kWhy); }
}  // namespace

bool device_available(std::string* why) {
  if (why) *why = kWhy;
  return false;
}

const DeviceInfo& device() { no_cuda(); }
const DeviceInfo& device_info(int) { no_cuda(); }
int device_count() { return 0; }
int current_device() { no_cuda(); }
void set_current_device(int) { no_cuda(); }
DeviceMemory device_memory() { no_cuda(); }

std::string arch_for(int cc_major, int cc_minor) {
  std::string arch = "sm_" + std::to_string(cc_major) + std::to_string(cc_minor);
  if (cc_major == 9 && cc_minor == 0) arch += "a";
  return arch;
}

void encode_tile_map(void*, DType, const TileMapShape&) { no_cuda(); }
void replace_tile_map_address(void*, uint64_t) { no_cuda(); }

DeviceBuffer::DeviceBuffer(size_t) { no_cuda(); }
DeviceBuffer::DeviceBuffer(DeviceBuffer&& o) noexcept : ptr_(o.ptr_), bytes_(o.bytes_) {
  o.ptr_ = nullptr;
  o.bytes_ = 0;
}
DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& o) noexcept {
  ptr_ = o.ptr_;
  bytes_ = o.bytes_;
  o.ptr_ = nullptr;
  o.bytes_ = 0;
  return *this;
}
DeviceBuffer::~DeviceBuffer() = default;
void DeviceBuffer::upload(const void*, size_t, size_t) { no_cuda(); }
void DeviceBuffer::download(void*, size_t, size_t) const { no_cuda(); }
void DeviceBuffer::fill_bytes(int) { no_cuda(); }
size_t device_bytes_peak() { return 0; }
void reset_device_bytes_peak() {}
void park_device_bytes(size_t) {}
void unpark_device_bytes(size_t) {}
void DeviceBuffer::upload_rows(const void*, size_t, size_t, size_t) { no_cuda(); }
void DeviceBuffer::download_rows(void*, size_t, size_t, size_t) const { no_cuda(); }
void DeviceBuffer::download_block(void*, size_t, size_t, size_t, size_t) const { no_cuda(); }
void DeviceBuffer::download_async(void*, size_t, size_t) const { no_cuda(); }
void copy_device_to_device(void*, const void*, size_t) { no_cuda(); }
void* thread_pinned_scratch(size_t) { no_cuda(); }

CompiledModule compile_cached(const std::string&, const CompileOptions&, const std::string&) { no_cuda(); }
void compile_ahead(const std::string&, const CompileOptions&, const std::string&) { no_cuda(); }
void claim_compiled_ahead(const std::string&, const CompileOptions&, const std::string&) {}
std::string nvrtc_compile(const std::string&, const CompileOptions&, std::string*) { no_cuda(); }
std::string nvrtc_version() { no_cuda(); }

std::string cache_dir() {
  namespace fs = std::filesystem;
  if (const char* d = std::getenv("GAMUT_CACHE_DIR"); d && *d) return d;
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && x[0] == '/') return (fs::path(x) / "gamut").string();
  if (const char* h = std::getenv("HOME"); h && *h) return (fs::path(h) / ".cache" / "gamut").string();
  return "";
}
std::vector<CacheEntry> cache_list() { no_cuda(); }
size_t cache_clear() { no_cuda(); }
void clear_memory_cache() {}  // nothing is ever cached

struct Kernel::Impl {};
Kernel::Kernel(const CompiledModule&, const std::string&) { no_cuda(); }
Kernel::~Kernel() = default;
void Kernel::set_max_dynamic_smem(size_t) { no_cuda(); }
void Kernel::launch(unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, size_t, void**) { no_cuda(); }
int Kernel::max_active_blocks_per_sm(int, size_t) const { no_cuda(); }

void synchronize() { no_cuda(); }

void* current_stream() { return nullptr; }
void fill_device_bytes(void*, int, size_t) { no_cuda(); }
void copy_host_to_device(void*, const void*, size_t) { no_cuda(); }
StreamScope::StreamScope(void* stream) : previous_(stream) {}
StreamScope::~StreamScope() = default;

EventTimer::EventTimer() { no_cuda(); }
EventTimer::~EventTimer() = default;
void EventTimer::start() { no_cuda(); }
double EventTimer::stop_ms() { no_cuda(); }
void EventTimer::stop() { no_cuda(); }
double EventTimer::elapsed_ms() { no_cuda(); }

}  // namespace gamut::cuda
