// The generated kernel's input words (input_args.h).
#include "cuda/engine/input_args.h"

#include <algorithm>
#include <climits>
#include <cstring>

#include "core/error.h"
#include "core/sizes.h"

namespace gamut::cuda {

namespace {

uint64_t ptr_word(const DeviceBuffer& b) { return uint64_t(reinterpret_cast<uintptr_t>(b.get())); }

// Word `slot` of the argument, where the kernel has it (a layout leaves out the words its
// kernel does not read: slot -1).
void put(std::vector<uint64_t>& w, int slot, uint64_t v) {
  if (slot >= 0) w[size_t(slot)] = v;
}

int64_t product(const std::vector<int64_t>& v, size_t from = 0) {
  int64_t p = 1;
  for (size_t n = from; n < v.size(); ++n) p *= v[n];
  return p;
}

// A scalar parameter as the kernel reads it: the bits of its value in compute type t.
uint64_t param_word(const Scalar& s, CType t) {
  const Scalar v = convert_scalar(s, t);
  switch (t) {
    case CType::Bool: return v.i != 0 ? 1 : 0;
    case CType::I32: return uint64_t(uint32_t(int32_t(v.i)));
    case CType::I64: return uint64_t(v.i);
    case CType::F32: {
      const float f = float(v.f);
      uint32_t bits;
      std::memcpy(&bits, &f, 4);
      return bits;
    }
    case CType::F64: {
      uint64_t bits;
      std::memcpy(&bits, &v.f, 8);
      return bits;
    }
    case CType::Unknown: break;
  }
  throw_device_error("internal error: a parameter of unknown type");
}

// A grouped join reads an operand only as key-ordered copies when its every access is a tile
// operand (row or column with k): the original stays on the host.
bool gathered_only(const Plan& P, size_t o) {
  for (int a : P.operands[o].accesses)
    if (pattern_rank(P.accesses[size_t(a)].pattern) != 2 || P.accesses[size_t(a)].pattern == Pattern::RowCol ||
        P.accesses[size_t(a)].pattern == Pattern::ColRow)
      return false;
  return true;
}

// gamut's device copies of host inputs, per operand (an empty buffer where the kernel reads the
// caller's device array in place, or gathered copies only). Matrix rows are padded to whole
// 4-element and 16-byte chunks (input_pitch; a pitched copy costs nothing over a plain one), so
// the tile loaders can use 16-byte loads whatever the extents: 4097 columns load like 4100
// (4104 for 16-bit data, which TMA then reads too). `pitch`: the padded rows, per operand.
void upload_inputs(const Instance& inst, bool grouped, std::vector<DeviceBuffer>& uploads,
                   std::vector<int64_t>& pitch) {
  const Plan& P = *inst.plan;
  const size_t lead = P.batched ? 1 : 0;
  pitch.assign(P.operands.size(), 0);
  for (size_t o = 0; o < P.operands.size(); ++o) {
    const NDArray* x = inst.inputs[o];
    if (!x || (grouped && gathered_only(P, o)) || inst.on_device(o)) {
      uploads.emplace_back(0);
      continue;
    }
    if (x->shape.size() != lead + 2) {
      uploads.emplace_back(x->nbytes());
      uploads.back().upload(x->data.data(), x->nbytes());
      continue;
    }
    const int64_t cols_x = x->shape.back(), rows_x = cols_x ? product(x->shape) / cols_x : 0;
    pitch[o] = input_pitch(cols_x, x->dtype);
    const size_t e = dtype_size(x->dtype);
    uploads.emplace_back(size_t(size_mul_or_throw(size_mul_or_throw(rows_x, pitch[o], "input " + P.operands[o].name),
                                                  int64_t(e), "input " + P.operands[o].name)));
    uploads.back().upload_rows(x->data.data(), size_t(rows_x), size_t(cols_x) * e, size_t(pitch[o]) * e);
  }
}

// Each access's words: its operand's pointer, row pitch and batch stride (gamut's copy, or the
// caller's device array in place), and whether its 4-element chunks are aligned.
void bind_accesses(const Instance& inst, const ArgLayout& L, const std::vector<DeviceBuffer>& uploads,
                   const std::vector<int64_t>& pitch, std::vector<uint64_t>& w) {
  const Plan& P = *inst.plan;
  const size_t lead = P.batched ? 1 : 0;
  for (size_t a = 0; a < P.accesses.size(); ++a) {
    const Access& acc = P.accesses[a];
    const size_t o = size_t(acc.operand);
    const NDArray* x = inst.inputs[o];
    if (!x) continue;
    const bool two_d = pattern_rank(acc.pattern) == 2;
    if (x->shape.size() != lead + (two_d ? 2 : 1))
      throw_device_error("internal error: operand " + P.operands[o].name + " has the wrong rank");
    int64_t ld = two_d ? pitch[o] : 1;
    int64_t bstride = !P.batched ? 0 : two_d ? x->shape[lead] * ld : product(x->shape, 1);
    uint64_t ptr = ptr_word(uploads[o]);
    if (inst.on_device(o)) {  // the caller's device array, in place
      const Instance::DeviceInput& d = inst.device_inputs[o];
      if (d.strides.size() != x->shape.size() || (!d.strides.empty() && d.strides.back() != 1 && x->shape.back() > 1))
        throw_device_error("internal error: device input " + P.operands[o].name + " is not row-major");
      ptr = uint64_t(reinterpret_cast<uintptr_t>(d.data));
      ld = two_d ? d.strides[lead] : 1;
      bstride = P.batched ? d.strides[0] : 0;
    }
    if (ld > INT_MAX) throw_device_error("a matrix row of more than 2^31-1 elements is not supported on the GPU");
    const ArgLayout::AccessSlots& s = L.access[a];
    put(w, s.ptr, ptr);
    put(w, s.ld, uint64_t(ld));
    put(w, s.bstride, uint64_t(bstride));
    // 4-element chunks of the tile loaders are aligned when every offset part is a multiple of 4
    // (and the array starts 16-byte aligned, which gamut's own buffers always do).
    put(w, s.vec,
        two_d && ld % 4 == 0 && bstride % 4 == 0 && contiguous_begin(inst, acc.pattern) % 4 == 0 &&
            (ptr % 16 == 0 || ptr == 0));
  }
}

// Grouped joins: the mainloop's tile operands gathered into key order (positions from 0), the
// position -> index maps and the tile table.
void bind_join_groups(const Instance& inst, const ArgLayout& L, const JoinGroups& groups, std::vector<uint64_t>& w,
                      std::vector<DeviceBuffer>& buffers) {
  const Plan& P = *inst.plan;
  for (size_t a = 0; a < P.accesses.size(); ++a) {
    const Pattern pat = P.accesses[a].pattern;
    const bool row = pat == Pattern::RowRed || pat == Pattern::RedRow;
    if (!row && pat != Pattern::ColRed && pat != Pattern::RedCol) continue;
    const NDArray* x = inst.inputs[size_t(P.accesses[a].operand)];
    if (!x) continue;
    const bool p_first = pat == Pattern::RowRed || pat == Pattern::ColRed;
    const NDArray g = gather_along(*x, p_first, row ? groups.row_perm : groups.col_perm);
    const int64_t cols_g = g.shape[1], pitch_g = (cols_g + 3) / 4 * 4;
    const size_t e = dtype_size(g.dtype);
    buffers.emplace_back(std::max<size_t>(1, size_t(g.shape[0] * pitch_g) * e));
    if (g.nbytes() > 0)
      buffers.back().upload_rows(g.data.data(), size_t(g.shape[0]), size_t(cols_g) * e, size_t(pitch_g) * e);
    const ArgLayout::AccessSlots& s = L.access[a];
    put(w, s.ptr, ptr_word(buffers.back()));
    put(w, s.ld, uint64_t(pitch_g));
    put(w, s.bstride, 0);
    put(w, s.vec, !p_first || inst.red.begin % 4 == 0);  // positions start at 0
  }
  auto upload_ints = [&](const std::vector<int32_t>& v) {
    buffers.emplace_back(std::max<size_t>(1, v.size()) * sizeof(int32_t));
    if (!v.empty()) buffers.back().upload(v.data(), v.size() * sizeof(int32_t));
    return ptr_word(buffers.back());
  };
  put(w, L.join_tiles, upload_ints(groups.tiles));
  put(w, L.join_rows, upload_ints(groups.row_perm));
  put(w, L.join_cols, upload_ints(groups.col_perm));
}

}  // namespace

void bind_inputs(const Instance& inst, const KernelSpec& spec, const KernelInfo& info, const JoinGroups* groups,
                 int64_t tiles, std::vector<uint64_t>& w, InputArgs& args) {
  const ArgLayout& L = info.args;
  w[ArgLayout::kRowBegin] = uint64_t(inst.row.begin);
  w[ArgLayout::kRowEnd] = uint64_t(inst.row.end);
  w[ArgLayout::kColBegin] = uint64_t(inst.col.begin);
  w[ArgLayout::kColEnd] = uint64_t(inst.col.end);
  w[ArgLayout::kRedBegin] = uint64_t(inst.red.begin);
  w[ArgLayout::kRedEnd] = uint64_t(inst.red.end);
  w[ArgLayout::kBatch] = uint64_t(inst.batch);
  std::vector<int64_t> pitch;
  upload_inputs(inst, groups != nullptr, args.uploads, pitch);
  bind_accesses(inst, L, args.uploads, pitch, w);
  for (const auto& p : L.params) put(w, p.slot, param_word(inst.params[size_t(p.param)], p.type));
  const bool launched = tiles * inst.batch > 0;
  if (spec.options.tensor_cores() && launched) repitch_operands(inst, spec.math, spec.options.tma, L, w, args.copies);
  if (spec.options.tma && launched) encode_operand_maps(inst, spec.math, spec.tile, L, w, args.copies, info.cluster);
  // (The gathered operands replace the words bind_accesses gave them.)
  if (groups) bind_join_groups(inst, L, *groups, w, args.join_buffers);
}

}  // namespace gamut::cuda
