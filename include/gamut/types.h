// Element types of gamut arrays (docs/language.md section 5): shared by the engine and the library.
#pragma once
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

#include "gamut/export.h"

namespace gamut {

// Storage types of inputs and outputs (docs/language.md section 5).
enum class DType : uint8_t { Bool, U8, I8, I16, I32, I64, F16, BF16, F32, F64 };

GAMUT_API size_t dtype_size(DType t);                           // bytes per element
GAMUT_API std::string_view dtype_name(DType t);                 // "f32"
GAMUT_API std::optional<DType> dtype_from_name(std::string_view name);

}  // namespace gamut
