// The generated kernels' thread-block tiles: their shape, validity and choice (no CUDA headers:
// built in every config).
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

#include "plan/plan.h"

namespace gamut::cuda {

// Thread-block tile (BM x BN, k-slice BK) and per-thread register tile (TM x TN).
// wgmma kernels (tensor_shapes.cpp) also take the ring's stages and the blocks per SM asked of
// __launch_bounds__ from it (0: the mainloop's defaults, 4 and 1; kernel variants set them).
struct TileConfig {
  int bm = 128, bn = 128, bk = 8, tm = 8, tn = 8;
  int stages = 0, blocks = 0;
  int threads() const { return (bm / tm) * (bn / tn); }
  std::string str() const;  // "128x128x8/8x8", with "/s3/b2" where stages / blocks are set
};
// Parse `--tile` text "BMxBNxBK" or "BMxBNxBK/TMxTN"; throws a usage error when malformed.
TileConfig parse_tile(const std::string& text);

// Warp arrangement of a tile: a warp covers warp_m x warp_n threads of the
// (bm/tm, bn/tn) thread grid.
struct WarpShape {
  int warp_m = 0, warp_n = 0;
};

// Whether the generated kernel supports `t`; `why` gets the reason when not.
bool tile_valid(const TileConfig& t, std::string* why = nullptr);
WarpShape warp_shape(const TileConfig& t);

// Estimated registers per thread of the kernel for `plan` with tile `t` (accumulators,
// fragments, staged loads and a fixed overhead): what tile choice and launch bounds use.
int estimate_registers(const Plan& plan, const TileConfig& t);
// Estimates up to this leave ptxas room for 128 registers per thread without spilling (checked
// against ptxas on the reference queries): such kernels are bounded to 128, others get 255.
constexpr int kRegisterBudget = 124;
// The same for the one-block-per-SM tile 128x256x16/8x16 (255 registers). The estimate is not
// exact (some kernels above 200 compile without spills, some below spill): 200 keeps every
// reference query spill-free.
constexpr int kBigTileBudget = 200;

// The tile chosen for a plan on a device described by (sm_count, smem_per_block) (no device
// needed), with the axis extents the plan's literal ranges give.
TileConfig choose_tile(const Plan& plan, int sm_count, size_t smem_per_block);
// choose_tile with the problem size known (rows, cols of the (i, j) space, batch count):
// the largest tile that fits registers and shared memory, then smaller ones while the grid
// would not give every SM a block. rows/cols < 0: unknown (assumed large).
TileConfig choose_tile_sized(const Plan& plan, int64_t rows, int64_t cols, int64_t batch, int sm_count,
                             size_t smem_per_block);

}  // namespace gamut::cuda
