// Shared between the runtime's .cpp files only (it includes CUDA headers; runtime.h does not).
#pragma once
#include <cuda_runtime_api.h>

#include <string>
#include <vector>

#include "cuda/runtime.h"

namespace gamut::cuda::detail {

// Throws Error(ExitCode::Device, "device error: WHAT: cudaErrorX: text") unless err is cudaSuccess.
void check(cudaError_t err, const std::string& what);
// Throws the "no usable CUDA device" error unless device_available().
void require_device();

// Host-to-device copies of pageable memory from GAMUT_STAGED_UPLOAD_MIN bytes on (default
// 16 MiB; "off": never) go through page-locked staging buffers, several host threads at once
// (staged_upload.cpp). `rows` rows of `row_bytes`, consecutive in host memory, to rows `dpitch`
// apart. False where it does not apply (smaller, no page-locked memory, rows longer than a
// buffer with a pitch): the caller copies as usual.
bool staged_upload_rows(void* dst, size_t dpitch, const void* src, size_t rows, size_t row_bytes,
                        cudaStream_t stream);

// The full NVRTC option list for `options` (fixed flags, toolkit include dirs, options.extra).
std::vector<std::string> nvrtc_options(const CompileOptions& options);

struct NvrtcResult {
  bool ok = false;        // false only for a compile error (NVRTC_ERROR_COMPILATION)
  std::string cubin;
  std::string log;
  double ms = 0;
};
// One NVRTC run; `program_name` is the file name the log refers to. Other NVRTC failures
// (bad option, out of memory) throw a device error.
NvrtcResult nvrtc_run(const std::string& source, const CompileOptions& options,
                      const std::string& program_name);

// The cache key: hex FNV-1a-128 of every input that shapes the cubin.
std::string cache_key(const std::string& source, const CompileOptions& options,
                      const std::string& extra_key);
// Keeps a failed source somewhere a user can open it; returns the path or "".
std::string keep_failed_source(const std::string& key, const std::string& source);
[[noreturn]] void throw_compile_error(const std::string& kept_path, const std::string& log);

}  // namespace gamut::cuda::detail
