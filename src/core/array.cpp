#include "core/array.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>

#include "core/error.h"
#include "core/sizes.h"

namespace gamut {

int64_t NDArray::size() const {
  // Every array is made by zeros() or read_npy(), which check the shape.
  std::optional<int64_t> n = shape_elements(shape);
  if (!n) throw std::length_error("array shape " + shape_text(shape) + " overflows 64 bits");
  return *n;
}

NDArray NDArray::zeros(DType t, std::vector<int64_t> shape) {
  std::optional<int64_t> bytes = shape_bytes(shape, dtype_size(t));
  if (!bytes) throw_resource_error("an array of shape " + shape_text(shape) + " and type " + std::string(dtype_name(t)) +
                                   " needs more than 2^63-1 bytes");
  NDArray a;
  a.dtype = t;
  a.shape = std::move(shape);
  a.data.assign(size_t(*bytes), std::byte{0});
  return a;
}

template <class T> static T load(const std::byte* p) { T v; std::memcpy(&v, p, sizeof v); return v; }

double NDArray::get_f64(int64_t e) const {
  const std::byte* p = data.data() + size_t(e) * dtype_size(dtype);
  switch (dtype) {
    case DType::Bool: case DType::U8: return double(load<uint8_t>(p));
    case DType::I8: return double(load<int8_t>(p));
    case DType::I16: return double(load<int16_t>(p));
    case DType::I32: return double(load<int32_t>(p));
    case DType::I64: return double(load<int64_t>(p));
    case DType::F16: return double(half_to_float(load<uint16_t>(p)));
    case DType::BF16: return double(bf16_to_float(load<uint16_t>(p)));
    case DType::F32: return double(load<float>(p));
    case DType::F64: return load<double>(p);
  }
  return 0;
}

int64_t NDArray::get_i64(int64_t e) const {
  const std::byte* p = data.data() + size_t(e) * dtype_size(dtype);
  switch (dtype) {
    case DType::Bool: case DType::U8: return load<uint8_t>(p);
    case DType::I8: return load<int8_t>(p);
    case DType::I16: return load<int16_t>(p);
    case DType::I32: return load<int32_t>(p);
    case DType::I64: return load<int64_t>(p);
    default: return int64_t(get_f64(e));
  }
}

namespace {
template <class T>
void range_of(const std::byte* p, int64_t count, int64_t& lo, int64_t& hi) {
  T l = load<T>(p), h = l;
  for (int64_t e = 1; e < count; ++e) {
    const T v = load<T>(p + size_t(e) * sizeof(T));
    l = v < l ? v : l;
    h = v > h ? v : h;
  }
  lo = int64_t(l);
  hi = int64_t(h);
}
}  // namespace

void NDArray::i64_range(int64_t first, int64_t count, int64_t& lo, int64_t& hi) const {
  const std::byte* p = data.data() + size_t(first) * dtype_size(dtype);
  switch (dtype) {
    case DType::Bool: case DType::U8: range_of<uint8_t>(p, count, lo, hi); return;
    case DType::I8: range_of<int8_t>(p, count, lo, hi); return;
    case DType::I16: range_of<int16_t>(p, count, lo, hi); return;
    case DType::I32: range_of<int32_t>(p, count, lo, hi); return;
    case DType::I64: range_of<int64_t>(p, count, lo, hi); return;
    default: break;
  }
  lo = hi = get_i64(first);
  for (int64_t e = first + 1; e < first + count; ++e) {
    const int64_t v = get_i64(e);
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  }
}

}  // namespace gamut
