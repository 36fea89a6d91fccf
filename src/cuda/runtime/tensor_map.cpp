// Tensor maps for the TMA-fed wgmma mainloop (gamut_tc_wgmma_tma.cuh): cuTensorMapEncodeTiled
// from the driver, found through cudart (cudaGetDriverEntryPointByVersion) so that the binary
// still links no libcuda and starts where there is none.
#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_runtime_api.h>

#include <cstring>
#include <string>

#include "core/error.h"
#include "cuda/runtime.h"
#include "cuda/runtime/internal.h"

namespace gamut::cuda {

namespace {

// A driver function from cudart's table of entry points (null where the driver has none).
template <class Fn>
Fn driver_function(const char* name) {
  void* p = nullptr;
  cudaDriverEntryPointQueryResult found{};
  if (cudaGetDriverEntryPointByVersion(name, &p, 12000, cudaEnableDefault, &found) == cudaSuccess &&
      found == cudaDriverEntryPointSuccess)
    return reinterpret_cast<Fn>(p);
  return nullptr;
}

PFN_cuTensorMapEncodeTiled_v12000 encode_fn() {
  static const auto fn = driver_function<PFN_cuTensorMapEncodeTiled_v12000>("cuTensorMapEncodeTiled");
  return fn;
}

PFN_cuTensorMapReplaceAddress_v12000 replace_fn() {
  static const auto fn = driver_function<PFN_cuTensorMapReplaceAddress_v12000>("cuTensorMapReplaceAddress");
  return fn;
}

}  // namespace

void replace_tile_map_address(void* map128, uint64_t ptr) {
  PFN_cuTensorMapReplaceAddress_v12000 fn = replace_fn();
  if (!fn) throw_device_error("the driver has no cuTensorMapReplaceAddress (TMA needs CUDA 12 drivers)");
  if (ptr % 16 != 0) throw_device_error("internal error: a tensor map's operand off 16 bytes");
  CUtensorMap map;  // (aligned as the driver wants it, which the words may not be)
  std::memcpy(&map, map128, sizeof map);
  const CUresult r = fn(&map, reinterpret_cast<void*>(ptr));
  if (r != CUDA_SUCCESS)
    throw_device_error("cuTensorMapReplaceAddress failed (CUresult " + std::to_string(int(r)) + ")");
  std::memcpy(map128, &map, sizeof map);
}

void encode_tile_map(void* out, DType type, const TileMapShape& s) {
  detail::require_device();
  const int e = int(dtype_size(type));
  if ((type != DType::BF16 && type != DType::F16 && type != DType::F32) || (s.tf32 && type != DType::F32) ||
      (type == DType::F32 && !s.k_contiguous) || !tile_map_fits(s.ptr, s.ld, s.batch_stride, s.batch, e))
    throw_device_error("internal error: a tensor map for an operand TMA cannot read");
  PFN_cuTensorMapEncodeTiled_v12000 fn = encode_fn();
  if (!fn) throw_device_error("the driver has no cuTensorMapEncodeTiled (TMA needs CUDA 12 drivers)");
  // Dimensions from the contiguous one out: (contiguous, other, batch); element (p, k) of batch
  // instance b is at ptr + (b * batch_stride + row * ld + col) * e.
  const int64_t inner = s.k_contiguous ? s.k_extent : s.p_extent, outer = s.k_contiguous ? s.p_extent : s.k_extent;
  const int64_t batch = s.batch > 1 ? s.batch : 1;
  cuuint64_t dims[3] = {cuuint64_t(inner > 0 ? inner : 1), cuuint64_t(outer > 0 ? outer : 1), cuuint64_t(batch)};
  // (A single batch instance still needs a valid stride: the whole matrix.)
  const int64_t bstride = batch > 1 ? s.batch_stride : s.ld * int64_t(dims[1]);
  cuuint64_t strides[2] = {cuuint64_t(s.ld * e), cuuint64_t(bstride * e)};
  // Boxes of one 128-byte swizzle row along the contiguous axis: 64 16-bit or 32 f32 elements.
  cuuint32_t box[3] = {cuuint32_t(128 / e), cuuint32_t(s.k_contiguous ? s.box_p : 64), 1u};
  cuuint32_t elem_strides[3] = {1u, 1u, 1u};
  const CUtensorMapDataType dt = type == DType::BF16 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16
                                 : type == DType::F16 ? CU_TENSOR_MAP_DATA_TYPE_FLOAT16
                                 : s.tf32             ? CU_TENSOR_MAP_DATA_TYPE_TFLOAT32
                                                      : CU_TENSOR_MAP_DATA_TYPE_FLOAT32;
  const CUresult r = fn(static_cast<CUtensorMap*>(out), dt, 3, reinterpret_cast<void*>(s.ptr), dims, strides, box,
                        elem_strides, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                        CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS)
    throw_device_error("cuTensorMapEncodeTiled failed (CUresult " + std::to_string(int(r)) + ") for dims " +
                       std::to_string(dims[0]) + " x " + std::to_string(dims[1]) + " x " + std::to_string(dims[2]));
}

}  // namespace gamut::cuda
