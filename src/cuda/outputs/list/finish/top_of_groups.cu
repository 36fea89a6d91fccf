// Kernels of top_of_groups.h: count per group, a scan (CUB) of the counts, scatter into buckets, a
// warp per group keeping its N best.
#include <thrust/iterator/transform_iterator.h>

#include <cub/device/device_scan.cuh>

#include "cuda/outputs/list/finish/top_of_groups.h"

namespace gamut::cuda::sortdev {

namespace {

constexpr unsigned kThreads = 256;
constexpr uint64_t kNoKey = ~0ull;  // an empty lane: after every real key (other < 2^32 - 1)

unsigned blocks_for(uint64_t work, unsigned threads = kThreads) {
  const uint64_t b = (work + threads - 1) / threads;
  return unsigned(b < 1 ? 1 : b > 8192 ? 8192 : b);
}

__device__ __forceinline__ uint32_t group_of(const GroupTopInput& in, uint32_t r) {
  return uint32_t(int64_t(in.b[r]) * in.extent + (int64_t(in.g[r]) - in.g_begin));
}

// (rank, other - o_begin): the list's order within a group as one number.
__device__ __forceinline__ uint64_t order_key(const GroupTopInput& in, uint32_t r) {
  const uint32_t rank = uint32_t(in.rank[r]) ^ 0x80000000u;
  return (uint64_t(rank) << 32) | uint32_t(int64_t(in.other[r]) - in.o_begin);
}

// Candidates of one group sit together (a tile appends a row's candidates side by side), so
// the lanes of a warp that share a group add once: one atomic per group and warp, not per lane.
// Returns, in each lane, its place among the lanes of its group before it; the leader (the
// lowest lane) adds their number to slots[group * stride] and hands the old value to all of them.
__device__ __forceinline__ uint32_t add_by_group(uint32_t* slots, uint32_t stride, uint32_t group, bool here) {
  const unsigned peers = __match_any_sync(0xffffffffu, here ? group : 0xffffffffu);
  const int lane = int(threadIdx.x & 31u), leader = __ffs(int(peers)) - 1;
  uint32_t old = 0;
  if (here && lane == leader) old = atomicAdd(slots + group * stride, uint32_t(__popc(peers)));
  old = __shfl_sync(0xffffffffu, old, leader);
  return old + uint32_t(__popc(peers & ((1u << lane) - 1u)));
}

// The candidates' number: in.n, or the device count where it is given (at most in.n).
__device__ __forceinline__ uint32_t candidates(const GroupTopInput& in) {
  if (!in.n_device) return in.n;
  const uint64_t n = *in.n_device;
  return n < in.n ? uint32_t(n) : in.n;
}

// base is the same in the whole block, so every lane runs every iteration (the _sync calls).
__global__ void count_kernel(const GroupTopInput in, uint32_t* counts) {
  const uint32_t n = candidates(in);
  for (uint32_t base = blockIdx.x * blockDim.x; base < n; base += gridDim.x * blockDim.x) {
    const uint32_t r = base + threadIdx.x;
    add_by_group(counts, 1, r < n ? group_of(in, r) : 0u, r < n);
  }
}

// The scan's input: (candidates, rows kept) of a group.
struct CountAndKept {
  uint32_t limit;
  __host__ __device__ uint2 operator()(uint32_t c) const { return make_uint2(c, c < limit ? c : limit); }
};
struct AddPairs {
  __host__ __device__ uint2 operator()(uint2 a, uint2 b) const { return make_uint2(a.x + b.x, a.y + b.y); }
};

// slots[g].x: group g's first bucket slot before, its end after (the next group's start).
__global__ void scatter_kernel(const GroupTopInput in, uint2* slots, uint32_t* bucket) {
  const uint32_t n = candidates(in);
  for (uint32_t base = blockIdx.x * blockDim.x; base < n; base += gridDim.x * blockDim.x) {
    const uint32_t r = base + threadIdx.x;
    const uint32_t slot = add_by_group(&slots[0].x, 2, r < n ? group_of(in, r) : 0u, r < n);
    if (r < n) bucket[slot] = r;
  }
}

// Lanes exchange (key, row) with the lane `lane ^ j` and keep the smaller where keep_min.
__device__ __forceinline__ void exchange(uint64_t& key, uint32_t& row, int j, bool keep_min) {
  const uint64_t k = __shfl_xor_sync(0xffffffffu, key, j);
  const uint32_t r = __shfl_xor_sync(0xffffffffu, row, j);
  if (keep_min ? k < key : k > key) {
    key = k;
    row = r;
  }
}

// A warp per group: `best` (lane l: the l-th smallest so far) starts empty; each chunk of 32
// candidates is sorted (bitonic), reversed against best so that the lane-wise minimum holds the
// 32 smallest of both as a bitonic sequence, and merged. Keys are distinct within a group.
// slots[g]: (end of group g's bucket, its first kept row) after the scatter.
__global__ void select_kernel(const GroupTopInput in, const uint2* slots, const uint32_t* bucket, uint32_t* kept) {
  const int lane = int(threadIdx.x & 31u);
  const uint32_t warps = gridDim.x * (blockDim.x / 32);
  for (uint32_t g = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32; g < in.groups; g += warps) {
    const uint2 s = slots[g];
    const uint32_t first = g > 0 ? slots[g - 1].x : 0u, count = s.x - first;
    uint64_t best = kNoKey;
    uint32_t best_row = 0;
    for (uint32_t base = 0; base < count; base += 32) {
      const bool here = base + uint32_t(lane) < count;
      uint32_t row = here ? bucket[first + base + uint32_t(lane)] : 0u;
      uint64_t key = here ? order_key(in, row) : kNoKey;
      // Nothing to do where no candidate of the chunk comes before the N-th kept so far.
      const uint64_t nth = __shfl_sync(0xffffffffu, best, int(in.limit) - 1);
      if (!__any_sync(0xffffffffu, key < nth)) continue;
#pragma unroll
      for (int k = 2; k <= 32; k <<= 1)
#pragma unroll
        for (int j = k >> 1; j > 0; j >>= 1) exchange(key, row, j, ((lane & j) == 0) == ((lane & k) == 0));
      const uint64_t rev = __shfl_sync(0xffffffffu, key, 31 - lane);
      const uint32_t rev_row = __shfl_sync(0xffffffffu, row, 31 - lane);
      if (rev < best) {
        best = rev;
        best_row = rev_row;
      }
#pragma unroll
      for (int j = 16; j > 0; j >>= 1) exchange(best, best_row, j, (lane & j) == 0);
    }
    const uint32_t take = count < in.limit ? count : in.limit;
    if (uint32_t(lane) < take) kept[s.y + uint32_t(lane)] = best_row;
  }
}

}  // namespace

// Scratch: slots (groups + 1 uint2: the scan's output), counts (groups + 1), bucket (n), then
// the scan's temporary storage, each 256-byte aligned.
namespace {
size_t aligned(size_t bytes) { return (bytes + 255) & ~size_t(255); }
size_t scan_temp_bytes(uint32_t groups) {
  size_t bytes = 0;
  cub::DeviceScan::ExclusiveScan(
      nullptr, bytes, thrust::make_transform_iterator(static_cast<const uint32_t*>(nullptr), CountAndKept{1}),
      static_cast<uint2*>(nullptr), AddPairs(), make_uint2(0u, 0u), groups + 1);
  return bytes;
}
}  // namespace

size_t top_of_groups_scratch_bytes(uint32_t n, uint32_t groups) {
  const size_t G = size_t(groups) + 1;
  return aligned(G * 8) + aligned(G * 4) + aligned(size_t(n) * 4) + aligned(scan_temp_bytes(groups));
}

cudaError_t top_of_groups(const GroupTopInput& in, void* scratch, uint32_t* kept, uint32_t* kept_n,
                          cudaStream_t stream) {
  if (in.limit == 0 || in.limit > kMaxGroupTopLimit || in.groups == 0 || in.groups > kMaxGroupTopGroups)
    return cudaErrorInvalidValue;
  const size_t G = size_t(in.groups) + 1;
  char* p = static_cast<char*>(scratch);
  uint2* const slots = reinterpret_cast<uint2*>(p);
  uint32_t* const counts = reinterpret_cast<uint32_t*>(p += aligned(G * 8));
  uint32_t* const bucket = reinterpret_cast<uint32_t*>(p += aligned(G * 4));
  void* const temp = p += aligned(size_t(in.n) * 4);
  size_t temp_bytes = scan_temp_bytes(in.groups);
  cudaError_t err = cudaMemsetAsync(counts, 0, G * 4, stream);  // (the last, 0, gives the totals)
  if (err != cudaSuccess) return err;
  if (in.n > 0) count_kernel<<<blocks_for(in.n), kThreads, 0, stream>>>(in, counts);
  err =
      cub::DeviceScan::ExclusiveScan(temp, temp_bytes, thrust::make_transform_iterator(counts, CountAndKept{in.limit}),
                                     slots, AddPairs(), make_uint2(0u, 0u), uint32_t(G), stream);
  if (err != cudaSuccess) return err;
  err = cudaMemcpyAsync(kept_n, &slots[in.groups].y, 4, cudaMemcpyDeviceToDevice, stream);
  if (err != cudaSuccess) return err;
  if (in.n > 0) {
    scatter_kernel<<<blocks_for(in.n), kThreads, 0, stream>>>(in, slots, bucket);
    select_kernel<<<blocks_for(uint64_t(in.groups) * 32), kThreads, 0, stream>>>(in, slots, bucket, kept);
  }
  return cudaGetLastError();
}

}  // namespace gamut::cuda::sortdev
