// The CUDA engine: plan -> generated CUDA C++ -> NVRTC (cached) -> launch -> Results. The code
// generator's vocabulary (TileConfig, CodegenOptions, KernelSpec, generate_source) comes from
// cuda/codegen/kernel_spec.h.
#pragma once
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "bind/instance.h"
#include "cuda/codegen/kernel_spec.h"
#include "cuda/codegen/seen_box.h"
#include "cuda/codegen/tuned_table.h"
#include "cuda/launch_record.h"
#include "gamut/gamut.h"
#include "plan/math_choice.h"

namespace gamut::cuda {

struct GpuRunOptions {
  std::optional<TileConfig> tile;        // override the chosen tile (benchmarks)
  std::optional<KernelVariant> variant;  // a forced kernel variant (benchmarks, `gamut tune`)
  bool use_tuned = true;                 // false: the heuristics even where a tuned table exists
  std::string arch;                      // override the NVRTC arch ("" = the device's)
  int warmup = 0;                        // benchmarks: untimed launches after the result run
  int repeats = 0;                       // benchmarks: timed launches, each in GpuRunStats::runs_ms
  bool masked_joins = false;             // run `when` keys as a mask over every tile (no key grouping)
  // Distinct lists of vector lookups (Areas(Pzip[i], Rzip[j])) on a seen table of their value
  // box where it is small (outputs/list/finish/seen.h); false: the tile hash and the device hash set (tests).
  bool seen_tables = true;
  // Persistent kernels (KernelInfo::persistent): blocks launched, each looping over tiles; 0 is
  // one per SM. Tests launch a few to give each block many tiles.
  int resident_blocks = 0;
  // The list buffers' first capacity in rows (0: initial_list_rows' estimate). Tests give a
  // few rows, so that the lists overflow and the kernel runs again with room for every row.
  int64_t list_rows = 0;
  F32Math f32_math = F32Math::Ieee;  // sums of products of f32 inputs (spec section 10, RunOptions)
  // Dense outputs in memory the caller provides: dense_output(d, bytes) gives device memory for
  // output d in C order (Instance::dense_shapes[d]). Results::dense[d] then views it (bytes the
  // host does not read).
  std::function<void*(size_t d, size_t bytes)> dense_output;
  // List outputs in memory the caller provides: list_output(l, rows) gives device memory for
  // each column of list l (rows elements of the column's storage type each), where the list's
  // final rows are on the device (ordered there: every list but top/bottom ones with 64-bit
  // keys or more than 2^31-1 rows); they are copied there in stream order and Results::lists[l]
  // has the row count and no column bytes. Lists it is not called for come to the host.
  std::function<std::vector<void*>(size_t l, int64_t rows)> list_output;
  // No CUDA-event timing and no waiting: the results are ready in order on current_stream().
  // (List outputs still wait for their row counts.)
  bool asynchronous = false;
  // A slot the caller keeps for one typed plan (the library: one per query and signature of
  // input types): the kernel info and loaded kernel per tile variant, so that a repeated run
  // skips code generation and the cache-key hash, and the list outputs' device buffers of the
  // last run (up to kKeptListBytes, on the same device, on the legacy default stream only: a
  // caller's stream may be gone before the memo), so that it does not allocate and poison them
  // again. Never shared between plans.
  std::shared_ptr<void>* kernel_memo = nullptr;  // from new_kernel_memo()
  // Called with (steps done, steps in all) after the compilation, the result launch and each
  // benchmark launch (a progress bar's steps).
  std::function<void(int64_t done, int64_t total)> progress;
  // Set from any thread to stop the run with gamut::Cancelled before its next kernel launch (the
  // result launch, a relaunch for lists that overflowed, a benchmark launch).
  const std::atomic<bool>* cancel = nullptr;
  // Where the run was one launch that a repeated call can replay (asynchronous, dense outputs in
  // the caller's memory, every input read in place, no lists, operand copies or computed output
  // indices): filled with it (kernel set); left as it is otherwise.
  LaunchRecord* record = nullptr;
};
std::shared_ptr<void> new_kernel_memo();
// The most device memory a kernel memo keeps for list outputs between runs.
constexpr size_t kKeptListBytes = size_t(256) << 20;

// What run_gpu records: the public run record (gamut::RunStats: backend "gpu", seconds and
// kernel_seconds, compile_ms, cache, tile (the KernelSpec's label), mainloop, list_rows_appended,
// list_seen_cells), handed on as it is, and the engine's details below.
struct GpuRunStats : RunStats {
  double kernel_ms = 0;  // device time of the result launches (CUDA events)
  std::string cache_key;
  // One per GpuRunOptions::repeats (CUDA events): the kernel and the device side of the lists
  // (ordering, distinct, top/bottom selection), and the kernel alone. seconds and
  // kernel_seconds are their medians (with no repeats: kernel_ms, and 0).
  std::vector<double> runs_ms, runs_kernel_ms;
  // Launches for the result: 1, or more where a list outgrew its buffers and the kernel ran again.
  int result_launches = 0;
  // Blocks per launch: one per tile, or fewer for a persistent kernel (KernelInfo::persistent).
  int64_t launch_blocks = 0;
  bool persistent = false;
  bool resident_top = false;  // KernelInfo::resident_top: the list's thresholds kept in the blocks
  // Lists finished in stream order behind the last launch, before the count came down
  // (DeviceLists::select_before_count: top / bottom lists selected, plain lists ordered).
  int lists_finished_with_kernel = 0;
};

// True when this build has the CUDA backend and a device is usable.
bool gpu_available(std::string* why = nullptr);

// Run on the GPU. Throws Error(ExitCode::Device) without a device.
Results run_gpu(const Instance& inst, const GpuRunOptions& options = {}, GpuRunStats* stats = nullptr);

// The calling thread's device as a KernelTarget, with the tuned table `gamut tune` wrote for it
// in the kernel cache directory (tuned_table_for: read once per process). Throws
// Error(ExitCode::Device) without a device.
KernelTarget current_kernel_target();
// That table's key for the current device.
TunedDevice current_tuned_device();

// The kernel run_gpu runs for `inst` with `options` on `target`, where `boxes` are the seen
// tables' value boxes of the run (seen_boxes; none without options.seen_tables) and
// options.arch, where set, replaces the target's. `explain --source` calls it too, so what it
// shows is what runs. No device needed.
// `few_kept`: the last run of the same query kept few of its pairs (KernelRequest::few_kept; the
// engine's kernel memo knows it).
inline KernelSpec gpu_kernel_spec(const Instance& inst, const GpuRunOptions& options, KernelTarget target,
                                  const std::vector<std::optional<SeenBox>>& boxes, bool few_kept = false) {
  if (!options.arch.empty()) target.arch = options.arch;
  const KernelRequest request{
      options.tile,    options.masked_joins, options.f32_math, every_distinct_seen(*inst.plan, boxes),
      options.variant, options.use_tuned,    few_kept};
  return choose_kernel_spec(inst, target, request);
}

}  // namespace gamut::cuda
