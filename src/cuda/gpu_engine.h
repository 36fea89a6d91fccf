// The CUDA engine: plan -> generated CUDA C++ -> NVRTC (cached) -> launch -> Results.
#pragma once
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "bind/instance.h"
#include "plan/math_choice.h"

namespace gamut::cuda {

// Thread-block tile (BM x BN, k-slice BK) and per-thread register tile (TM x TN).
struct TileConfig {
  int bm = 128, bn = 128, bk = 8, tm = 8, tn = 8;
  int threads() const { return (bm / tm) * (bn / tn); }
  std::string str() const;  // "128x128x8/8x8"
};
// Parse `--tile` text "BMxBNxBK" or "BMxBNxBK/TMxTN"; throws a usage error when malformed.
TileConfig parse_tile(const std::string& text);

struct GpuRunOptions {
  std::optional<TileConfig> tile;  // override the chosen tile (benchmarks)
  std::string arch;                // override the NVRTC arch ("" = the device's)
  int warmup = 0;                  // benchmarks: untimed launches after the result run
  int repeats = 0;                 // benchmarks: timed launches, each in GpuRunStats::runs_ms
  bool masked_joins = false;       // run `when` keys as a mask over every tile (no key grouping)
  // Distinct lists of vector lookups (Areas(Pzip[i], Rzip[j])) on a seen table of their value
  // box where it is small (lists/seen.h); false: the tile hash and the device hash set (tests).
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
};
std::shared_ptr<void> new_kernel_memo();
// The most device memory a kernel memo keeps for list outputs between runs.
constexpr size_t kKeptListBytes = size_t(256) << 20;

struct GpuRunStats {
  double kernel_ms = 0;  // device time of the launches (CUDA events)
  double compile_ms = 0;
  std::string cache_hit;  // "compiled" | "disk" | "memory"
  std::string cache_key;
  std::string tile;
  std::string mainloop;  // "simt" | "mma.sync" | "wgmma": what the kernel ran
  // One per GpuRunOptions::repeats (CUDA events): the kernel and the device side of the lists
  // (ordering, distinct, top/bottom selection), and the kernel alone.
  std::vector<double> runs_ms, runs_kernel_ms;
  // Per list: rows the kernel appended in its last launch (the list's counter), before the
  // device finalisation (top/bottom selection, distinct); what tile pre-selection and per-tile
  // de-duplication save shows here.
  std::vector<uint64_t> list_rows_appended;
  // Per list: the cells of its seen table (lists/seen.h), 0 where it ran on the tile hash.
  std::vector<int64_t> list_seen_cells;
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

// The tile chosen for a plan on a device described by (sm_count, smem_per_block) (no device needed).
TileConfig choose_tile(const Plan& plan, int sm_count, size_t smem_per_block);
// Code variants that depend on more than the plan and tile (the bound data).
struct CodegenOptions {
  // Tropical (add-max / add-min) step on 16-bit lanes, two (i, j) pairs per 32-bit register
  // with one DPX instruction (__viaddmax_s16x2): only where packed16_form() holds for the plan
  // and packed16_data_fits() for the data, so the result is the exact i32 one.
  bool packed16 = false;
  // Key-grouped join (codegen/join_groups.h): blocks read their rows and columns from a tile table and
  // position -> index maps; the tile operands are gathered into key order.
  bool grouped_join = false;
  // The tensor-core mainloop of this math (docs/tensor-cores.md) instead of the SIMT one; the
  // tile is then tc_kernel_tile(math) (codegen/mainloop_tensor.h). Simt: the SIMT mainloop.
  InnerMath tensor_math = InnerMath::Simt;
  bool tensor_cores() const { return tensor_math != InnerMath::Simt; }
  // The wgmma mainloop fed by TMA from a producer warp (gamut_tc_wgmma_tma.cuh): where
  // tma_starts_fit() (operands TMA cannot read in place are copied, stages/k_major_copy.h); the
  // kernel then takes two tensor maps (ArgLayout::tma_a / tma_b).
  bool tma = false;
  // With tma: the column operand's k-slices stay in shared memory for a band of tiles sharing a
  // column tile, and persistent blocks run their tiles band by band (choose_kernel decides).
  bool resident_b = false;
  // With tma: a top / bottom list per i (per j) of N <= 32 keeps each row's (column's) best
  // ranks in the block (gm::ResidentTop): persistent blocks run contiguous tiles with column
  // (row) tiles fastest (choose_kernel decides; plan/math_choice.h resident_top_form holds).
  bool resident_top = false;
  // With resident_top: epilogue warpgroups run a tile's outputs while the consumers run the next
  // tile's products (TcTile::epilogue; choose_kernel: where the products are long enough).
  bool epilogue_warpgroups = false;
};
// The CUDA C++ generated for a typed plan (no device needed): what NVRTC compiles.
std::string generate_source(const Plan& plan, const TileConfig& tile, const CodegenOptions& options = {});

// The tile packed 16-bit steps run with unless --tile says otherwise (or the grid is small).
inline const TileConfig kPacked16Tile{128, 128, 8, 8, 8};
// The plan-level conditions of CodegenOptions::packed16 (src/cuda/codegen/packed16.cpp).
bool packed16_form(const Plan& plan, const TileConfig& tile);
// The data-level condition: every sum of a row and a column operand value fits in 16 bits.
bool packed16_data_fits(const Plan& plan, const Instance& inst);

// The tile and code variants run_gpu gives a bound instance on a device of `sm_count` SMs and
// `smem_per_block` bytes (no device needed; `explain --source` shows the same kernel). With
// `tile`, that tile; `masked_joins` and `f32_math` as in GpuRunOptions. Sums of products whose
// math (choose_math) runs on tensor cores get the tensor-core mainloop, except with a forced
// tile, packed 16-bit steps or a key-grouped join (those keep the SIMT mainloop), and on devices
// without the tensor-core instructions used (`isa`). f16 / bf16 products run on wgmma where the
// device has it (sm_90a), every other tensor-core math on mma.sync.
struct KernelChoice {
  TileConfig tile;
  CodegenOptions options;
  MathChoice math;  // executed_math of the plan (its operand accesses feed the TMA maps)
};
// The tensor-core instructions of a device: none (compute capability below 8.0: no bf16 / tf32
// mma.sync, no cp.async), mma.sync (8.0 on), and wgmma too (9.0, compiled for sm_90a).
enum class TensorIsa : uint8_t { None, MmaSync, Wgmma };
TensorIsa tensor_isa(int cc_major, int cc_minor);
// Whether the TMA unit can read the tensor-core operands of `m` in place: 16-byte aligned
// starts, row and batch pitches (device inputs as given; gamut's own copies have input_pitch
// rows), and ranges starting on 16 bytes of the contiguous axis. tma_starts_fit: the ranges
// alone (CodegenOptions::tma: the engine re-pitches device inputs TMA cannot address).
bool tma_operands_fit(const Instance& inst, const MathChoice& m);
bool tma_starts_fit(const Instance& inst, const MathChoice& m);
// Elements between the rows of gamut's device copy of a matrix input: whole 16-byte chunks.
int64_t input_pitch(int64_t cols, DType t);
// `every_distinct_seen`: every distinct list of the plan runs on a seen table in this run
// (codegen/seen_box.h): such plans take wgmma where the math allows it (MathChoice::wgmma_if_seen).
KernelChoice choose_kernel(const Instance& inst, int sm_count, size_t smem_per_block,
                           const std::optional<TileConfig>& tile = std::nullopt, bool masked_joins = false,
                           F32Math f32_math = F32Math::Ieee, TensorIsa isa = TensorIsa::Wgmma,
                           bool every_distinct_seen = false);
// Name of the kernel entry point(s) in generated source.
extern const char* const kMainKernelName;

}  // namespace gamut::cuda
