// The library's own device memory traffic: copies between the caller's device arrays and the
// host, and device memory for outputs when the caller gives no allocator. Without CUDA (or a
// device) each of these throws a device error.
#pragma once
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "gamut/gamut.h"

namespace gamut::api {

// Bytes from anywhere (host or device, unified addressing) to anywhere, ordered on `stream`
// (cudaStream_t; nullptr: the legacy default stream). With `wait` this returns when the copy is
// done (a copy to the host); without, in stream order (a copy from pageable host memory is
// staged before this returns, so the source may go at once).
void copy_bytes(void* dst, const void* src, size_t bytes, void* stream, bool wait = true);

// Waits for the work ordered on `stream` (nullptr: the legacy default stream).
void synchronize_stream(void* stream);

// Device memory on GPU `device_id`, freed when the owner goes.
struct DeviceAllocation {
  void* data = nullptr;
  std::shared_ptr<void> owner;
};
DeviceAllocation device_alloc(size_t bytes, int device_id, void* stream);

// The caller's memory for a device output `what` of `shape` (bytes): its allocator's, else
// device_alloc's on `device`. A device error where the allocator gives no memory.
Allocation output_memory(const Options& options, Device device, DType t, const std::vector<int64_t>& shape,
                         size_t bytes, const std::string& what);

}  // namespace gamut::api
