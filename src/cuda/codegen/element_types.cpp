// The element-type table (element_types.h).
#include "cuda/codegen/element_types.h"

#include "cuda/codegen/internal.h"
#include "cuda/device/core/gamut_constants.cuh"

namespace gamut::cuda::cg {

namespace {

struct ComputeType {
  CType type;
  const char* cpp;
  const char* convert;   // from any compute type
  const char* arg;       // from a 64-bit argument word
  size_t bytes;
  const char* wrapping_sum;
};
const ComputeType kComputeTypes[] = {
    {CType::Bool, "bool", "gm::to_bool", "gm::arg_bool", 1, "unsigned"},
    {CType::I32, "int", "gm::to_i32", "gm::arg_i32", 4, "unsigned"},
    {CType::I64, "gm::i64", "gm::to_i64", "gm::arg_i64", 8, "gm::u64"},
    {CType::F32, "float", "gm::to_f32", "gm::arg_f32", 4, "float"},
    {CType::F64, "double", "gm::to_f64", "gm::arg_f64", 8, "double"},
};

const ComputeType& compute(CType t) {
  for (const ComputeType& c : kComputeTypes)
    if (c.type == t) return c;
  unsupported("an untyped plan");
}

struct StorageType {
  DType type;
  const char* cpp;
};
const StorageType kStorageTypes[] = {
    {DType::Bool, "gm::b8"}, {DType::U8, "unsigned char"}, {DType::I8, "signed char"}, {DType::I16, "short"},
    {DType::I32, "int"},     {DType::I64, "gm::i64"},      {DType::F16, "gm::f16"},     {DType::BF16, "gm::bf16"},
    {DType::F32, "float"},   {DType::F64, "double"},
};

// gm::StoreOpCode numbers the operators as gamut::StoreOp does.
static_assert(int(StoreOp::Assign) == gm::kAssign && int(StoreOp::Add) == gm::kAdd && int(StoreOp::Max) == gm::kMax &&
              int(StoreOp::Min) == gm::kMin && int(StoreOp::Or) == gm::kOr && int(StoreOp::And) == gm::kAnd);

}  // namespace

std::string ctype_cpp(CType t) { return compute(t).cpp; }
std::string convert_fn(CType t) { return compute(t).convert; }
std::string arg_fn(CType t) { return compute(t).arg; }
size_t ctype_bytes(CType t) { return compute(t).bytes; }
std::string wrapping_sum_cpp(CType t) { return compute(t).wrapping_sum; }

std::string dtype_cpp(DType t) {
  for (const StorageType& s : kStorageTypes)
    if (s.type == t) return s.cpp;
  return "?";
}

std::string frag_cpp(CType t) { return t == CType::Bool ? "unsigned char" : ctype_cpp(t); }
std::string inner_arg_cpp(CType t) { return t == CType::Bool ? "int" : ctype_cpp(t); }

const char* store_op_code(StoreOp op) {
  static const char* const kCodes[] = {"gm::kAssign", "gm::kAdd", "gm::kMax", "gm::kMin", "gm::kOr", "gm::kAnd"};
  return kCodes[int(op)];
}

}  // namespace gamut::cuda::cg
