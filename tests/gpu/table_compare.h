// Comparisons of list results (Tables) for the GPU list tests.
#pragma once
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "core/array.h"

namespace gamut::test {

inline bool nan_at(DType t, const std::byte* p) {
  if (t == DType::F32) { float x; std::memcpy(&x, p, 4); return std::isnan(x); }
  if (t == DType::F64) { double x; std::memcpy(&x, p, 8); return std::isnan(x); }
  return false;
}

// Same rows, column types and bits; with `any_nan`, any NaN equals any NaN (the sign and payload
// of a computed NaN are not semantics: x86 and the GPU produce different default NaNs).
inline ::testing::AssertionResult same_table_bits(const Table& want, const Table& got, bool any_nan) {
  if (want.rows != got.rows) return ::testing::AssertionFailure() << "rows: want " << want.rows << ", got " << got.rows;
  if (want.columns.size() != got.columns.size()) return ::testing::AssertionFailure() << "column count differs";
  for (size_t c = 0; c < want.columns.size(); ++c) {
    const Column &a = want.columns[c], &b = got.columns[c];
    if (a.dtype != b.dtype || a.data.size() != b.data.size())
      return ::testing::AssertionFailure() << "column " << c << " (" << a.name << ") differs in type or size";
    const size_t w = dtype_size(a.dtype);
    for (size_t r = 0; r * w < a.data.size(); ++r) {
      const std::byte *pa = a.data.data() + r * w, *pb = b.data.data() + r * w;
      if (std::memcmp(pa, pb, w) != 0 && !(any_nan && nan_at(a.dtype, pa) && nan_at(a.dtype, pb)))
        return ::testing::AssertionFailure() << "column " << c << " (" << a.name << ") differs first at row " << r
                                             << " of " << want.rows;
    }
  }
  return ::testing::AssertionSuccess();
}

}  // namespace gamut::test
