// One side's value of an equi-join key (`when (g[i] == h[j])`), compared in the common type of
// both sides as the spec's `==` does: integers as i64, floats as f64 (f32 when that is the
// common type) with -0.0 == 0.0, and NaN equal to nothing. Shared by the CPU engine's join index
// and the GPU's key grouping, so both match exactly the same pairs.
#pragma once
#include <cmath>
#include <cstdint>
#include <cstring>

#include "core/array.h"
#include "core/types.h"

namespace gamut {

// Element e of x as a 64-bit key in common type t; false for NaN (it matches nothing).
inline bool join_key_value(const NDArray& x, int64_t e, CType t, int64_t& out) {
  if (!is_float(t)) {
    out = x.get_i64(e);
    return true;
  }
  double v = x.get_f64(e);
  if (t == CType::F32) v = is_float(x.dtype) ? double(float(v)) : double(float(x.get_i64(e)));
  if (std::isnan(v)) return false;
  if (v == 0.0) v = 0.0;   // -0.0 == 0.0
  std::memcpy(&out, &v, 8);
  return true;
}

}  // namespace gamut
