#include "semantics/bit_pack.h"

#include <cstring>

#include "core/error.h"

namespace gamut {

namespace {

// Calls fn(r, k, value) over the accessed region of a 2-d array, in memory order.
template <class T, class Fn>
void for_each_accessed(const NDArray& src, bool src_k_minor, const AxisRange& rows, const AxisRange& k_range, Fn fn) {
  const T* v = src.as<T>();
  const int64_t ld = src.shape[1];
  if (src_k_minor) {
    for (int64_t r = rows.begin; r < rows.end; ++r)
      for (int64_t k = k_range.begin; k < k_range.end; ++k) fn(r, k, v[r * ld + k]);
  } else {
    for (int64_t k = k_range.begin; k < k_range.end; ++k)
      for (int64_t r = rows.begin; r < rows.end; ++r) fn(r, k, v[k * ld + r]);
  }
}

// Dispatch on the storage type of an integer or bool array; false for float types.
template <class Fn>
bool with_integer_type(DType t, Fn fn) {
  switch (t) {
    case DType::Bool: case DType::U8: fn(uint8_t{}); return true;
    case DType::I8: fn(int8_t{}); return true;
    case DType::I16: fn(int16_t{}); return true;
    case DType::I32: fn(int32_t{}); return true;
    case DType::I64: fn(int64_t{}); return true;
    default: return false;
  }
}

}  // namespace

bool holds_only_bits(const NDArray& src, bool src_k_minor, const AxisRange& rows, const AxisRange& k_range) {
  if (src.shape.size() != 2) return false;
  bool bits = true;
  const bool integer = with_integer_type(src.dtype, [&](auto zero) {
    using T = decltype(zero);
    for_each_accessed<T>(src, src_k_minor, rows, k_range, [&](int64_t, int64_t, T x) { bits &= x == T(0) || x == T(1); });
  });
  return integer && bits;
}

NDArray bit_pack_cpu(const NDArray& src, const BitPack& st) {
  if (src.shape.size() != 2) throw_data_error(st.source, "a bit-packed operand must be a matrix");
  const int64_t W = st.words();
  NDArray out = NDArray::zeros(DType::I32, {st.rows.end, W});
  uint32_t* words = out.as<uint32_t>();
  const bool integer = with_integer_type(src.dtype, [&](auto zero) {
    using T = decltype(zero);
    for_each_accessed<T>(src, st.src_k_minor, st.rows, st.k_range, [&](int64_t r, int64_t k, T x) {
      const int64_t d = k - st.k_range.begin;
      if (x != T(0)) words[r * W + d / 32] |= uint32_t(1) << (d % 32);
    });
  });
  if (!integer) throw_data_error(st.source, "a bit-packed operand must hold integers or bools");
  return out;
}

}  // namespace gamut
