// The tensor-core mainloop as the code generator sees it (src/cuda/device/mainloop/gamut_tc_*.cuh): its
// tile shapes, shared memory, and the lines a generated kernel declares it with. What a kernel
// hands to the output operators is the accumulator map (docs/tensor-cores.md): the map type's
// name, the accumulator array's name and element type, the headers. No CUDA headers.
#pragma once
#include <cstddef>
#include <string>
#include <vector>

#include "core/types.h"
#include "cuda/codegen/kernel_spec.h"
#include "plan/math_choice.h"

namespace gamut::cuda {

// Block tile BM x BN, k-slice BK (elements of the operands), WARPS_M x WARPS_N warps, STAGES
// slices in flight (gm::tc::TcShape). wgmma: the wgmma mainloop (gm::tc::WgShape: BM / 64
// warpgroups, BK one 128-byte row: 64 for f16 / bf16, 32 for tf32; warps_m / warps_n unused).
// tma (with wgmma): fed by TMA from a producer warp after the warpgroups
// (gm::tc::WgmmaTmaMainloop), which threads() counts.
struct TcTile {
  int bm = 128, bn = 128, bk = 32, warps_m = 2, warps_n = 4, stages = 4;
  bool wgmma = false;
  bool tma = false;
  // TMA: blocks per cluster (2: row tiles 2p and 2p + 1 share the column operand's slices,
  // multicast; gm::tc::WgmmaTmaMainloop's CLUSTER).
  int cluster = 1;
  // TMA: B's k-slices kept in shared memory for a band of tiles sharing a column tile (0: B
  // streams through the ring with A; gm::tc::WgmmaTmaMainloop's PANEL, equal to the stages).
  int panel = 0;
  // TMA: threads before the consumers that run the outputs while the consumers run the next
  // tile's products (0, or as many as the consumers; gm::tc::WgmmaTmaMainloop's EPI).
  int epilogue = 0;
  // wgmma: blocks per SM asked of __launch_bounds__ (0: one; TileConfig::blocks).
  int blocks = 0;
  // TMA: consumer groups (2: ping-pong, one warpgroup each over BM = 64, each running tiles of
  // its own so that one group's products overlap the other's outputs; gm::tc::WgmmaTmaMainloop's
  // GROUPS). The output operators see one group (Shape::THREADS).
  int groups = 1;
  int threads() const { return wgmma ? epilogue + groups * 128 * (bm / 64) + (tma ? 128 : 0) : 32 * warps_m * warps_n; }
  std::string str() const;  // "128x128x32/2x4/s4", "128x256x64/wgmma/s4", "128x256x64/wgmma-tma/s4"
};

// One instantiation of gm::tc::Mainloop.
struct TcMainloopSpec {
  InnerMath math = InnerMath::BF16;  // not Simt
  DType a_type = DType::BF16;        // storage types of the row and column operands (they
  DType b_type = DType::BF16;        //   differ only for i8 x u8)
  TcTile tile;
  bool a_kcontig = true;   // A is X[i, k] (else X[k, i])
  bool b_kcontig = false;  // B is Y[j, k] (else Y[k, j])
};

// The kernel's attributes after __launch_bounds__: " __cluster_dims__(2, 1, 1)" for a cluster
// of two, else "".
std::string tc_kernel_attributes(const TcMainloopSpec& s);

// The spec for the math a plan chose (MathChoice::tensor_cores()) with the given tile.
TcMainloopSpec tc_spec(const MathChoice& choice, bool a_kcontig, bool b_kcontig, const TcTile& tile);

// Whether the device header accepts the spec (its static_asserts, checked on the host first);
// `why` gets the reason when not.
bool tc_spec_valid(const TcMainloopSpec& s, std::string* why = nullptr);
// Blocks per SM the kernel is bounded for (__launch_bounds__'s second argument): warp tiles of
// 128 accumulators, wgmma, and 8-bit kernels staging both operands through registers (both
// transposed) get the whole register file (255 per thread); others 128 per thread.
int tc_min_blocks(const TcMainloopSpec& s);
// Dynamic shared memory of the mainloop (Mainloop::SMEM_BYTES), bytes.
size_t tc_smem_bytes(const TcMainloopSpec& s);
// The instruction's k (elements): 16 (f16, bf16), 32 (8-bit), 8 (tf32, tf32x3).
int tc_instruction_k(InnerMath m);
// Bytes of one operand element as the tensor cores read it: 2 (f16, bf16), 1 (8-bit), 4 (tf32, tf32x3).
int element_bytes(InnerMath m);
// mma.sync tiles offered for a math, largest first: 128x256 and 128x128 with 8 warps, 64x64 with 4.
std::vector<TcTile> tc_tiles(InnerMath m);
// wgmma tiles, two warpgroups: f16 / bf16 128x256 and 128x128 (with `tma`, their TMA-fed
// forms); tf32 the same, TMA-fed only; tf32x3 128x128 with 3 stages, TMA-fed only; empty for
// 8-bit maths and where the math needs TMA and `tma` is false.
std::vector<TcTile> tc_wgmma_tiles(InnerMath m, bool tma = false);

// The kernel tile of a tensor-core math (TileConfig, as the launcher and the output operators
// see it), TM x TN the accumulator map's grid per thread, so that threads() is the mainloop's 256:
// - f16 / bf16 / tf32 with `wgmma` (sm_90a): the wgmma mainloop, 128 x 256 where a grid of
//   those for rows x cols x batch (when given) fills the sm_count SMs, else 128 x 128 (tf32x3:
//   128 x 128 always; and with `square`, which choose_kernel asks for global top / bottom lists
//   over short reductions); grid 2 x BN/4;
// - otherwise mma.sync, 128 x 128 with the k-slice of tc_tiles, grid 8 x 8 (2 x 4 warps).
// Maths the wgmma mainloop takes on sm_90a: f16, bf16, tf32 and tf32x3 (not 8-bit).
bool wgmma_math(InnerMath m);
// tf32 / tf32x3: wgmma reads f32 operands only k-major, so only from TMA over k-major copies
// the engine makes where the caller's layout is not (src/cuda/stages/k_major_copy.h).
bool wgmma_needs_tma(InnerMath m);
TileConfig tc_kernel_tile(InnerMath m, bool wgmma = false, int64_t rows = -1, int64_t cols = -1, int64_t batch = 1,
                          int sm_count = 0, bool square = false);
// The mainloop tile of a kernel tile of math m: wgmma (4 stages; tf32x3 3) for wgmma_math with
// a 2-row grid, else mma.sync with 2 x 4 warps and 4 stages.
// `tma`: the wgmma tile's TMA-fed form (CodegenOptions::tma; always for tf32 / tf32x3).
TcTile tc_tile_of(const TileConfig& t, InnerMath m, bool tma = false);
// The spec of a plan whose choose_math is `m` (throws an internal error when it is not), with
// the operand orientations of its row and column accesses. `epilogue_warpgroups` (a resident
// top / bottom kernel's CodegenOptions::epilogue_warpgroups): the TMA-fed tile gets them
// (TcTile::epilogue). `pingpong` (CodegenOptions::pingpong): two consumer groups (TcTile::groups).
TcMainloopSpec tc_plan_spec(const Plan& plan, const TileConfig& t, InnerMath m, bool tma = false,
                            bool resident_b = false, bool epilogue_warpgroups = false, bool pingpong = false);

// What the generated kernel names (the accumulator-map interface).
struct TcMainloopNames {
  std::string map = "Mainloop::Map";         // kRows, kCols, row(m), col(n), index(m, n)
  std::string acc = "acc";                   // the accumulator array ...
  std::string acc_type = "Mainloop::Acc";    // ... its element type
  std::string acc_count = "Mainloop::kAcc";  // ... and length
};
// The device headers the spec's mainloop needs.
std::vector<std::string> tc_headers(const TcMainloopSpec& s);

// The kernel-scope declarations: the shape and mainloop typedefs, with a comment naming the
// math and operand orientations. `indent` prefixes every line.
std::string tc_mainloop_decls(const TcMainloopSpec& s, const std::string& indent = "");
// The statements that run the mainloop into `acc` (declared, zeroed, then summed): operands
// `a_operand` / `b_operand` (gm::tc::TcOperand expressions, TmaOperand where TMA feeds it), k
// range, dynamic shared memory. TMA: the stage ring's init, the producer warpgroup's loads (it
// returns there) and the consumers' products into acc (not zeroed: the first k-step sets it),
// ending with a consumer barrier after which the stages may be reused.
std::string tc_mainloop_call(const TcMainloopSpec& s, const std::string& a_operand, const std::string& b_operand,
                             const std::string& k_begin, const std::string& k_end, const std::string& smem,
                             const std::string& indent = "");

}  // namespace gamut::cuda
