// NCCL, opened on first use (dlopen) like NVRTC: the binary starts, and runs on one GPU or the
// CPU, where the library is absent. The multi-device runner (partition/multi_device.h) reduces
// dense aggregate outputs with it when it loads; otherwise it merges on the host (same results).
// Nothing here exposes CUDA or NCCL types.
#pragma once
#include <cstddef>
#include <string>
#include <vector>

namespace gamut::cuda::nccl {

// Where libnccl is looked for, in order: $GAMUT_NCCL_LIBRARY alone when it is set; else
// libnccl.so.2 on the loader's path, in the CUDA toolkit this was built against, and in the
// nvidia/nccl/lib folder of a pip package (nvidia-nccl-cu12 / -cu13) in the site-packages that
// holds this library or in $VIRTUAL_ENV.
std::vector<std::string> library_candidates();

// Loads the library once per process; false (and `why`: one line naming what was tried) when
// it cannot. Never throws.
bool available(std::string* why = nullptr);
// Opens one file and checks that it has the entry points used (tests): the same message as
// available() when it does not. Leaves the process's NCCL as it was.
bool try_library(const std::string& path, std::string* why);
std::string version();  // "2.28.3"; throws a device error when NCCL is unavailable

enum class Op { Sum, Max, Min };
enum class Type { U8, I32, I64, F32, F64 };

// One reduction: rank r's `send[r]` (`count` elements in device memory on devices[r]) reduced
// with `op` into `recv` (device memory on devices[0]).
struct Reduction {
  std::vector<const void*> send;
  void* recv = nullptr;
  size_t count = 0;
  Type type = Type::F32;
  Op op = Op::Sum;
};

// Every reduction in one NCCL group (ncclReduce to rank 0), over communicators for `devices`
// (distinct ordinals; made once per device list with ncclCommInitAll, NCCL_NVLS_ENABLE=0 unless
// the environment says otherwise, and kept). Returns when the results are in place. Throws a
// device error naming the NCCL failure.
void reduce_to_first(const std::vector<int>& devices, const std::vector<Reduction>& reductions);

}  // namespace gamut::cuda::nccl
