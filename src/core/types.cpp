#include "core/types.h"

#include <cmath>
#include <cstring>
#include <limits>

namespace gamut {

size_t dtype_size(DType t) {
  switch (t) {
    case DType::Bool: case DType::U8: case DType::I8: return 1;
    case DType::I16: case DType::F16: case DType::BF16: return 2;
    case DType::I32: case DType::F32: return 4;
    case DType::I64: case DType::F64: return 8;
  }
  return 0;
}

std::string_view dtype_name(DType t) {
  switch (t) {
    case DType::Bool: return "bool"; case DType::U8: return "u8"; case DType::I8: return "i8";
    case DType::I16: return "i16"; case DType::I32: return "i32"; case DType::I64: return "i64";
    case DType::F16: return "f16"; case DType::BF16: return "bf16"; case DType::F32: return "f32";
    case DType::F64: return "f64";
  }
  return "?";
}

std::optional<DType> dtype_from_name(std::string_view n) {
  for (int v = 0; v <= int(DType::F64); ++v)
    if (dtype_name(DType(v)) == n) return DType(v);
  return std::nullopt;
}

std::string_view ctype_name(CType t) {
  switch (t) {
    case CType::Bool: return "bool"; case CType::I32: return "i32"; case CType::I64: return "i64";
    case CType::F32: return "f32"; case CType::F64: return "f64"; case CType::Unknown: return "?";
  }
  return "?";
}

CType compute_type_of(DType t) {
  switch (t) {
    case DType::Bool: return CType::Bool;
    case DType::U8: case DType::I8: case DType::I16: case DType::I32: return CType::I32;
    case DType::I64: return CType::I64;
    case DType::F16: case DType::BF16: case DType::F32: return CType::F32;
    case DType::F64: return CType::F64;
  }
  return CType::Unknown;
}

DType storage_type_of(CType t) {
  switch (t) {
    case CType::Bool: return DType::Bool; case CType::I32: return DType::I32;
    case CType::I64: return DType::I64; case CType::F64: return DType::F64;
    default: return DType::F32;
  }
}

float half_to_float(uint16_t h) {
  uint32_t sign = uint32_t(h & 0x8000u) << 16, exp = (h >> 10) & 0x1f, man = h & 0x3ffu, bits;
  if (exp == 0) {
    if (man == 0) bits = sign;
    else {  // subnormal: normalise
      int e = -1;
      do { ++e; man <<= 1; } while ((man & 0x400u) == 0);
      bits = sign | uint32_t(127 - 15 - e) << 23 | (man & 0x3ffu) << 13;
    }
  } else if (exp == 31) bits = sign | 0x7f800000u | man << 13;
  else bits = sign | (exp + 127 - 15) << 23 | man << 13;
  float f; std::memcpy(&f, &bits, 4); return f;
}

uint16_t float_to_half(float f) {
  uint32_t x; std::memcpy(&x, &f, 4);
  uint32_t sign = (x >> 16) & 0x8000u;
  uint32_t absx = x & 0x7fffffffu;
  if (absx > 0x7f800000u) return uint16_t(sign | 0x7e00u);           // NaN
  if (absx >= 0x477ff000u) return uint16_t(sign | 0x7c00u);          // overflow to inf
  if (absx < 0x38800000u) {                                          // subnormal or zero
    if (absx < 0x33000000u) return uint16_t(sign);
    uint32_t e = absx >> 23, man = (absx & 0x7fffffu) | 0x800000u;
    uint32_t shift = 126 - e;                                        // 14..24
    uint32_t half = man >> shift, rem = man & ((1u << shift) - 1), mid = 1u << (shift - 1);
    if (rem > mid || (rem == mid && (half & 1))) ++half;
    return uint16_t(sign | half);
  }
  uint32_t r = absx - 0x38000000u;                                   // rebias exponent
  uint32_t half = r >> 13, rem = r & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (half & 1))) ++half;
  return uint16_t(sign | half);
}

float bf16_to_float(uint16_t h) {
  uint32_t bits = uint32_t(h) << 16; float f; std::memcpy(&f, &bits, 4); return f;
}

uint16_t float_to_bf16(float f) {
  uint32_t x; std::memcpy(&x, &f, 4);
  if ((x & 0x7fffffffu) > 0x7f800000u) return uint16_t((x >> 16) | 0x40u);  // quiet NaN
  x += 0x7fffu + ((x >> 16) & 1u);
  return uint16_t(x >> 16);
}

Scalar lowest_of(CType t) {
  switch (t) {
    case CType::Bool: return Scalar::of_int(t, 0);
    case CType::I32: return Scalar::of_int(t, std::numeric_limits<int32_t>::min());
    case CType::I64: return Scalar::of_int(t, std::numeric_limits<int64_t>::min());
    default: return Scalar::of_float(t, -std::numeric_limits<double>::infinity());
  }
}

Scalar highest_of(CType t) {
  switch (t) {
    case CType::Bool: return Scalar::of_int(t, 1);
    case CType::I32: return Scalar::of_int(t, std::numeric_limits<int32_t>::max());
    case CType::I64: return Scalar::of_int(t, std::numeric_limits<int64_t>::max());
    default: return Scalar::of_float(t, std::numeric_limits<double>::infinity());
  }
}

// Float to integer: truncate toward zero, NaN gives 0, out of range saturates (what the GPU's
// cvt.rzi does; C leaves it undefined).
static int64_t float_to_int(double v, CType to) {
  if (std::isnan(v)) return 0;
  double lo = to == CType::I32 ? -2147483648.0 : -9223372036854775808.0;
  double hi = to == CType::I32 ? 2147483647.0 : 9223372036854775807.0;
  if (v <= lo) return to == CType::I32 ? std::numeric_limits<int32_t>::min() : std::numeric_limits<int64_t>::min();
  if (v >= hi) return to == CType::I32 ? std::numeric_limits<int32_t>::max() : std::numeric_limits<int64_t>::max();
  return int64_t(std::trunc(v));
}

Scalar convert_scalar(const Scalar& s, CType to) {
  bool from_float = is_float(s.type);
  switch (to) {
    case CType::Bool: return Scalar::of_int(to, from_float ? (s.f != 0.0) : (s.i != 0));
    case CType::I32: return Scalar::of_int(to, from_float ? float_to_int(s.f, to) : int64_t(int32_t(uint32_t(uint64_t(s.i)))));
    case CType::I64: return Scalar::of_int(to, from_float ? float_to_int(s.f, to) : s.i);
    case CType::F32: return Scalar::of_float(to, double(float(from_float ? s.f : double(s.i))));
    case CType::F64: return Scalar::of_float(to, from_float ? s.f : double(s.i));
    case CType::Unknown: return s;
  }
  return s;
}

}  // namespace gamut
