// Element types in device code: one table of names and conversions (element_types.cpp) for the
// generated kernels and the stage kernels. No CUDA headers.
#pragma once
#include <cstddef>
#include <string>

#include "core/types.h"
#include "plan/plan.h"

namespace gamut::cuda::cg {

// Compute types: the C++ type (bool, int, gm::i64, float, double), the conversion to it from any
// compute type (gm::to_i32, ...), the read of a 64-bit kernel argument word as it
// (gm::arg_i32, ...), its bytes, and the type sums of it wrap in (integers unsigned, so that
// every add wraps as the query's arithmetic does; bool counts as i32). Throw unsupported for
// CType::Unknown.
std::string ctype_cpp(CType t);
std::string convert_fn(CType t);
std::string arg_fn(CType t);
size_t ctype_bytes(CType t);
std::string wrapping_sum_cpp(CType t);
// Storage types as arrays hold them: gm::b8, unsigned char, signed char, short, int, gm::i64,
// gm::f16, gm::bf16, float, double (gm::widen gives the compute type).
std::string dtype_cpp(DType t);
// The mainloop holds bool operands as bytes 0/1 (shared memory, fragments) and hands them to
// the inner op as int: bools kept as predicates would exhaust the 7 predicate registers.
// Rendered code is correct for a Bool value held as bool or as int 0/1.
std::string frag_cpp(CType t);        // unsigned char for Bool, else ctype_cpp
std::string inner_arg_cpp(CType t);   // int for Bool, else ctype_cpp
// The aggregate operators' device codes (gm::kAdd, ...; device/core/gamut_constants.cuh).
const char* store_op_code(StoreOp op);

}  // namespace gamut::cuda::cg
