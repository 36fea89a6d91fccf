// The library's free functions: version, device probe, the kernel cache shared with the CLI.
#include "cuda/gpu_engine.h"
#include "cuda/runtime.h"
#include "gamut/gamut.h"

namespace gamut {

const char* version() { return GAMUT_VERSION; }

bool gpu_available(std::string* why) { return cuda::gpu_available(why); }

std::string kernel_cache_dir() { return cuda::cache_dir(); }

size_t clear_kernel_cache() { return cuda::cache_clear(); }

}  // namespace gamut
