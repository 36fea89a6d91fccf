#include "cuda/launch_lists.h"

#include <algorithm>

#include "core/error.h"
#include "cpu/list_order.h"
#include "cuda/list_select.h"

namespace gamut::cuda {

namespace {
CType key_type(const Plan& p, const ListOutput& l) { return l.key != kNoExpr ? p.expr(l.key).type : CType::I32; }
bool top_bottom(const ListOutput& l) { return (l.mode == ListMode::Top || l.mode == ListMode::Bottom) && l.key != kNoExpr; }

// The rows a top/bottom list keeps on the device (list_select.h): buffers of `kept` rows.
struct Selected {
  uint64_t kept = 0;
  std::vector<DeviceBuffer> cols;
  DeviceBuffer b, i, j, key;
};
}  // namespace

DeviceLists::DeviceLists(const Instance& inst, int64_t capacity) : inst_(inst) {
  lists_.resize(inst.plan->lists.size());
  for (size_t l = 0; l < lists_.size(); ++l) {
    lists_[l].counter = DeviceBuffer(2 * sizeof(uint64_t));
    allocate(l, capacity);
  }
}

void DeviceLists::allocate(size_t l, int64_t capacity) {
  const Plan& P = *inst_.plan;
  const ListOutput& spec = P.lists[l];
  List& L = lists_[l];
  capacity = std::max<int64_t>(capacity, 1);
  L.capacity = capacity;
  L.cols.clear();
  for (const ListColumn& c : spec.columns)
    L.cols.emplace_back(size_t(capacity) * dtype_size(storage_type_of(c.type)));
  L.b = DeviceBuffer(size_t(capacity) * sizeof(int32_t));
  L.i = DeviceBuffer(size_t(capacity) * sizeof(int32_t));
  L.j = DeviceBuffer(size_t(capacity) * sizeof(int32_t));
  L.key = spec.key != kNoExpr ? DeviceBuffer(size_t(capacity) * dtype_size(storage_type_of(key_type(P, spec))))
                              : DeviceBuffer();
}

void DeviceLists::reset() {
  for (size_t l = 0; l < lists_.size(); ++l) {
    const uint64_t words[2] = {0, uint64_t(std::max<int64_t>(inst_.list_limits[l], 0))};
    lists_[l].counter.upload(words, sizeof words);
  }
}

void DeviceLists::fill_args(const ArgLayout& layout, std::vector<uint64_t>& w) const {
  auto ptr = [](const DeviceBuffer& b) { return uint64_t(reinterpret_cast<uintptr_t>(b.get())); };
  for (size_t l = 0; l < lists_.size(); ++l) {
    const List& L = lists_[l];
    const ArgLayout::ListSlots& s = layout.lists[l];
    w[size_t(s.counter)] = ptr(L.counter);
    w[size_t(s.capacity)] = uint64_t(L.capacity);
    for (size_t c = 0; c < L.cols.size(); ++c) w[size_t(s.cols[c])] = ptr(L.cols[c]);
    w[size_t(s.b)] = ptr(L.b);
    w[size_t(s.i)] = ptr(L.i);
    w[size_t(s.j)] = ptr(L.j);
    if (s.key >= 0) w[size_t(s.key)] = ptr(L.key);
  }
}

uint64_t DeviceLists::count(size_t l) const {
  uint64_t n = 0;
  lists_[l].counter.download(&n, sizeof n);
  return n;
}

bool DeviceLists::grow_if_overflowed() {
  bool grew = false;
  for (size_t l = 0; l < lists_.size(); ++l) {
    const uint64_t n = count(l);
    if (n <= uint64_t(lists_[l].capacity)) continue;
    if (n > uint64_t(INT64_MAX / 64)) throw_device_error("list " + inst_.plan->lists[l].name + " is too long");
    allocate(l, int64_t(n));   // the same launch finds the same rows again
    grew = true;
  }
  return grew;
}

std::vector<Table> DeviceLists::results() const {
  const Plan& P = *inst_.plan;
  std::vector<Table> out;
  for (size_t l = 0; l < lists_.size(); ++l) {
    const ListOutput& spec = P.lists[l];
    const List& L = lists_[l];
    const int64_t limit = inst_.list_limits[l];
    int64_t n = int64_t(std::min<uint64_t>(count(l), uint64_t(L.capacity)));
    ListCandidates rows = cpu::empty_candidates(spec, key_type(P, spec));
    const DType kt = rows.key.dtype;
    // top/bottom: select on the device; what comes down is small (N per group plus ties).
    Selected sel;
    const bool select = top_bottom(spec) && n > 0 && limit > 0 && (spec.per != PerGroup::None || n > limit);
    if (top_bottom(spec) && limit <= 0) n = 0;
    if (select) {
      SelectInput in;
      in.n = uint64_t(n);
      in.key = &L.key;
      in.b = &L.b;
      in.i = &L.i;
      in.j = &L.j;
      in.key_dtype = kt;
      in.top = spec.mode == ListMode::Top;
      in.per = spec.per;
      in.limit = limit;
      const AxisRange& g = spec.per == PerGroup::Col ? inst_.col : inst_.row;
      in.begin = g.begin;
      in.extent = spec.per == PerGroup::None ? 1 : g.size();
      in.groups = spec.per == PerGroup::None ? 1 : g.size() * inst_.batch;
      const DeviceBuffer idx = select_candidates(in, &sel.kept);
      const size_t m = size_t(sel.kept);
      auto take = [&](const DeviceBuffer& src, size_t elem) {
        DeviceBuffer dst(std::max<size_t>(m, 1) * elem);
        gather_rows(in, src, elem, idx, m, dst);
        return dst;
      };
      for (size_t c = 0; c < L.cols.size(); ++c) sel.cols.push_back(take(L.cols[c], dtype_size(rows.table.columns[c].dtype)));
      sel.b = take(L.b, 4);
      sel.i = take(L.i, 4);
      sel.j = take(L.j, 4);
      sel.key = take(L.key, dtype_size(kt));
      synchronize();
      n = int64_t(sel.kept);
    }
    auto src = [&](const DeviceBuffer& all, const DeviceBuffer& kept) -> const DeviceBuffer& { return select ? kept : all; };
    rows.table.rows = n;
    for (size_t c = 0; c < rows.table.columns.size(); ++c) {
      Column& col = rows.table.columns[c];
      col.data.resize(size_t(n) * dtype_size(col.dtype));
      (select ? sel.cols[c] : L.cols[c]).download(col.data.data(), col.data.size());
    }
    rows.b.resize(size_t(n));
    rows.i.resize(size_t(n));
    rows.j.resize(size_t(n));
    src(L.b, sel.b).download(rows.b.data(), size_t(n) * sizeof(int32_t));
    src(L.i, sel.i).download(rows.i.data(), size_t(n) * sizeof(int32_t));
    src(L.j, sel.j).download(rows.j.data(), size_t(n) * sizeof(int32_t));
    if (spec.key != kNoExpr) {
      rows.key.data.resize(size_t(n) * dtype_size(rows.key.dtype));
      src(L.key, sel.key).download(rows.key.data.data(), rows.key.data.size());
    }
    out.push_back(finalize_list(spec, limit, std::move(rows)));
  }
  return out;
}

}  // namespace gamut::cuda
