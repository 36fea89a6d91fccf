// What kernel a bound query gets: the tile, the code variants and the math, chosen once for a
// device. `run` (run_gpu) and `explain --source` both call choose_kernel_spec, so the kernel
// that runs is the kernel that is shown. No device and no CUDA headers needed.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "bind/instance.h"
#include "cuda/codegen/tile_choice.h"
#include "plan/math_choice.h"

namespace gamut::cuda {

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
  // TMA-fed wgmma kernels: -1 the form decides (layout.cpp persistent_form), 0 one tile per
  // block, 1 persistent wherever the form allows (a kernel variant's, kernel_variants.h).
  int persistent = -1;
  // With tma, persistent and a 64-row tile: two consumer groups each running tiles of its own
  // (ping-pong, TcTile::groups), so that one's products overlap the other's outputs; only where
  // every output is a plain list (their operators synchronize per group).
  bool pingpong = false;
};

// The CUDA C++ generated for a typed plan (no device needed): what NVRTC compiles. The source
// holds everything that shapes the kernel (types, plan, tile), so the cache key hashes it and
// kCodegenSchema alone: nothing is printed per call to form a key.
inline constexpr const char* kCodegenSchema = "gamut-cuda-codegen-4";  // 4: the tropical plain sums by slice vote
std::string generate_source(const Plan& plan, const TileConfig& tile, const CodegenOptions& options = {});
// Name of the kernel entry point(s) in generated source.
extern const char* const kMainKernelName;

// The tile packed 16-bit steps run with unless --tile says otherwise (or the grid is small).
inline const TileConfig kPacked16Tile{128, 128, 8, 8, 8};
// The plan-level conditions of CodegenOptions::packed16 (src/cuda/codegen/packed16.cpp).
bool packed16_form(const Plan& plan, const TileConfig& tile);
// The data-level condition: every sum of a row and a column operand value fits in 16 bits.
bool packed16_data_fits(const Plan& plan, const Instance& inst);

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

// The tile and code variants a bound instance gets on a device of `sm_count` SMs and
// `smem_per_block` bytes. With `tile`, that tile; `masked_joins`: `when` keys as a mask over
// every tile (no key grouping); `f32_math` as RunOptions. Sums of products whose math
// (choose_math) runs on tensor cores get the tensor-core mainloop, except with a forced tile,
// packed 16-bit steps or a key-grouped join (those keep the SIMT mainloop), and on devices
// without the tensor-core instructions used (`isa`). f16 / bf16 products run on wgmma where the
// device has it (sm_90a), every other tensor-core math on mma.sync. `every_distinct_seen`:
// every distinct list of the plan runs on a seen table in this run (codegen/seen_box.h): such
// plans take wgmma where the math allows it (MathChoice::wgmma_if_seen).
struct KernelChoice {
  TileConfig tile;
  CodegenOptions options;
  MathChoice math;  // executed_math of the plan (its operand accesses feed the TMA maps)
};
KernelChoice choose_kernel(const Instance& inst, int sm_count, size_t smem_per_block,
                           const std::optional<TileConfig>& tile = std::nullopt, bool masked_joins = false,
                           F32Math f32_math = F32Math::Ieee, TensorIsa isa = TensorIsa::Wgmma,
                           bool every_distinct_seen = false, bool few_kept = false);

class TunedTable;  // cuda/codegen/tuned_table.h

// A kernel variant forced on the heuristics' choice (kernel_variants.h: the search space of
// `gamut tune`, its validity and text). simt: the SIMT mainloop with `tile` (as --tile forces
// it). Otherwise the TMA-fed wgmma mainloop of the instance's math with BM x BN tiles
// (tile.bm, tile.bn), tile.stages slices in the ring and tile.blocks per SM asked of
// __launch_bounds__; persistent and epilogue warpgroups -1 (as the heuristics decide), 0 (off)
// or 1 (on, where the form allows); pingpong: two consumer groups (64-row tiles, plain selects).
struct KernelVariant {
  bool simt = true;
  TileConfig tile;
  int persistent = -1;
  int epilogue = -1;
  bool pingpong = false;
  // "simt 128x128x8/8x8", "wgmma 64x128 s3 b2", "wgmma 128x256 s4 b1 one-tile",
  // "wgmma 128x128 s4 b1 persistent no-epilogue-wg", "wgmma 64x256 s4 b1 pingpong"
  std::string str() const;
};

// The device a kernel is chosen for. The defaults are an H100 / H200 (132 SMs, 227 KiB of
// shared memory per block, sm_90a): what `explain` assumes without a device.
struct KernelTarget {
  int sm_count = 132;
  size_t smem_per_block = size_t(227) << 10;
  TensorIsa isa = TensorIsa::Wgmma;
  std::string arch = "sm_90a";  // NVRTC's target: kernels for two archs are two variants
  // The winners `gamut tune` found on this device (null: none; choose_kernel_spec then keeps
  // the heuristics' choice).
  std::shared_ptr<const TunedTable> tuned;
};
// The target of a device of compute capability cc_major.cc_minor (arch: arch_for's).
KernelTarget kernel_target(int sm_count, size_t smem_per_block, int cc_major, int cc_minor);

// What a run asks of the choice (GpuRunOptions' fields of the same names).
struct KernelRequest {
  std::optional<TileConfig> tile;  // forced (--tile)
  bool masked_joins = false;
  F32Math f32_math = F32Math::Ieee;
  bool every_distinct_seen = false;
  // Forced (benchmarks, `gamut tune`): a variant of kernel_variants(); not with `tile`.
  std::optional<KernelVariant> variant;
  bool use_tuned = true;  // false: the heuristics' choice even where target.tuned has an entry
  // The last run of this query kept at most kFewKept of its pairs in its lists (the engine's
  // kernel memo): a plain select over short k in 16-bit math then takes ping-pong groups (with
  // GAMUT_EXPERIMENT_PINGPONG=auto for now).
  bool few_kept = false;
};
// The kept share of pairs below which a plain select counts as selective (KernelRequest::few_kept):
// ping-pong groups were 20 % faster at 0.01 % kept and 2 % at 1 %, 24 % slower at 10 % (bench/NOTES.md,
// session 32).
constexpr double kFewKept = 0.005;

// The kernel a run compiles and launches, and the names it goes by.
struct KernelSpec : KernelChoice {
  TensorIsa isa = TensorIsa::Wgmma;
  std::string arch;
  std::string mainloop;  // what the kernel runs: "simt" | "mma.sync" | "wgmma" | "wgmma+tma"
  // The tile and its code variants, as run statistics and `explain --source` name the kernel:
  // "128x128x8/8x8 packed16", "128x256x64/8x8 wgmma+tma bf16 resident-top".
  std::string label;
  // label and arch: everything beyond the plan that shapes the kernel (a kernel memo's key).
  // The math is part of it: tf32 and tf32x3 kernels of one plan share the tile. Resident B and
  // resident thresholds hold only for short k ranges and small N: being part of the variant, a
  // memo never hands such a kernel to a longer k range or a larger N of the same query.
  std::string variant;
  // Who chose it: "heuristic" (choose_kernel), "tuned" (target.tuned's entry for this family
  // and the nearest size it was tuned at) or "forced" (request.variant).
  std::string choice = "heuristic";
  std::string family;  // kernel_family(): what a tuned table files the kernel under
};
// Throws a usage error for a request.variant that does not apply to the instance.
KernelSpec choose_kernel_spec(const Instance& inst, const KernelTarget& target, const KernelRequest& request);

}  // namespace gamut::cuda
