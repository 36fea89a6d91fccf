// In-process NVRTC: CUDA C++ text (plus the embedded device headers) -> cubin.
#include <nvrtc.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "core/error.h"
#include "cuda/runtime/embedded_headers.h"
#include "cuda/runtime.h"
#include "cuda/runtime/internal.h"

// The toolkit's include dirs at build time, ':'-separated (CMake's CUDAToolkit_INCLUDE_DIRS).
#ifndef GAMUT_CUDA_INCLUDE_DIRS
#define GAMUT_CUDA_INCLUDE_DIRS ""
#endif

namespace gamut::cuda {

namespace {

void check_nvrtc(nvrtcResult r, const char* what) {
  if (r != NVRTC_SUCCESS)
    throw_device_error(std::string("NVRTC ") + what + ": " + nvrtcGetErrorString(r));
}

// Closes the program on every path out of nvrtc_run.
struct Program {
  nvrtcProgram p = nullptr;
  ~Program() {
    if (p) nvrtcDestroyProgram(&p);
  }
};

std::string trim_log(std::string log) {
  while (!log.empty() && (log.back() == '\0' || log.back() == '\n' || log.back() == ' '))
    log.pop_back();
  return log;
}

const std::vector<std::string>& base_options() {
  // Computed once: the include dirs are probed on disk. No --use_fast_math: results must be
  // exact fp32 (it would flush denormals and approximate division and sqrt).
  static const std::vector<std::string> opts = [] {
    std::vector<std::string> v = {"-std=c++17", "-default-device"};
    // NVRTC 13 has no built-in cuda_fp16.h/cuda_bf16.h/CCCL, so point it at the toolkit's
    // headers when they exist here at run time (they may not on a machine with only the binary).
    std::string dirs = GAMUT_CUDA_INCLUDE_DIRS;
    std::vector<std::string> found;
    auto add = [&](const std::filesystem::path& d) {
      std::error_code ec;
      if (!std::filesystem::is_directory(d, ec)) return;
      for (const auto& f : found)
        if (f == d.string()) return;
      found.push_back(d.string());
    };
    size_t start = 0;
    while (start <= dirs.size()) {
      size_t end = dirs.find(':', start);
      if (end == std::string::npos) end = dirs.size();
      if (end > start) {
        std::filesystem::path d = dirs.substr(start, end - start);
        add(d);
        add(d / "cccl");  // CUDA 13 moved libcu++/CUB/Thrust there
      }
      start = end + 1;
    }
    for (const auto& d : found) v.push_back("-I" + d);
    // Experiment (bench/NOTES.md, session 19): NVRTC's --Ofast-compile level, min / mid / max.
    if (const char* level = std::getenv("GAMUT_EXPERIMENT_FAST_COMPILE")) {
      const std::string l = level;
      if (l == "min" || l == "mid" || l == "max") v.push_back("--Ofast-compile=" + l);
    }
    // Diagnosis: more NVRTC options, space-separated (e.g. "-Xptxas=-O0"); part of the cache key.
    if (const char* extra = std::getenv("GAMUT_NVRTC_OPTIONS")) {
      std::istringstream words(extra);
      for (std::string w; words >> w;) v.push_back(w);
    }
    return v;
  }();
  return opts;
}

}  // namespace

namespace detail {

std::vector<std::string> nvrtc_options(const CompileOptions& options) {
  std::vector<std::string> v = {"--gpu-architecture=" + options.arch};
  const auto& base = base_options();
  v.insert(v.end(), base.begin(), base.end());
  v.insert(v.end(), options.extra.begin(), options.extra.end());
  return v;
}

NvrtcResult nvrtc_run(const std::string& source, const CompileOptions& options,
                      const std::string& program_name) {
  std::vector<const char*> headers, names;
  for (int i = 0; i < kEmbeddedHeaderCount; ++i) {
    headers.push_back(kEmbeddedHeaders[i].text);
    names.push_back(kEmbeddedHeaders[i].name);
  }
  const std::vector<std::string> opts = nvrtc_options(options);
  std::vector<const char*> argv;
  for (const auto& o : opts) argv.push_back(o.c_str());

  const auto t0 = std::chrono::steady_clock::now();
  Program prog;
  check_nvrtc(nvrtcCreateProgram(&prog.p, source.c_str(), program_name.c_str(),
                                 static_cast<int>(headers.size()),
                                 headers.empty() ? nullptr : headers.data(),
                                 names.empty() ? nullptr : names.data()),
              "nvrtcCreateProgram");
  const nvrtcResult compiled =
      nvrtcCompileProgram(prog.p, static_cast<int>(argv.size()), argv.data());

  NvrtcResult out;
  size_t log_size = 0;
  check_nvrtc(nvrtcGetProgramLogSize(prog.p, &log_size), "nvrtcGetProgramLogSize");
  std::string log(log_size, '\0');
  if (log_size) check_nvrtc(nvrtcGetProgramLog(prog.p, log.data()), "nvrtcGetProgramLog");
  out.log = trim_log(std::move(log));

  if (compiled == NVRTC_ERROR_COMPILATION) return out;  // ok = false: the caller reports it
  if (compiled != NVRTC_SUCCESS) {
    // Not the code's fault: a bad option (e.g. an unknown arch) or NVRTC itself failing.
    std::string first = out.log.substr(0, out.log.find('\n'));
    throw_device_error(std::string("NVRTC nvrtcCompileProgram: ") + nvrtcGetErrorString(compiled) +
                       (first.empty() ? "" : ": " + first));
  }
  size_t cubin_size = 0;
  check_nvrtc(nvrtcGetCUBINSize(prog.p, &cubin_size), "nvrtcGetCUBINSize");
  if (cubin_size == 0)
    throw_device_error("NVRTC produced no cubin for " + options.arch +
                       " (a virtual compute_XX arch gives PTX only)");
  out.cubin.resize(cubin_size);
  check_nvrtc(nvrtcGetCUBIN(prog.p, out.cubin.data()), "nvrtcGetCUBIN");
  out.ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  out.ok = true;
  return out;
}

void throw_compile_error(const std::string& kept_path, const std::string& log) {
  // One line for the error itself; the CLI prints the NVRTC log that follows in full.
  std::string line = "query error: NVRTC could not compile the generated CUDA code, kept at " +
                     (kept_path.empty() ? std::string("(nowhere: no writable directory)")
                                        : kept_path);
  throw Error(ExitCode::Query, line + "\n" + log);
}

}  // namespace detail

std::string nvrtc_compile(const std::string& source, const CompileOptions& options,
                          std::string* log_out) {
  detail::NvrtcResult r = detail::nvrtc_run(source, options, "gamut_kernel.cu");
  if (log_out) *log_out = r.log;
  if (!r.ok) {
    const std::string key = detail::cache_key(source, options, "");
    detail::throw_compile_error(detail::keep_failed_source(key, source), r.log);
  }
  return std::move(r.cubin);
}

std::string nvrtc_version() {
  static const std::string version = [] {
    int major = 0, minor = 0;
    check_nvrtc(nvrtcVersion(&major, &minor), "nvrtcVersion");
    return std::to_string(major) + "." + std::to_string(minor);
  }();
  return version;
}

}  // namespace gamut::cuda
