// NCCL through dlopen (cuda/nccl.h): found at run time, never linked, so that a binary without
// it still starts. The few declarations used are written out here (opaque communicator, result,
// data type and operation codes: NCCL's stable ABI); where the toolkit's nccl.h is reachable at
// build time, the codes are checked against it.
#include <cuda_runtime_api.h>
#include <dlfcn.h>

#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "core/error.h"
#include "cuda/nccl.h"
#include "cuda/runtime.h"
#include "cuda/runtime/internal.h"

#if __has_include(<nccl.h>)
#include <nccl.h>
#define GAMUT_CHECK_NCCL_ABI 1
#endif

struct ncclComm;  // opaque, as nccl.h declares it

namespace gamut::cuda::nccl {

namespace fs = std::filesystem;

namespace {

// NCCL's codes (nccl.h: ncclResult_t, ncclDataType_t, ncclRedOp_t), the ones used here.
using Comm = ncclComm*;
using Result = int;
constexpr Result kSuccess = 0;
constexpr int kUint8 = 1, kInt32 = 2, kInt64 = 4, kFloat32 = 7, kFloat64 = 8;  // ncclDataType_t
constexpr int kSum = 0, kMax = 2, kMin = 3;                                    // ncclRedOp_t
#ifdef GAMUT_CHECK_NCCL_ABI
static_assert(kSuccess == int(ncclSuccess) && kUint8 == int(ncclUint8) && kInt32 == int(ncclInt32) &&
              kInt64 == int(ncclInt64) && kFloat32 == int(ncclFloat32) && kFloat64 == int(ncclFloat64));
static_assert(kSum == int(ncclSum) && kMax == int(ncclMax) && kMin == int(ncclMin));
#endif

struct Library {
  void* handle = nullptr;
  std::string path, why;
  const char* (*error_string)(Result) = nullptr;
  Result (*get_version)(int*) = nullptr;
  Result (*comm_init_all)(Comm*, int, const int*) = nullptr;
  Result (*group_start)() = nullptr;
  Result (*group_end)() = nullptr;
  Result (*reduce)(const void*, void*, size_t, int, int, int, Comm, cudaStream_t) = nullptr;
};

template <class F>
void bind(Library& l, const char* name, F& f) {
  f = reinterpret_cast<F>(dlsym(l.handle, name));
  if (!f && l.why.empty()) l.why = "NCCL library " + l.path + " has no " + name;
}

// Opens `path`; on failure `why` says what went wrong and the handle is closed.
Library open_library(const std::string& path) {
  Library l;
  l.path = path;
  l.handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!l.handle) {
    const char* e = dlerror();
    l.why = std::string(e ? e : "dlopen failed");
    return l;
  }
  bind(l, "ncclGetErrorString", l.error_string);
  bind(l, "ncclGetVersion", l.get_version);
  bind(l, "ncclCommInitAll", l.comm_init_all);
  bind(l, "ncclGroupStart", l.group_start);
  bind(l, "ncclGroupEnd", l.group_end);
  bind(l, "ncclReduce", l.reduce);
  if (!l.why.empty()) {
    dlclose(l.handle);
    l.handle = nullptr;
  }
  return l;
}

// The site-packages folder holding this library (the Python extension or libgamut.so), if any.
std::string own_directory() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&own_directory), &info) == 0 || !info.dli_fname) return "";
  std::error_code ec;
  const fs::path p = fs::weakly_canonical(fs::path(info.dli_fname), ec);
  return ec ? "" : p.parent_path().string();
}

void add_pip_candidates(const fs::path& site, std::vector<std::string>& out) {
  std::error_code ec;
  const fs::path lib = site / "nvidia" / "nccl" / "lib" / "libnccl.so.2";
  if (fs::exists(lib, ec)) out.push_back(lib.string());
}

const Library& library() {
  static Library lib;
  static std::once_flag once;
  std::call_once(once, [] {
    std::string tried;
    for (const std::string& c : library_candidates()) {
      Library l = open_library(c);
      if (l.handle) {
        lib = l;
        return;
      }
      tried += (tried.empty() ? "" : "; ") + l.why;
    }
    lib.why = "NCCL (libnccl.so.2) not found (set GAMUT_NCCL_LIBRARY or pip install nvidia-nccl-cu13): " + tried;
  });
  return lib;
}

void check(Result r, const std::string& what) {
  if (r == kSuccess) return;
  const Library& l = library();
  throw_device_error("NCCL " + what + ": " + (l.error_string ? l.error_string(r) : "error " + std::to_string(r)));
}

int type_code(Type t) {
  switch (t) {
    case Type::U8: return kUint8;
    case Type::I32: return kInt32;
    case Type::I64: return kInt64;
    case Type::F32: return kFloat32;
    case Type::F64: return kFloat64;
  }
  return kFloat32;
}

int op_code(Op o) { return o == Op::Sum ? kSum : o == Op::Max ? kMax : kMin; }

// The communicators and a stream per device of one device list, made once and kept for the
// process (NCCL's teardown at exit, after cudart's, would only race it).
struct Clique {
  std::vector<Comm> comms;
  std::vector<cudaStream_t> streams;
};

}  // namespace

std::vector<std::string> library_candidates() {
  if (const char* e = std::getenv("GAMUT_NCCL_LIBRARY"); e && *e) return {e};
  std::vector<std::string> out{"libnccl.so.2", std::string(GAMUT_CUDA_LIBRARY_DIR) + "/libnccl.so.2"};
  std::error_code ec;
  if (const std::string own = own_directory(); !own.empty()) {
    add_pip_candidates(fs::path(own).parent_path(), out);  // site-packages/gamut/_gamut*.so
    add_pip_candidates(fs::path(own), out);
  }
  if (const char* venv = std::getenv("VIRTUAL_ENV"); venv && *venv)
    for (const auto& e : fs::directory_iterator(fs::path(venv) / "lib", ec))
      if (e.path().filename().string().rfind("python3", 0) == 0) add_pip_candidates(e.path() / "site-packages", out);
  return out;
}

bool available(std::string* why) {
  const Library& l = library();
  if (!l.handle && why) *why = l.why;
  return l.handle != nullptr;
}

bool try_library(const std::string& path, std::string* why) {
  Library l = open_library(path);
  if (!l.handle) {
    if (why) *why = "NCCL library " + path + " not usable: " + l.why;
    return false;
  }
  dlclose(l.handle);
  return true;
}

std::string version() {
  std::string why;
  if (!available(&why)) throw_device_error(why);
  int v = 0;
  check(library().get_version(&v), "ncclGetVersion");
  // 2.9 and later: major * 10000 + minor * 100 + patch.
  return std::to_string(v / 10000) + "." + std::to_string(v / 100 % 100) + "." + std::to_string(v % 100);
}

void reduce_to_first(const std::vector<int>& devices, const std::vector<Reduction>& reductions) {
  std::string why;
  if (!available(&why)) throw_device_error(why);
  const Library& l = library();
  static std::mutex mu;  // one group at a time over the kept communicators
  static std::map<std::vector<int>, Clique> cliques;
  std::lock_guard<std::mutex> lock(mu);
  const int previous = current_device();
  auto& clique = cliques[devices];
  if (clique.comms.empty()) {
    // NVLink multicast (NVLS) stays off unless asked for: the lent machines cannot map it.
    setenv("NCCL_NVLS_ENABLE", "0", 0);
    std::vector<Comm> comms(devices.size(), nullptr);
    check(l.comm_init_all(comms.data(), int(devices.size()), devices.data()),
          "ncclCommInitAll over " + std::to_string(devices.size()) + " devices");
    std::vector<cudaStream_t> streams;
    for (int d : devices) {
      set_current_device(d);
      cudaStream_t s = nullptr;
      detail::check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreate");
      streams.push_back(s);
    }
    clique = Clique{std::move(comms), std::move(streams)};
  }
  for (const Reduction& r : reductions)
    if (r.send.size() != devices.size()) throw_device_error("internal error: NCCL reduce without one buffer per rank");
  check(l.group_start(), "ncclGroupStart");
  for (const Reduction& r : reductions)
    for (size_t k = 0; k < devices.size(); ++k) {
      const Result res = l.reduce(r.send[k], k == 0 ? r.recv : nullptr, r.count, type_code(r.type), op_code(r.op), 0,
                                  clique.comms[k], clique.streams[k]);
      if (res != kSuccess) {
        l.group_end();
        check(res, "ncclReduce");
      }
    }
  check(l.group_end(), "ncclGroupEnd");
  for (size_t k = 0; k < devices.size(); ++k) {
    set_current_device(devices[k]);
    detail::check(cudaStreamSynchronize(clique.streams[k]), "waiting for the NCCL reduction");
  }
  set_current_device(previous);
}

}  // namespace gamut::cuda::nccl
