// Element types, compute types and the small value helpers every phase shares.
#pragma once
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "gamut/types.h"

namespace gamut {

// DType, the storage types of inputs and outputs (spec section 3), is public: gamut/types.h.

// Types that expressions are computed in. Loads widen storage types to one of these:
// bool stays Bool; u8/i8/i16/i32 become I32; i64 is I64; f16/bf16/f32 become F32; f64 is F64.
// Unknown is used only while input types are not known yet (`gamut check`).
enum class CType : uint8_t { Bool, I32, I64, F32, F64, Unknown };

size_t dtype_size(DType t);
std::string_view dtype_name(DType t);                 // "f32"
std::optional<DType> dtype_from_name(std::string_view name);
std::string_view ctype_name(CType t);                 // "f32", "?" for Unknown
CType compute_type_of(DType t);                       // load widening, above
DType storage_type_of(CType t);                       // Bool->Bool, I32->I32, ... (Unknown: F32)
inline bool is_float(CType t) { return t == CType::F32 || t == CType::F64; }
inline bool is_integer(CType t) { return t == CType::Bool || t == CType::I32 || t == CType::I64; }
inline bool is_float(DType t) { return t == DType::F16 || t == DType::BF16 || t == DType::F32 || t == DType::F64; }

// IEEE half and bfloat16 conversions (round to nearest even), for .npy data and the CPU engine.
float half_to_float(uint16_t h);
uint16_t float_to_half(float f);
float bf16_to_float(uint16_t h);
uint16_t float_to_bf16(float f);

// One scalar in a compute type. Integers are kept in i, floats in f.
struct Scalar {
  CType type = CType::I32;
  int64_t i = 0;
  double f = 0.0;
  static Scalar of_int(CType t, int64_t v) { Scalar s; s.type = t; s.i = v; s.f = double(v); return s; }
  static Scalar of_float(CType t, double v) {
    Scalar s; s.type = t; s.f = v;
    s.i = (v > -9.2e18 && v < 9.2e18) ? int64_t(v) : 0;  // only meaningful for integral values; no UB on inf/NaN
    return s;
  }
};

// The lowest / highest value of a compute type: what `-inf` / `inf` mean for it.
Scalar lowest_of(CType t);
Scalar highest_of(CType t);
// Convert a scalar to another compute type with C semantics (integers wrap, floats truncate toward 0).
Scalar convert_scalar(const Scalar& s, CType to);

}  // namespace gamut
