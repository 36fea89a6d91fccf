// The dense outputs of a GPU run (dense_outputs.h).
#include "cuda/outputs/dense/host/dense_outputs.h"

#include <cstring>

#include "core/error.h"
#include "core/sizes.h"
#include "cuda/codegen/codegen.h"
#include "semantics/computed_index.h"

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

namespace {

int64_t product(const std::vector<int64_t>& v, size_t from, size_t to) {
  int64_t p = 1;
  for (size_t n = from; n < to; ++n) p *= v[n];
  return p;
}

}  // namespace

DeviceDenseOutputs::DeviceDenseOutputs(const Instance& inst, const DenseOutputFn* caller_memory)
    : inst_(inst), caller_memory_(caller_memory != nullptr) {
  const Plan& P = *inst.plan;
  const size_t n = P.dense.size();
  ptr_.assign(n, nullptr);
  pitch_.assign(n, 0);
  rows_.assign(n, 0);
  needs_fill_.assign(n, false);
  for (size_t d = 0; d < n; ++d) {
    const std::vector<int64_t>& shape = inst.dense_shapes[d];
    const DType dt = storage_type_of(P.dense[d].type);
    const int64_t last = shape.empty() ? 1 : shape.back();
    pitch_[d] = shape.size() >= 2 && !caller_memory_ ? (last + 3) / 4 * 4 : last;
    rows_[d] = last ? product(shape, 0, shape.size()) / last : 0;
    const size_t bytes = size_t(size_mul_or_throw(size_mul_or_throw(rows_[d], pitch_[d], "output " + P.dense[d].name),
                                                  int64_t(dtype_size(dt)), "output " + P.dense[d].name));
    buffers_.emplace_back(caller_memory_ ? 0 : bytes);
    ptr_[d] = caller_memory_ ? (*caller_memory)(d, bytes) : buffers_.back().get();
    if (!ptr_[d] && bytes) throw_device_error("no device memory for output " + P.dense[d].name);
  }
  for (size_t d = 0; d < n; ++d) needs_fill_[d] = !written_everywhere(inst, d);
  key_slots_ = key_slots(P).size();
  static_assert(sizeof(KeyMisses) == 24, "gm::KeyMisses is three 8-byte words");
  if (key_slots_) misses_ = DeviceBuffer(key_slots_ * sizeof(KeyMisses));
}

void DeviceDenseOutputs::bind(const ArgLayout& layout, std::vector<uint64_t>& w) const {
  const Plan& P = *inst_.plan;
  // (A layout leaves out the words its kernel does not read: slot -1.)
  auto put = [&w](int slot, uint64_t v) {
    if (slot >= 0) w[size_t(slot)] = v;
  };
  for (size_t d = 0; d < P.dense.size(); ++d) {
    const std::vector<int64_t>& shape = inst_.dense_shapes[d];
    const ArgLayout::OutputSlots& s = layout.dense[d];
    if (shape.size() != s.stride.size())
      throw_device_error("internal error: output " + P.dense[d].name + " has the wrong rank");
    put(s.ptr, uint64_t(reinterpret_cast<uintptr_t>(ptr_[d])));
    // Vector stores need 16-byte aligned rows starting on a 4-element chunk.
    bool aligned = inst_.col.begin % 4 == 0 && reinterpret_cast<uintptr_t>(ptr_[d]) % 16 == 0;
    for (size_t p = 0; p < shape.size(); ++p) {
      const int64_t stride = p + 1 < shape.size() ? pitch_[d] * product(shape, p + 1, shape.size() - 1) : 1;
      put(s.stride[p], uint64_t(stride));
      if (p + 1 < shape.size()) aligned = aligned && stride % 4 == 0;
    }
    put(s.vec, aligned && output_runs_along_j(P, int(d)));
    put(s.elems, uint64_t(rows_[d] * pitch_[d]));
    for (size_t p = 0; p < s.extent.size() && p < shape.size(); ++p) put(s.extent[p], uint64_t(shape[p]));
    if (const int k = first_key_slot(P, int(d)); k >= 0)
      put(s.misses, uint64_t(reinterpret_cast<uintptr_t>(misses_.get()) + size_t(k) * sizeof(KeyMisses)));
  }
}

void DeviceDenseOutputs::before_launch() {
  const Plan& P = *inst_.plan;
  for (size_t d = 0; d < P.dense.size(); ++d)
    if (needs_fill_[d]) fill_identity(ptr_[d], P.dense[d].op, P.dense[d].type, rows_[d] * pitch_[d]);
  if (key_slots_) {
    const std::vector<KeyMisses> none(key_slots_);
    copy_host_to_device(misses_.get(), none.data(), key_slots_ * sizeof(KeyMisses));
  }
}

void DeviceDenseOutputs::collect(Results& res) {
  const Plan& P = *inst_.plan;
  if (key_slots_) {
    std::vector<KeyMisses> misses(key_slots_);
    misses_.download(misses.data(), key_slots_ * sizeof(KeyMisses));
    check_key_misses(inst_, misses);
  }
  std::vector<NDArray>& out = res.dense;
  out.clear();
  for (size_t d = 0; d < P.dense.size(); ++d) {
    if (caller_memory_) {  // stays where the caller wanted it
      NDArray a;
      a.dtype = storage_type_of(P.dense[d].type);
      a.shape = inst_.dense_shapes[d];
      a.data = Bytes::view(ptr_[d], size_t(a.size()) * dtype_size(a.dtype));
      out.push_back(std::move(a));
      continue;
    }
    NDArray a = NDArray::zeros(storage_type_of(P.dense[d].type), inst_.dense_shapes[d]);
    const size_t e = dtype_size(a.dtype);
    if (a.nbytes() > 0) {
      const int64_t last = a.shape.empty() ? 1 : a.shape.back();
      buffers_[d].download_rows(a.data.data(), size_t(rows_[d]), size_t(last) * e, size_t(pitch_[d]) * e);
    }
    out.push_back(std::move(a));
  }
}

}  // namespace gamut::cuda
