// Running compiled steps over one block of lanes: control flow (masks), accumulator updates,
// dense stores and list emits. Expression instructions are the kernels of ops.cpp.
#include <cmath>
#include <cstring>
#include <limits>

#include "cpu/program.h"

namespace gamut::cpu {
namespace {

// A constant in its lane representation. Integer -> float converts directly (no detour
// through double, which could round twice for large i64 values).
void write_scalar(void* dst, CType t, const Scalar& v) {
  bool f = is_float(v.type);
  switch (t) {
    case CType::Bool: *static_cast<uint8_t*>(dst) = uint8_t(f ? v.f != 0.0 : v.i != 0); break;
    case CType::I32: *static_cast<int32_t*>(dst) = int32_t(convert_scalar(v, CType::I32).i); break;
    case CType::I64: *static_cast<int64_t*>(dst) = convert_scalar(v, CType::I64).i; break;
    case CType::F32: *static_cast<float*>(dst) = f ? float(v.f) : float(v.i); break;
    case CType::F64: *static_cast<double*>(dst) = f ? v.f : double(v.i); break;
    default: break;
  }
}

// The store's computed indices (docs/language.md section 9): an active lane whose value lies
// outside its position's extent stores nothing and is recorded in c.misses. Adds each value's
// offsets to off (every lane); returns the lanes that store (c.keep), or c.mask when all do.
const uint8_t* computed_offsets(Ctx& c, const Step& s, int64_t* off) {
  bool dropped = false;
  uint8_t* keep = c.keep.data();
  for (int l = 0; l < c.n; ++l) keep[l] = c.mask ? c.mask[l] : 1;
  for (const OutDim& d : s.dims) {
    if (d.key < 0) continue;
    const int64_t* v = static_cast<const int64_t*>(c.ptr[size_t(d.key)]);
    const bool uniform = c.mod->slots[size_t(d.key)].uniform;
    KeyMisses& miss = c.misses[size_t(d.key_slot)];
    for (int l = 0; l < c.n; ++l) {
      const int64_t key = v[uniform ? 0 : l];
      if (key >= 0 && key < d.extent) {
        off[l] += key * d.stride;
      } else if (keep[l]) {
        miss.add(key);
        keep[l] = 0;
        dropped = true;
      }
    }
  }
  return dropped ? keep : c.mask;
}

void run_store(Ctx& c, const Step& s) {
  int64_t* off = c.off.data();
  int64_t base = 0;
  bool varying = false;
  for (const OutDim& d : s.dims) {
    if (d.key >= 0) {
      varying = true;
      continue;
    }
    switch (d.axis) {
      case SlotKind::Row: base += int64_t(c.i) * d.stride; break;
      case SlotKind::Batch: base += int64_t(c.b) * d.stride; break;
      case SlotKind::Col: varying = true; break;
      default:
        if (d.st.j == 0) base += d.read(d.data, int64_t(c.b) * d.st.b + int64_t(c.i) * d.st.i) * d.stride;
        else varying = true;
    }
  }
  off[0] = base;
  if (varying) {
    for (int l = 0; l < c.n; ++l) off[l] = base;
    for (const OutDim& d : s.dims) {
      if (d.key >= 0) continue;
      if (d.axis == SlotKind::Col) {
        for (int l = 0; l < c.n; ++l) off[l] += int64_t(c.jv[l]) * d.stride;
      } else if (d.axis == SlotKind::Temp && d.st.j != 0) {
        int64_t row = int64_t(c.b) * d.st.b + int64_t(c.i) * d.st.i;
        for (int l = 0; l < c.n; ++l) off[l] += d.read(d.data, row + int64_t(c.jv[l]) * d.st.j) * d.stride;
      }
    }
  }
  const uint8_t* mask = s.computed ? computed_offsets(c, s, off) : c.mask;
  const SlotInfo& v = c.mod->slots[size_t(s.value)];
  s.store(c.out[size_t(s.target)], off, !varying, c.ptr[size_t(s.value)], v.uniform, mask, c.n);
}

void append_lanes(Ctx& c, std::vector<std::byte>& col, int slot, int count) {
  const SlotInfo& info = c.mod->slots[size_t(slot)];
  size_t sz = lane_size(info.type);
  const std::byte* src = static_cast<const std::byte*>(c.ptr[size_t(slot)]);
  size_t old = col.size();
  col.resize(old + size_t(count) * sz);
  std::byte* dst = col.data() + old;
  for (int t = 0; t < count; ++t)
    std::memcpy(dst + size_t(t) * sz, src + (info.uniform ? 0 : size_t(c.active[size_t(t)]) * sz), sz);
}

// The last `count` values of a float column as plain and distinct lists hold them: every NaN the
// quiet NaN (docs/semantics.md; the GPU's gm::one_nan), whatever sign and payload it was computed with.
template <class T>
void one_nan(std::vector<std::byte>& col, int count) {
  T* v = reinterpret_cast<T*>(col.data() + col.size()) - count;
  for (int t = 0; t < count; ++t)
    if (std::isnan(v[t])) v[t] = std::numeric_limits<T>::quiet_NaN();
}

void run_emit(Ctx& c, const Step& s) {
  int count = 0;
  for (int l = 0; l < c.n; ++l)
    if (!c.mask || c.mask[l]) c.active[size_t(count++)] = l;
  if (count == 0) return;
  ListCandidates& L = (*c.lists)[size_t(s.target)];
  for (size_t col = 0; col < s.cols.size(); ++col) {
    append_lanes(c, L.table.columns[col].data, s.cols[col], count);
    if (!s.one_nan) continue;
    const CType t = c.mod->slots[size_t(s.cols[col])].type;
    if (t == CType::F32) one_nan<float>(L.table.columns[col].data, count);
    if (t == CType::F64) one_nan<double>(L.table.columns[col].data, count);
  }
  if (s.key >= 0) append_lanes(c, L.key.data, s.key, count);
  // (A transposed run's rows are its columns: the rows are recorded as the query's (i, j).)
  std::vector<int32_t>& row_of = c.transposed ? L.j : L.i;
  std::vector<int32_t>& col_of = c.transposed ? L.i : L.j;
  for (int t = 0; t < count; ++t) {
    L.b.push_back(c.b);
    row_of.push_back(c.i);
    col_of.push_back(c.jv[c.active[size_t(t)]]);
  }
  L.table.rows += count;
}

}  // namespace

Ctx::Ctx(const Module& m) : mod(&m) {
  size_t n = m.slots.size();
  const bool shared = m.region.size() == n;
  arena.assign((shared ? size_t(m.regions) : n) * size_t(kLanes), 0.0);
  ptr.resize(n);
  buf.resize(n);
  for (size_t s = 0; s < n; ++s) {
    buf[s] = ptr[s] = arena.data() + (shared ? size_t(m.region[s]) : s) * size_t(kLanes);
    if (m.slots[s].kind == SlotKind::Const) write_scalar(buf[s], m.slots[s].type, m.slots[s].value);
  }
  off.resize(size_t(kLanes));
  keep.resize(size_t(kLanes));
  misses.resize(m.key_slots);
  active.resize(size_t(kLanes));
}

void Ctx::set_batch(int32_t v) { b = v; *static_cast<int32_t*>(buf[size_t(mod->batch)]) = v; }
void Ctx::set_row(int32_t v) { i = v; *static_cast<int32_t*>(buf[size_t(mod->row)]) = v; }
void Ctx::set_red(int32_t v) { k = v; *static_cast<int32_t*>(buf[size_t(mod->red)]) = v; }

void Ctx::set_lanes(const int32_t* js, int count, bool contig) {
  jv = js;
  n = count;
  contiguous = contig;
  j0 = count > 0 ? js[0] : 0;
  ptr[size_t(mod->col)] = const_cast<int32_t*>(js);
}

void run_steps(Ctx& c, const std::vector<Step>& steps) {
  for (const Step& s : steps) {
    switch (s.kind) {
      case StepKind::Op: s.op.fn(c, s.op); break;
      case StepKind::Update:
        s.update(c.ptr[size_t(s.target)], c.ptr[size_t(s.value)], c.mod->slots[size_t(s.value)].uniform,
                 c.mask, c.n);
        break;
      case StepKind::MulAdd:
        s.muladd(c.ptr[size_t(s.target)], c.ptr[size_t(s.value)], c.mod->slots[size_t(s.value)].uniform,
                 c.ptr[size_t(s.value2)], c.mod->slots[size_t(s.value2)].uniform, c.mask, c.n);
        break;
      case StepKind::If: {
        const uint8_t* cond = static_cast<const uint8_t*>(c.ptr[size_t(s.cond)]);
        if (c.mod->slots[size_t(s.cond)].uniform) {
          if (cond[0]) run_steps(c, s.body);
          break;
        }
        uint8_t* m = static_cast<uint8_t*>(c.buf[size_t(s.mask)]);
        const uint8_t* parent = c.mask;
        uint8_t any = 0;
        for (int l = 0; l < c.n; ++l) {
          m[l] = uint8_t(cond[l] & (parent ? parent[l] : 1));
          any |= m[l];
        }
        if (!any) break;  // no lane takes the branch: skip its work
        c.mask = m;
        run_steps(c, s.body);
        c.mask = parent;
        break;
      }
      case StepKind::Store: run_store(c, s); break;
      case StepKind::Emit: run_emit(c, s); break;
    }
  }
}

}  // namespace gamut::cpu
