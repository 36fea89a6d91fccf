// Plan -> CUDA C++ for NVRTC: what the host needs to launch the generated kernel.
// No CUDA headers: built with and without the CUDA backend.
#pragma once
#include <cstddef>
#include <string>
#include <vector>

#include "cuda/gpu_engine.h"
#include "plan/plan.h"

namespace gamut::cuda {

// The kernel takes one argument: an array of 64-bit words (pointers, sizes, strides, flags,
// parameter values as the bits of their compute type). These are the word positions; -1: not
// used by the kernel.
struct ArgLayout {
  static constexpr int kRowBegin = 0, kRowEnd = 1, kColBegin = 2, kColEnd = 3;
  static constexpr int kRedBegin = 4, kRedEnd = 5, kBatch = 6;
  struct AccessSlots {
    int ptr = -1;       // the operand's device pointer
    int ld = -1;        // elements between rows (2-d patterns)
    int bstride = -1;   // elements between batch instances
    int vec = -1;       // 1: chunks of 4 along the contiguous dimension are aligned (ld, begin, bstride)
  };
  struct ParamSlot {
    int param;
    CType type;         // the parameter converted to this type (convert_scalar)
    int slot;
  };
  struct OutputSlots {
    int ptr = -1;
    std::vector<int> stride;   // per position of output_index(plan, d), elements
    int vec = -1;              // project runs along j may use vector stores
    int elems = -1;            // elements of the (padded) output array
  };
  struct ListSlots {
    int counter = -1;          // u64 rows that reached the emit (may exceed capacity)
    int capacity = -1;         // rows the buffers hold
    std::vector<int> cols;     // per column: storage_type_of(column type) buffer
    int b = -1, i = -1, j = -1;  // int32 buffers
    int key = -1;              // top/bottom: storage_type_of(key type) buffer
    int threshold = -1;        // top/bottom: u32 rank per group, shared by the tiles (gm::TileSelect)
    int reservoir = -1;        // top/bottom: u32[groups][N] ranks of kept rows, or 0 (TileSelect::keep)
  };
  std::vector<AccessSlots> access;   // per Plan::accesses
  std::vector<ParamSlot> params;
  std::vector<OutputSlots> dense;    // per Plan::dense
  std::vector<ListSlots> lists;      // per Plan::lists
  // Key-grouped joins (codegen/join_groups.h): the tile table (4 int32 per block) and the key-ordered
  // position -> index maps of rows and columns.
  int join_tiles = -1, join_rows = -1, join_cols = -1;
  int count = 7;
};

struct KernelInfo {
  ArgLayout args;
  int threads = 0;          // block size (1-d)
  size_t smem_bytes = 0;    // dynamic shared memory per block
};

// Everything the host needs to launch the kernel generate_source(plan, tile) renders.
// Throws Error(ExitCode::Query) for a plan the generator does not support.
KernelInfo kernel_info(const Plan& plan, const TileConfig& tile);

// The index positions of dense output d as the kernel and the CPU engine address it: the
// target's, with the batch axis prepended when the plan is batched and the target omits it.
std::vector<OutIndex> output_index(const Plan& plan, int d);

// True when project output d is stored in runs along j (its last index is the column axis).
bool output_runs_along_j(const Plan& plan, int d);

}  // namespace gamut::cuda
