// Device kernels behind order.h, compiled by nvcc (src/cuda/outputs/list/finish/sort.cu; CUB's radix
// sort cannot go through NVRTC's embedded headers). Plain pointers and CUDA error codes only:
// order.cpp owns the memory and turns errors into gamut errors. Everything runs on
// the default stream, like the rest of the engine.
#pragma once
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "cuda/outputs/list/finish/order_keys.h"

namespace gamut::cuda::sortdev {

// One list column on the device: `bytes` (1, 2, 4 or 8) per row. range_bits > 0: a signed
// integer column whose every value v lies in [lo, lo + 2^range_bits): its key is v - lo in
// range_bits bits (the same order as the whole-width key, in fewer radix passes).
struct ColumnRef {
  const void* data = nullptr;
  int bytes = 0;
  order::KeyKind kind = order::KeyKind::Unsigned;
  int range_bits = 0;
  int64_t lo = 0;
};

// Columns of one key word: at most 8, since each is at least 8 bits of the word's 64.
constexpr int kMaxWordColumns = 8;

// keys[r] = the packed keys (order::column_key) of `cols` for row rows[r]; with `rows` null,
// of row r, and init_rows[r] = r (the identity permutation the first sort pass starts from).
// With `n_device` (device memory): rows at or past *n_device are not the list's, and their key
// is all ones, so that stable passes put them after every row that is (an ordering enqueued
// before the row count is known on the host). Every function enqueues on `stream`
// (gamut::cuda::current_stream()).
cudaError_t write_keys(const ColumnRef* cols, int count, const uint32_t* rows, uint32_t* init_rows, uint64_t* keys,
                       uint32_t n, cudaStream_t stream, const uint64_t* n_device = nullptr);

// One stable radix sort pass (cub::DeviceRadixSort::SortPairs) of n (key, row) pairs on bits
// [0, end_bit) of the keys. keys[0] holds the keys (keys[1] is scratch); rows[*selector] holds
// the rows, and *selector names the buffer that holds them sorted afterwards. With temp null,
// only sets *temp_bytes to the scratch the pass needs.
cudaError_t sort_pairs(void* temp, size_t* temp_bytes, uint64_t* const keys[2], uint32_t* const rows[2], int* selector,
                       uint32_t n, int end_bit, cudaStream_t stream);

// distinct: inserts rows 0..n-1 of `cols` (a device array of `columns` refs) into an open
// addressing set of `slots` (a power of two above n) u32 slots in `table`, and writes one row
// index of each set of bit-identical rows to `kept` (in no order) and their number to *kept_n
// (device memory).
cudaError_t distinct_rows(const ColumnRef* cols, int columns, uint32_t n, uint32_t* table, uint32_t slots,
                          uint32_t* kept, uint32_t* kept_n, cudaStream_t stream);

// Rows ordered by group (b[r], g[r]), groups contiguous: the indices of the rows among the
// first `limit` of their group, in order, to `kept`, and their number to *kept_n (device
// memory); `scratch` holds 5 * n bytes. With temp null, only sets *temp_bytes to the scratch the
// compaction (cub::DeviceSelect::Flagged) needs.
cudaError_t first_of_groups(void* temp, size_t* temp_bytes, const int32_t* b, const int32_t* g, uint32_t n,
                            uint32_t limit, void* scratch, uint32_t* kept, uint32_t* kept_n, cudaStream_t stream);

// One column of a gather: dst[r] = src[rows[r]], elements of `bytes` (1, 2, 4 or 8).
struct GatherColumn {
  void* dst = nullptr;
  const void* src = nullptr;
  int bytes = 0;
};
constexpr int kMaxGatherColumns = 16;

// Every column's gather (count <= kMaxGatherColumns) for r < m in one launch: a list's columns
// after a sort or a selection cost one launch, not one each (the host's launches, ~5 us each,
// were most of a top list's time after its kernel; bench/NOTES.md session 14).
cudaError_t gather_columns(const GatherColumn* cols, int count, const uint32_t* rows, uint32_t m, cudaStream_t stream);

}  // namespace gamut::cuda::sortdev
