// NVRTC, opened on first use instead of linked: the binary then starts (and runs on the CPU)
// on machines without the CUDA toolkit, as it does without a driver (cudart is static).
// These definitions stand in for the few NVRTC entry points gamut calls; each forwards to the
// library found at run time.
#include <dlfcn.h>
#include <nvrtc.h>

#include <mutex>
#include <string>

#include "core/error.h"

namespace {

struct Nvrtc {
  void* lib = nullptr;
  std::string why;
  const char* (*get_error_string)(nvrtcResult) = nullptr;
  nvrtcResult (*version)(int*, int*) = nullptr;
  nvrtcResult (*create)(nvrtcProgram*, const char*, const char*, int, const char* const*, const char* const*) = nullptr;
  nvrtcResult (*compile)(nvrtcProgram, int, const char* const*) = nullptr;
  nvrtcResult (*destroy)(nvrtcProgram*) = nullptr;
  nvrtcResult (*log_size)(nvrtcProgram, size_t*) = nullptr;
  nvrtcResult (*log)(nvrtcProgram, char*) = nullptr;
  nvrtcResult (*cubin_size)(nvrtcProgram, size_t*) = nullptr;
  nvrtcResult (*cubin)(nvrtcProgram, char*) = nullptr;
};

template <class F> void bind(void* lib, const char* name, F& f, std::string& why) {
  f = reinterpret_cast<F>(dlsym(lib, name));
  if (!f && why.empty()) why = std::string("libnvrtc has no ") + name;
}

const Nvrtc& nvrtc() {
  static Nvrtc n;
  static std::once_flag once;
  std::call_once(once, [] {
    // The toolkit this was built against first, then the loader's search path.
    const std::string built = std::string(GAMUT_CUDA_LIBRARY_DIR) + "/libnvrtc.so";
    for (const std::string& name : {built + ".13", built, std::string("libnvrtc.so.13"), std::string("libnvrtc.so")}) {
      n.lib = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
      if (n.lib) break;
    }
    if (!n.lib) {
      const char* e = dlerror();
      n.why = std::string("NVRTC (libnvrtc.so.13) not found: ") + (e ? e : "dlopen failed");
      return;
    }
    bind(n.lib, "nvrtcGetErrorString", n.get_error_string, n.why);
    bind(n.lib, "nvrtcVersion", n.version, n.why);
    bind(n.lib, "nvrtcCreateProgram", n.create, n.why);
    bind(n.lib, "nvrtcCompileProgram", n.compile, n.why);
    bind(n.lib, "nvrtcDestroyProgram", n.destroy, n.why);
    bind(n.lib, "nvrtcGetProgramLogSize", n.log_size, n.why);
    bind(n.lib, "nvrtcGetProgramLog", n.log, n.why);
    bind(n.lib, "nvrtcGetCUBINSize", n.cubin_size, n.why);
    bind(n.lib, "nvrtcGetCUBIN", n.cubin, n.why);
  });
  if (!n.why.empty()) gamut::throw_device_error(n.why);
  return n;
}

}  // namespace

extern "C" {

const char* nvrtcGetErrorString(nvrtcResult r) {
  try {
    return nvrtc().get_error_string(r);
  } catch (...) {
    return "NVRTC not available";
  }
}
nvrtcResult nvrtcVersion(int* major, int* minor) { return nvrtc().version(major, minor); }
nvrtcResult nvrtcCreateProgram(nvrtcProgram* p, const char* src, const char* name, int n, const char* const* headers,
                               const char* const* names) {
  return nvrtc().create(p, src, name, n, headers, names);
}
nvrtcResult nvrtcCompileProgram(nvrtcProgram p, int n, const char* const* options) { return nvrtc().compile(p, n, options); }
nvrtcResult nvrtcDestroyProgram(nvrtcProgram* p) { return nvrtc().destroy(p); }
nvrtcResult nvrtcGetProgramLogSize(nvrtcProgram p, size_t* s) { return nvrtc().log_size(p, s); }
nvrtcResult nvrtcGetProgramLog(nvrtcProgram p, char* log) { return nvrtc().log(p, log); }
nvrtcResult nvrtcGetCUBINSize(nvrtcProgram p, size_t* s) { return nvrtc().cubin_size(p, s); }
nvrtcResult nvrtcGetCUBIN(nvrtcProgram p, char* c) { return nvrtc().cubin(p, c); }

}  // extern "C"
