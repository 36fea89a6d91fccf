// The library's own device memory traffic: copies between the caller's device arrays and the
// host, and device memory for outputs when the caller gives no allocator. Without CUDA (or a
// device) each of these throws a device error.
#pragma once
#include <cstddef>
#include <memory>

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

}  // namespace gamut::api
