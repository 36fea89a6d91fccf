// The library's free functions: version, device probe, the kernel cache shared with the CLI.
#include "cuda/gpu_engine.h"
#include "cuda/runtime.h"
#include "driver/pipeline.h"
#include "gamut/gamut.h"

namespace gamut {

const char* version() { return GAMUT_VERSION; }

bool gpu_available(std::string* why) {
  if (cuda::gpu_available(nullptr)) return true;
  if (why) *why = no_device_reason();
  return false;
}

std::string kernel_cache_dir() { return cuda::cache_dir(); }

size_t clear_kernel_cache() { return cuda::cache_clear(); }

std::vector<CacheEntry> kernel_cache_entries() {
  std::vector<CacheEntry> out;
  for (const cuda::CacheEntry& e : cuda::cache_list()) out.push_back(CacheEntry{e.key, e.cubin_bytes, e.valid, e.source_path});
  return out;
}

}  // namespace gamut
