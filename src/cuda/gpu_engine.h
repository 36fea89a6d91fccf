// The CUDA engine: plan -> generated CUDA C++ -> NVRTC (cached) -> launch -> Results.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "bind/instance.h"

namespace gamut::cuda {

// Thread-block tile (BM x BN, k-slice BK) and per-thread register tile (TM x TN).
struct TileConfig {
  int bm = 128, bn = 128, bk = 8, tm = 8, tn = 8;
  int threads() const { return (bm / tm) * (bn / tn); }
  std::string str() const;   // "128x128x8/8x8"
};
// Parse `--tile` text "BMxBNxBK" or "BMxBNxBK/TMxTN"; throws a usage error when malformed.
TileConfig parse_tile(const std::string& text);

struct GpuRunOptions {
  std::optional<TileConfig> tile;    // override the chosen tile (benchmarks)
  std::string arch;                  // override the NVRTC arch ("" = the device's)
  int warmup = 0;                    // benchmarks: untimed launches after the result run
  int repeats = 0;                   // benchmarks: timed launches, each in GpuRunStats::runs_ms
};

struct GpuRunStats {
  double kernel_ms = 0;              // device time of the launches (CUDA events)
  double compile_ms = 0;
  std::string cache_hit;             // "compiled" | "disk" | "memory"
  std::string cache_key;
  std::string tile;
  std::vector<double> runs_ms;       // one per GpuRunOptions::repeats (CUDA events)
};

// True when this build has the CUDA backend and a device is usable.
bool gpu_available(std::string* why = nullptr);

// Run on the GPU. Throws Error(ExitCode::Device) without a device.
Results run_gpu(const Instance& inst, const GpuRunOptions& options = {}, GpuRunStats* stats = nullptr);

// The tile chosen for a plan on a device described by (sm_count, smem_per_block) (no device needed).
TileConfig choose_tile(const Plan& plan, int sm_count, size_t smem_per_block);
// The CUDA C++ generated for a typed plan (no device needed): what NVRTC compiles.
std::string generate_source(const Plan& plan, const TileConfig& tile);
// Name of the kernel entry point(s) in generated source.
extern const char* const kMainKernelName;

}  // namespace gamut::cuda
