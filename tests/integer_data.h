// Integer-valued test arrays: every sum of them is exact in every element type, so engines and
// rewrites can be compared bit for bit.
#pragma once
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "core/array.h"

namespace gamut::testdata {

// Values in [lo, hi] from a fixed linear congruential sequence (seeded), stored as `t`.
inline NDArray integer_valued(DType t, std::vector<int64_t> shape, int lo, int hi, unsigned seed) {
  NDArray a = NDArray::zeros(t, std::move(shape));
  unsigned s = seed;
  for (int64_t e = 0; e < a.size(); ++e) {
    s = s * 1103515245u + 12345u;
    const int v = lo + int((s >> 16) % unsigned(hi - lo + 1));
    switch (t) {
      case DType::F32: a.as<float>()[e] = float(v); break;
      case DType::F64: a.as<double>()[e] = double(v); break;
      case DType::F16: a.as<uint16_t>()[e] = float_to_half(float(v)); break;
      case DType::BF16: a.as<uint16_t>()[e] = float_to_bf16(float(v)); break;
      case DType::I8: a.as<int8_t>()[e] = int8_t(v); break;
      case DType::I16: a.as<int16_t>()[e] = int16_t(v); break;
      case DType::I32: a.as<int32_t>()[e] = v; break;
      case DType::I64: a.as<int64_t>()[e] = v; break;
      default: ADD_FAILURE() << "unsupported dtype in the test";
    }
  }
  return a;
}

}  // namespace gamut::testdata
