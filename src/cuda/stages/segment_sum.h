// A dedicated GPU segment sum for the first two stages of aggregate push-down.
//
//   out[g, k] (or out[k, g]) = sum over i in rows with index[i] == g of src[i, k] (or src[k, i])
//
// It computes what the stage queries `pd_A` / `pd_B` compute (rewrite/aggregate_pushdown.cpp),
// which stay the definition and what the CPU runs. The masked-product form has only
// ceil(G/BM) x ceil(K/BN) blocks, each with a serial reduction over all rows; this kernel spreads
// the rows over the whole GPU instead and reads the input once.
#pragma once
#include <string>
#include <vector>

#include "bind/instance.h"
#include "cuda/codegen/stage_sources.h"

namespace gamut::cuda {

struct SegmentSumShape {
  bool src_k_minor = true;   // src[i, k] (k contiguous); false: src[k, i]
  bool group_rows = true;    // out[g, k], shape (groups, k.end); false: out[k, g], shape (k.end, groups)
  int64_t groups = 0;        // every index value in rows is in [0, groups) (binding checked it)
  AxisRange rows, k;         // entries of out for k below k.begin stay 0
};

// Which kernel ran: shared-memory sums per block, global atomics per element (too many groups for
// shared memory), or none (nothing to sum).
enum class SegmentSumPath { Empty, Tiled, Direct };

struct SegmentSumStats {
  double kernel_ms = 0;            // memset + launch, CUDA events
  double compile_ms = 0;
  std::string cache_hit;           // cache_hit_name(): "compiled" | "disk" | "memory"
  SegmentSumPath path = SegmentSumPath::Empty;
  std::vector<double> runs_ms;     // one per timed repetition
};

// Run on the GPU; the result has dtype storage_type_of(acc_type). acc_type must be
// segment_sum_acc_type(src.dtype). repeats > 0: one untimed warm-up and `repeats` timed runs.
// Throws Error(ExitCode::Device) without a device.
NDArray segment_sum(const NDArray& src, const NDArray& index, const SegmentSumShape& shape, CType acc_type,
                    int repeats = 0, SegmentSumStats* stats = nullptr);

}  // namespace gamut::cuda
