// Uploads of large pageable host data through page-locked staging buffers. Measured on the H200
// hosts (bench/upload_rate.py, 256 MiB): cudaMemcpy from pageable memory 6.9 GB/s, from
// page-locked memory 54; a host memcpy into page-locked memory 10 GB/s from one thread, 19 from
// four. So the rows are copied into staging slots by four threads at once, a round of four
// slots at a time, and the calling thread queues each slot's DMA on its stream; the next round
// fills the other four slots while those DMAs run. A slot is written again once the event
// recorded after its last DMA has passed. As with cudaMemcpy from pageable memory, the host
// data has been read when this returns; the DMAs may still run.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/threads.h"
#include "cuda/runtime/internal.h"

namespace gamut::cuda::detail {

namespace {

constexpr size_t kSlotBytes = size_t(8) << 20;    // one staging buffer
constexpr int kWorkers = 4;                       // host copies at once (19 GB/s measured)
constexpr size_t kDefaultMin = size_t(16) << 20;  // smaller copies go as they are

struct Slot {
  char* host = nullptr;
  cudaEvent_t done = nullptr;  // recorded after the slot's last DMA
};

// A device's staging slots (two rounds of kWorkers), made on its first staged upload and kept
// for the process (64 MiB of page-locked memory a device). One staged upload at a time uses them.
struct Staging {
  std::mutex busy;
  bool tried = false, usable = false;
  Slot slots[2 * kWorkers];
};

Staging& staging_of(int device) {
  static std::mutex m;
  static auto* all = new std::map<int, std::unique_ptr<Staging>>();  // (never freed: cudart may be gone at exit)
  std::lock_guard<std::mutex> lock(m);
  auto& s = (*all)[device];
  if (!s) s = std::make_unique<Staging>();
  return *s;
}

// The slots of the current device, made once; false where page-locked memory cannot be had
// (a container's locked-memory limit): the copies then go as they are.
bool make_slots(Staging& s) {
  if (s.tried) return s.usable;
  s.tried = true;
  for (Slot& slot : s.slots) {
    void* p = nullptr;
    if (cudaHostAlloc(&p, kSlotBytes, cudaHostAllocPortable) != cudaSuccess ||
        cudaEventCreateWithFlags(&slot.done, cudaEventDisableTiming) != cudaSuccess) {
      cudaGetLastError();
      return false;
    }
    slot.host = static_cast<char*>(p);
  }
  s.usable = true;
  return true;
}

// One piece: `rows` rows of `width` bytes, consecutive in host memory from `src`, to `dst` with
// rows `dpitch` apart.
struct Piece {
  const char* src;
  char* dst;
  size_t rows, width;
};

size_t staged_upload_min() {
  const char* e = std::getenv("GAMUT_STAGED_UPLOAD_MIN");
  if (!e || !*e) return kDefaultMin;
  if (std::string(e) == "off") return SIZE_MAX;
  char* end = nullptr;
  const unsigned long long v = std::strtoull(e, &end, 10);
  return end && *end == '\0' ? size_t(v) : kDefaultMin;
}

}  // namespace

bool staged_upload_rows(void* dst, size_t dpitch, const void* src, size_t rows, size_t row_bytes, cudaStream_t stream) {
  if (rows == 0 || row_bytes == 0 || rows > SIZE_MAX / row_bytes) return false;
  const size_t total = rows * row_bytes;
  if (total < staged_upload_min()) return false;
  // Page-locked already (a pinned tensor, registered memory): the DMA reads it as it is.
  cudaPointerAttributes attr{};
  if (cudaPointerGetAttributes(&attr, src) != cudaSuccess)
    cudaGetLastError();
  else if (attr.type == cudaMemoryTypeHost)
    return false;
  // The pieces: whole rows per slot; rows longer than a slot only where they are contiguous on
  // both sides (then any cut is a row).
  std::vector<Piece> pieces;
  const char* s = static_cast<const char*>(src);
  char* d = static_cast<char*>(dst);
  if (row_bytes <= kSlotBytes) {
    const size_t per = kSlotBytes / row_bytes;
    for (size_t r = 0; r < rows; r += per)
      pieces.push_back({s + r * row_bytes, d + r * dpitch, std::min(per, rows - r), row_bytes});
  } else if (dpitch == row_bytes) {
    for (size_t at = 0; at < total; at += kSlotBytes)
      pieces.push_back({s + at, d + at, 1, std::min(kSlotBytes, total - at)});
  } else {
    return false;
  }
  int device = 0;
  check(cudaGetDevice(&device), "cudaGetDevice");
  Staging& st = staging_of(device);
  std::lock_guard<std::mutex> lock(st.busy);
  if (!make_slots(st)) return false;
  for (size_t first = 0, round = 0; first < pieces.size(); first += kWorkers, ++round) {
    const size_t n = std::min<size_t>(kWorkers, pieces.size() - first);
    Slot* set = st.slots + (round % 2) * kWorkers;
    for (size_t w = 0; w < n; ++w) check(cudaEventSynchronize(set[w].done), "waiting for a staging buffer");
    run_on_threads(int64_t(n), 1, [&](int64_t w) {
      const Piece& p = pieces[first + size_t(w)];
      std::memcpy(set[w].host, p.src, p.rows * p.width);
    });
    for (size_t w = 0; w < n; ++w) {
      const Piece& p = pieces[first + w];
      check(cudaMemcpy2DAsync(p.dst, p.rows > 1 ? dpitch : p.width, set[w].host, p.width, p.width, p.rows,
                              cudaMemcpyHostToDevice, stream),
            "cudaMemcpy2D host to device of " + std::to_string(p.rows * p.width) + " bytes (staged)");
      check(cudaEventRecord(set[w].done, stream), "recording a staging buffer's copy");
    }
  }
  return true;
}

}  // namespace gamut::cuda::detail
