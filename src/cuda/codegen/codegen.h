// Plan -> CUDA C++ for NVRTC: what the host needs to launch the generated kernel.
// No CUDA headers: built with and without the CUDA backend.
#pragma once
#include <cstddef>
#include <string>
#include <vector>

#include "cuda/codegen/kernel_args.h"
#include "cuda/codegen/kernel_spec.h"
#include "plan/plan.h"

namespace gamut::cuda {

struct KernelInfo {
  ArgLayout args;
  int threads = 0;        // block size (1-d)
  size_t smem_bytes = 0;  // dynamic shared memory per block
  // Persistent tiles: the launch is one block per SM (at most one per tile) and each block loops
  // over tiles blockIdx.x, + gridDim.x, ...; the output operators' shared memory starts at
  // out_smem_offset, after the mainloop's (docs/tensor-cores.md, "The persistent schedule").
  bool persistent = false;
  size_t out_smem_offset = 0;
  // Persistent with resident B (CodegenOptions::resident_b): block q runs the contiguous tiles
  // [q T / G, (q + 1) T / G) of T in band order (row tiles fastest, so consecutive tiles share
  // their column tile, whose B slices stay loaded), G = gridDim.x.
  bool bands = false;
  // Blocks per cluster (TMA-fed kernels: 2, row tiles 2p and 2p + 1 of one column tile): the
  // grid has 2 ceil(tiles_m / 2) tiles_n blocks per batch instance (a persistent grid: an even
  // count), the column operand's tensor map boxes of BN / 2 rows where k is contiguous.
  int cluster = 1;
  // Persistent with block-resident thresholds of a top / bottom list (CodegenOptions::
  // resident_top): block q runs the contiguous tiles [q T / G, (q + 1) T / G) with column tiles
  // fastest (per i; row tiles per j), and the list's gm::ResidentTop state lies at
  // out_smem_offset + resident_top_offset.
  bool resident_top = false;
  size_t resident_top_offset = 0;
};

// The dynamic shared memory a persistent kernel may take for its stages and its outputs' space:
// sm_90's 227 KB per block, less 1 KB for the operators' static shared memory (TileSelect's).
constexpr size_t kSm90SmemPerBlock = size_t(226) << 10;

// GAMUT_EXPERIMENT_PERSISTENT=0 / =1 (measurements and tests): 0 or 1 where set to either, else -1.
int persistent_experiment();
// GAMUT_EXPERIMENT_PINGPONG=256 / =128 (measurements and tests): that BN for ping-pong kernels of
// every plain select over short k (CodegenOptions::pingpong); =auto: -1, the kernel choice decides
// from the last run's kept share (KernelRequest::few_kept; to become the default once it has run on
// a device); else 0, none.
int pingpong_experiment();
// Whether a kernel of `plan` in math m with tile t may take ping-pong consumer groups
// (CodegenOptions::pingpong): every output a plain list (their operators synchronize per
// group), no `when`, a 64-row tile, one block per SM, not tf32x3.
bool pingpong_form(const Plan& plan, InnerMath m, const TileConfig& t);

// Everything the host needs to launch the kernel generate_source(plan, tile, options) renders.
// Throws Error(ExitCode::Query) for a plan the generator does not support.
KernelInfo kernel_info(const Plan& plan, const TileConfig& tile, const CodegenOptions& options = {});

// The index positions of dense output d as the kernel and the CPU engine address it: the
// target's, with the batch axis prepended when the plan is batched and the target omits it.
std::vector<OutIndex> output_index(const Plan& plan, int d);

// A distinct list whose every column is an integer lookup of a row or column vector, stored as
// it is (Areas(Pzip[i], Rzip[j])), may run on a seen table of its columns' value box
// (gm::SeenCells; the host decides per run from the values): the accesses of its columns, in
// column order; empty for any other list.
std::vector<int> seen_table_columns(const Plan& plan, size_t l);

// True when project output d is stored in runs along j (its last index is the column axis).
bool output_runs_along_j(const Plan& plan, int d);

}  // namespace gamut::cuda
