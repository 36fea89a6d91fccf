// Device finalisation of plain and distinct lists: the rows in the spec's order (section 6;
// exactly finalize_list's: per column numbers ascending, NaN last, raw bits breaking ties),
// distinct keeping one of each set of bit-identical rows. The rows stay on the device; only the
// final ones are downloaded.
// How: distinct drops repeats first with a device hash set; then one stable CUB radix sort pass
// per 64-bit key word (order_keys.h: columns packed whole into words, last word first)
// permutes row indices, and the columns are gathered through the permutation.
#pragma once
#include <cstdint>
#include <vector>

#include "core/types.h"
#include "cuda/outputs/list/finish/sort.h"
#include "cuda/runtime.h"

namespace gamut::cuda {

// Device scratch of the finaliser, kept between calls so that benchmark repetitions do not
// allocate again; buffers grow, never shrink.
struct ListOrderScratch {
  DeviceBuffer keys[2], rows[2], temp, table, refs, count;
  std::vector<DeviceBuffer> gathered;  // first_rows_of_groups' columns, swapped with the caller's
};

// cols[c].dst[r] = cols[c].src[rows[r]] for r < m: every column in as few launches as
// sortdev::gather_columns allows (the dst buffers already hold m rows).
void gather_list_columns(const std::vector<sortdev::GatherColumn>& cols, const uint32_t* rows, uint64_t m);

// The largest list ordered on the device (row indices are u32 and grid loops stay in range);
// longer lists are finalised on the host.
constexpr uint64_t kMaxDeviceOrderRows = 0x7fffffffu;

// cols[c] holds n rows of dtypes[c]. Writes the final rows' columns to `out` (reusing its
// buffers when large enough; a buffer may be larger than the rows) and returns their number.
// n <= kMaxDeviceOrderRows. With `key_columns`, only the first that many columns order the rows
// (the caller knows they already order them totally; the others are carried along): fewer
// sort passes. Distinct compares whole rows and takes every column as key. `ranges` (per
// column, may be shorter or empty): an integer column whose values all lie in [lo, lo + count)
// (count > 0) is keyed as value - lo in as few bits as that needs (a pair's b, i and j, whose
// ranges the run knows): the key words hold more columns, and fewer words mean fewer sorts.
struct KeyRange {
  int64_t lo = 0;
  uint64_t count = 0;  // 0: no range known
};
uint64_t order_list_rows(const std::vector<const DeviceBuffer*>& cols, const std::vector<DType>& dtypes, uint64_t n,
                         bool distinct, ListOrderScratch& scratch, std::vector<DeviceBuffer>& out,
                         size_t key_columns = SIZE_MAX, const std::vector<KeyRange>& ranges = {});

// A plain list's ordering enqueued before its row count is known on the host (nothing waits):
// rows [0, n) of `cols`, of which those below *n_device (device memory, at most n) are the
// list's. Afterwards `order` holds n row indices, the list's rows first and in the order
// order_list_rows gives them (the same keys, stable passes), then the others. n >= 1.
void enqueue_list_order(const std::vector<const DeviceBuffer*>& cols, const std::vector<DType>& dtypes, uint64_t n,
                        const uint64_t* n_device, ListOrderScratch& scratch, DeviceBuffer& order,
                        size_t key_columns = SIZE_MAX, const std::vector<KeyRange>& ranges = {});

// Top/bottom rows already in the list's order (groups (b[r], g[r]) contiguous, each group's rows
// by rank): keeps the first `limit` rows of each group (more come where ranks tie at the N-th),
// gathering `cols` in place, and returns their number. n <= kMaxDeviceOrderRows.
uint64_t first_rows_of_groups(const DeviceBuffer& b, const DeviceBuffer& g, uint64_t n, int64_t limit,
                              ListOrderScratch& scratch, std::vector<DeviceBuffer>& cols,
                              const std::vector<DType>& dtypes);

}  // namespace gamut::cuda
