#include "core/array.h"

#include <cstring>

namespace gamut {

int64_t NDArray::size() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

NDArray NDArray::zeros(DType t, std::vector<int64_t> shape) {
  NDArray a;
  a.dtype = t;
  a.shape = std::move(shape);
  a.data.assign(size_t(a.size()) * dtype_size(t), std::byte{0});
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

}  // namespace gamut
