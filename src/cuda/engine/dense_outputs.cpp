// The dense outputs' starting values (dense_outputs.h).
#include "cuda/engine/dense_outputs.h"

#include <cstring>

#include "core/error.h"
#include "cuda/runtime.h"

namespace gamut::cuda {

// One element of the identity of `op` in output type t, as stored (spec section 6).
std::vector<std::byte> identity_element(StoreOp op, CType t) {
  const DType d = storage_type_of(t);
  std::vector<std::byte> e(dtype_size(d), std::byte{0});
  Scalar v;
  if (op == StoreOp::And) {
    std::memset(e.data(), 0xff, e.size());
    return e;
  }
  if (op == StoreOp::Max)
    v = lowest_of(t);
  else if (op == StoreOp::Min)
    v = highest_of(t);
  else
    return e;  // = += |= start at 0
  switch (d) {
    case DType::Bool: e[0] = std::byte(v.i != 0); break;
    case DType::I32: {
      const int32_t x = int32_t(v.i);
      std::memcpy(e.data(), &x, 4);
      break;
    }
    case DType::I64: std::memcpy(e.data(), &v.i, 8); break;
    case DType::F32: {
      const float x = float(v.f);
      std::memcpy(e.data(), &x, 4);
      break;
    }
    case DType::F64: std::memcpy(e.data(), &v.f, 8); break;
    default: break;
  }
  return e;
}

void fill_identity(void* buf, StoreOp op, CType t, int64_t elements) {
  const std::vector<std::byte> e = identity_element(op, t);
  bool same = true;
  for (std::byte b : e) same = same && b == e[0];
  if (same) {
    fill_device_bytes(buf, int(e[0]), size_t(elements) * e.size());
    return;
  }
  std::vector<std::byte> host(size_t(elements) * e.size());
  for (int64_t n = 0; n < elements; ++n) std::memcpy(host.data() + size_t(n) * e.size(), e.data(), e.size());
  copy_host_to_device(buf, host.data(), host.size());
}

// A projection that the kernel stores at every element of its shape needs no identity fill
// first (one launch less per call): stored unconditionally (no `when`, not under an `if`), indexed
// by distinct axes themselves (no lookup), each from 0 to the end of its range.
bool written_everywhere(const Instance& inst, size_t d) {
  const Plan& P = *inst.plan;
  const DenseOutput& out = P.dense[d];
  if (!out.is_project() || P.when.present()) return false;
  bool stored = false;
  for (const Stmt& s : P.outer) stored = stored || (s.kind == StmtKind::Store && s.target == int(d));
  if (!stored) return false;
  const std::vector<int64_t>& shape = inst.dense_shapes[d];
  if (shape.size() != out.index.size()) return false;
  bool seen[3] = {false, false, false};
  for (size_t p = 0; p < out.index.size(); ++p) {
    const OutIndex& x = out.index[p];
    if (x.kind != OutIndex::Axis) return false;
    const int role = x.axis == AxisRole::Row ? 0 : x.axis == AxisRole::Col ? 1 : x.axis == AxisRole::Batch ? 2 : -1;
    if (role < 0 || seen[role]) return false;
    seen[role] = true;
    const AxisRange& r = role == 0 ? inst.row : inst.col;
    if (role == 2 ? shape[p] != inst.batch : r.begin != 0 || shape[p] != r.end) return false;
  }
  return true;
}

}  // namespace gamut::cuda
