// The final rows of a per-group top / bottom list (per i or per j) with small N, from every
// candidate the main kernel appended, in one pass over the groups (nvcc: top_of_groups.cu).
// Why: the general path (select.h's radix select, then a radix sort of the kept rows) takes
// four rounds of a groups x 256-bin histogram in global memory and an 8-pass sort; for kNN
// (16384 groups, ~77 candidates each) that and its ~30 launches were ~0.6 ms after a 1.4 ms
// kernel (bench/NOTES.md, session 19). Here: the candidates are bucketed by group (a count, a
// scan, a scatter), then a warp per group keeps the N smallest (rank, other axis) of its
// bucket, 32 candidates at a time. The order is finalize_list's: by (b, group), then rank, then
// the other axis, which names a group's rows totally, so exactly min(count, N) rows per group.
#pragma once
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace gamut::cuda::sortdev {

// N up to a warp's lanes: the kept rows of a group live one per lane.
constexpr uint32_t kMaxGroupTopLimit = 32;
// Group indices stay well inside u32 (the scatter addresses words 2 g); beyond this many groups
// the general path runs.
constexpr uint64_t kMaxGroupTopGroups = uint64_t(1) << 24;

struct GroupTopInput {
  const int32_t* b = nullptr;      // batch instance of each candidate
  const int32_t* g = nullptr;      // the group axis (i per i, j per j)
  const int32_t* other = nullptr;  // the other axis: breaks ties of rank within a group
  const int32_t* rank = nullptr;   // gm_sel_sort_rank's rank: gm::rank32 ^ 0x80000000, smaller first
  uint32_t n = 0;                  // candidates (with n_device: at most this many, the buffers' rows)
  // The candidates' count in device memory (a list's row counter, which may pass n): read by the
  // kernels as min(*n_device, n), so that the selection is enqueued before the host knows it.
  const uint64_t* n_device = nullptr;
  uint32_t groups = 0;  // batch x extent, <= kMaxGroupTopGroups
  int64_t extent = 0;   // of the group axis; group of a candidate = b * extent + (g - g_begin)
  int64_t g_begin = 0, o_begin = 0;
  uint32_t limit = 0;  // N, 1 .. kMaxGroupTopLimit
};

// Device scratch top_of_groups needs for n candidates in `groups` groups.
size_t top_of_groups_scratch_bytes(uint32_t n, uint32_t groups);

// Writes the candidate indices of every group's first min(count, N) rows, groups in (b, group)
// order and each group's rows in list order, to `kept` (room for min(n, groups x N)) and their
// number to *kept_n (device memory). Enqueued on `stream`.
cudaError_t top_of_groups(const GroupTopInput& in, void* scratch, uint32_t* kept, uint32_t* kept_n,
                          cudaStream_t stream);

}  // namespace gamut::cuda::sortdev
