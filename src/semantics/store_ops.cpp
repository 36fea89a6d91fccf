// Whole-array fills and merges of dense outputs (store_ops.h).
#include "semantics/store_ops.h"

namespace gamut::cpu {
namespace {

template <class T>
void fill_t(NDArray& a, StoreOp op) {
  T v = identity_of<T>(op);
  T* p = a.as<T>();
  for (int64_t e = 0, n = a.size(); e < n; ++e) p[e] = v;
}

template <StoreOp Op, class T>
void merge_t(NDArray& into, const std::byte* part) {
  T* o = into.as<T>();
  const T* p = reinterpret_cast<const T*>(part);
  for (int64_t e = 0, n = into.size(); e < n; ++e) o[e] = sto<Op, T>(o[e], p[e]);
}

template <StoreOp Op>
void merge_op(NDArray& into, const std::byte* part, CType t) {
  switch (t) {
    case CType::Bool: merge_t<Op, uint8_t>(into, part); break;
    case CType::I32: merge_t<Op, int32_t>(into, part); break;
    case CType::I64: merge_t<Op, int64_t>(into, part); break;
    case CType::F32:
      if constexpr (!kStoreIntOnly<Op>) merge_t<Op, float>(into, part);
      break;
    case CType::F64:
      if constexpr (!kStoreIntOnly<Op>) merge_t<Op, double>(into, part);
      break;
    default: break;
  }
}

}  // namespace

void fill_identity(NDArray& a, StoreOp op, CType t) {
  switch (t) {
    case CType::Bool: fill_t<uint8_t>(a, op); break;
    case CType::I32: fill_t<int32_t>(a, op); break;
    case CType::I64: fill_t<int64_t>(a, op); break;
    case CType::F32: fill_t<float>(a, op); break;
    case CType::F64: fill_t<double>(a, op); break;
    default: break;
  }
}

void merge_partial(NDArray& into, const std::byte* part, StoreOp op, CType t) {
  switch (op) {
    case StoreOp::Assign: break;  // projections are written in place, never merged
    case StoreOp::Add: merge_op<StoreOp::Add>(into, part, t); break;
    case StoreOp::Max: merge_op<StoreOp::Max>(into, part, t); break;
    case StoreOp::Min: merge_op<StoreOp::Min>(into, part, t); break;
    case StoreOp::Or: merge_op<StoreOp::Or>(into, part, t); break;
    case StoreOp::And: merge_op<StoreOp::And>(into, part, t); break;
  }
}

}  // namespace gamut::cpu
