// Element storage types spelled in plain C, for the stage kernels (bit pack, segment sum) whose
// NVRTC sources stand alone, without the generated kernels' gm:: headers.
#pragma once
#include "core/types.h"

namespace gamut::cuda {

inline const char* plain_c_type(DType t) {
  switch (t) {
    case DType::Bool: case DType::U8: return "unsigned char";
    case DType::I8: return "signed char";
    case DType::I16: return "short";
    case DType::I32: return "int";
    case DType::I64: return "long long";
    case DType::F16: case DType::BF16: return "unsigned short";
    case DType::F32: return "float";
    case DType::F64: return "double";
  }
  return "float";
}

}  // namespace gamut::cuda
