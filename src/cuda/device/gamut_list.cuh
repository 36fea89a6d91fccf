// List outputs (`emit`): rows are appended to column buffers through one global counter.
// The counter counts every row that reached the emit, also past the capacity, so the host
// sees how many there were, grows the buffers and runs again: no row is ever dropped.
// Ordering, limits and de-duplication happen on the host (finalize_list).
#pragma once
#include "gamut_math.cuh"

namespace gm {

struct ListAppend {
  u64* counter;
  u64 capacity;
  // Reserve one row for each lane whose flag is set: one global atomic per warp.
  // Every lane of the warp must call it together. The row exists only if slot < capacity.
  GM_DEV u64 reserve(bool flag) const {
    const unsigned mask = __ballot_sync(0xffffffffu, flag);
    if (mask == 0u) return 0;
    const int lane = int(threadIdx.x & 31u);
    const int leader = __ffs(int(mask)) - 1;
    u64 base = 0;
    if (lane == leader) base = atomicAdd(counter, u64(__popc(mask)));
    base = __shfl_sync(0xffffffffu, base, leader);
    return base + u64(__popc(mask & ((1u << lane) - 1u)));
  }
};

}  // namespace gm
