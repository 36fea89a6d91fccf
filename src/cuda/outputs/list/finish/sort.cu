// Kernels for device list finalisation (sort.h): order keys, CUB radix sort passes, the
// distinct hash set, the first rows of each group and column gathers. One SortPairs instantiation (u64 keys, u32 rows)
// keeps the nvcc time of this file small.
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_select.cuh>

#include "cuda/outputs/list/finish/sort.h"

namespace gamut::cuda::sortdev {

namespace {

constexpr unsigned kThreads = 256;
constexpr uint32_t kEmpty = 0xffffffffu;

// Grid-stride kernels: enough blocks to fill a large GPU, no more than the work needs.
unsigned blocks_for(uint32_t work) {
  const uint32_t b = (work + kThreads - 1) / kThreads;
  return b < 1 ? 1 : b > 8192 ? 8192 : b;
}

__device__ __forceinline__ uint64_t load_bits(const void* data, int bytes, uint32_t row) {
  switch (bytes) {
    case 1: return static_cast<const uint8_t*>(data)[row];
    case 2: return static_cast<const uint16_t*>(data)[row];
    case 4: return static_cast<const uint32_t*>(data)[row];
    default: return static_cast<const uint64_t*>(data)[row];
  }
}

struct WordColumns {
  ColumnRef cols[kMaxWordColumns];
  int count;
};

__global__ void keys_kernel(const WordColumns w, const uint32_t* rows, uint32_t* init_rows, uint64_t* keys, uint32_t n,
                            const uint64_t* n_device) {
  // Rows of the list: with n_device, those below the count (the rest sort last); without it,
  // all (rows[] may then name any row of the columns: distinct's kept rows).
  const uint64_t live = n_device ? *n_device : ~0ull;
  for (uint32_t r = blockIdx.x * blockDim.x + threadIdx.x; r < n; r += gridDim.x * blockDim.x) {
    const uint32_t row = rows ? rows[r] : r;
    if (init_rows) init_rows[r] = r;
    if (row >= live) {
      keys[r] = ~0ull;
      continue;
    }
    uint64_t key = 0;
    for (int c = 0; c < w.count; ++c) {
      const ColumnRef& col = w.cols[c];
      const uint64_t raw = load_bits(col.data, col.bytes, row);
      if (col.range_bits > 0) {  // v - lo, v sign-extended from its width
        const int shift = 64 - 8 * col.bytes;
        const int64_t v = int64_t(raw << shift) >> shift;
        key = (key << (col.range_bits / 2)) << (col.range_bits - col.range_bits / 2);
        key |= uint64_t(v) - uint64_t(col.lo);
        continue;
      }
      // A 64-bit column is alone in its word; the shift is split so that it stays defined.
      key = (key << (4 * col.bytes)) << (4 * col.bytes);
      key |= order::column_key(col.kind, col.bytes, raw);
    }
    keys[r] = key;
  }
}

__device__ __forceinline__ uint64_t mix64(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ull;
  return x ^ (x >> 33);
}

__device__ bool same_row(const ColumnRef* cols, int columns, uint32_t x, uint32_t y) {
  for (int c = 0; c < columns; ++c)
    if (load_bits(cols[c].data, cols[c].bytes, x) != load_bits(cols[c].data, cols[c].bytes, y)) return false;
  return true;
}

// Every thread of a warp runs the same iterations (the row may be past n) so that the kept
// rows of a warp take one atomicAdd together.
__global__ void distinct_kernel(const ColumnRef* cols, int columns, uint32_t n, uint32_t* table, uint32_t slots,
                                uint32_t* kept, uint32_t* kept_n) {
  const uint32_t stride = gridDim.x * blockDim.x;
  const unsigned lane = threadIdx.x & 31u;
  for (uint32_t base = blockIdx.x * blockDim.x; base < n; base += stride) {
    const uint32_t r = base + threadIdx.x;
    bool keep = false;
    if (r < n) {
      uint64_t h = 0x9e3779b97f4a7c15ull;
      for (int c = 0; c < columns; ++c) h = mix64(h ^ load_bits(cols[c].data, cols[c].bytes, r)) + uint64_t(c);
      // Linear probing; the table has more slots than rows, so a free slot is always found.
      for (uint32_t s = uint32_t(h) & (slots - 1);; s = (s + 1) & (slots - 1)) {
        const uint32_t prev = atomicCAS(&table[s], kEmpty, r);
        if (prev == kEmpty) {
          keep = true;
          break;
        }
        if (same_row(cols, columns, prev, r)) break;
      }
    }
    const unsigned ballot = __ballot_sync(0xffffffffu, keep);
    if (ballot == 0) continue;
    const unsigned leader = __ffs(ballot) - 1;
    uint32_t at = 0;
    if (lane == leader) at = atomicAdd(kept_n, uint32_t(__popc(ballot)));
    at = __shfl_sync(0xffffffffu, at, leader);
    if (keep) kept[at + __popc(ballot & ((1u << lane) - 1u))] = r;
  }
}

// Row r is among the first `limit` of its group exactly when row r - limit is in another group
// (the groups are contiguous).
__global__ void group_heads_kernel(const int32_t* b, const int32_t* g, uint32_t n, uint32_t limit, uint32_t* rows,
                                   uint8_t* keep) {
  for (uint32_t r = blockIdx.x * blockDim.x + threadIdx.x; r < n; r += gridDim.x * blockDim.x) {
    rows[r] = r;
    keep[r] = r < limit || b[r - limit] != b[r] || g[r - limit] != g[r];
  }
}

// The columns of one gather, passed by value.
struct GatherSet {
  GatherColumn cols[kMaxGatherColumns];
  int count;
};

template <class T>
__device__ __forceinline__ void copy_row(const GatherColumn& c, uint32_t to, uint32_t from) {
  static_cast<T*>(c.dst)[to] = static_cast<const T*>(c.src)[from];
}

// A thread per row, every column of it: the row index is read once.
__global__ void gather_columns_kernel(const GatherSet s, const uint32_t* rows, uint32_t m) {
  for (uint32_t r = blockIdx.x * blockDim.x + threadIdx.x; r < m; r += gridDim.x * blockDim.x) {
    const uint32_t from = rows[r];
    for (int c = 0; c < s.count; ++c) {
      switch (s.cols[c].bytes) {
        case 1: copy_row<uint8_t>(s.cols[c], r, from); break;
        case 2: copy_row<uint16_t>(s.cols[c], r, from); break;
        case 4: copy_row<uint32_t>(s.cols[c], r, from); break;
        default: copy_row<uint64_t>(s.cols[c], r, from); break;
      }
    }
  }
}

}  // namespace

cudaError_t write_keys(const ColumnRef* cols, int count, const uint32_t* rows, uint32_t* init_rows, uint64_t* keys,
                       uint32_t n, cudaStream_t stream, const uint64_t* n_device) {
  if (count < 1 || count > kMaxWordColumns) return cudaErrorInvalidValue;
  if (n == 0) return cudaSuccess;
  WordColumns w{};
  for (int c = 0; c < count; ++c) w.cols[c] = cols[c];
  w.count = count;
  keys_kernel<<<blocks_for(n), kThreads, 0, stream>>>(w, rows, init_rows, keys, n, n_device);
  return cudaGetLastError();
}

cudaError_t sort_pairs(void* temp, size_t* temp_bytes, uint64_t* const keys[2], uint32_t* const rows[2], int* selector,
                       uint32_t n, int end_bit, cudaStream_t stream) {
  cub::DoubleBuffer<uint64_t> k(keys[0], keys[1]);
  cub::DoubleBuffer<uint32_t> v(rows[*selector], rows[1 - *selector]);
  const cudaError_t err = cub::DeviceRadixSort::SortPairs(temp, *temp_bytes, k, v, n, 0, end_bit, stream);
  if (err != cudaSuccess || !temp) return err;
  if (v.Current() != rows[*selector]) *selector = 1 - *selector;
  return cudaSuccess;
}

cudaError_t distinct_rows(const ColumnRef* cols, int columns, uint32_t n, uint32_t* table, uint32_t slots,
                          uint32_t* kept, uint32_t* kept_n, cudaStream_t stream) {
  if (slots <= n || (slots & (slots - 1)) != 0) return cudaErrorInvalidValue;
  cudaError_t err = cudaMemsetAsync(kept_n, 0, sizeof(uint32_t), stream);
  if (err == cudaSuccess) err = cudaMemsetAsync(table, 0xff, size_t(slots) * sizeof(uint32_t), stream);
  if (err != cudaSuccess || n == 0) return err;
  distinct_kernel<<<blocks_for(n), kThreads, 0, stream>>>(cols, columns, n, table, slots, kept, kept_n);
  return cudaGetLastError();
}

cudaError_t first_of_groups(void* temp, size_t* temp_bytes, const int32_t* b, const int32_t* g, uint32_t n,
                            uint32_t limit, void* scratch, uint32_t* kept, uint32_t* kept_n, cudaStream_t stream) {
  uint32_t* const rows = static_cast<uint32_t*>(scratch);      // (n) the identity
  uint8_t* const keep = reinterpret_cast<uint8_t*>(rows + n);  // (n) flags
  if (!temp) return cub::DeviceSelect::Flagged(nullptr, *temp_bytes, rows, keep, kept, kept_n, n, stream);
  if (n > 0) group_heads_kernel<<<blocks_for(n), kThreads, 0, stream>>>(b, g, n, limit, rows, keep);
  const cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess) return err;
  return cub::DeviceSelect::Flagged(temp, *temp_bytes, rows, keep, kept, kept_n, n, stream);
}

cudaError_t gather_columns(const GatherColumn* cols, int count, const uint32_t* rows, uint32_t m, cudaStream_t stream) {
  if (count < 0 || count > kMaxGatherColumns) return cudaErrorInvalidValue;
  if (m == 0 || count == 0) return cudaSuccess;
  GatherSet set{};
  for (int c = 0; c < count; ++c) {
    const int bytes = cols[c].bytes;
    if (bytes != 1 && bytes != 2 && bytes != 4 && bytes != 8) return cudaErrorInvalidValue;
    set.cols[c] = cols[c];
  }
  set.count = count;
  gather_columns_kernel<<<blocks_for(m), kThreads, 0, stream>>>(set, rows, m);
  return cudaGetLastError();
}

}  // namespace gamut::cuda::sortdev
