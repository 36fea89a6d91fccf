#include "cuda/outputs/list/host/launch_lists.h"

#include <algorithm>
#include <cstring>

#include "bind/footprint.h"
#include "core/error.h"
#include "core/host_memory.h"
#include "core/sizes.h"
#include "cuda/device/core/gamut_constants.cuh"
#include "cuda/outputs/list/finish/order.h"
#include "cuda/outputs/list/finish/select.h"
#include "cuda/outputs/list/finish/top_of_groups.h"
#include "cuda/runtime/internal.h"

namespace gamut::cuda {

namespace {
bool top_bottom(const ListOutput& l) {
  return (l.mode == ListMode::Top || l.mode == ListMode::Bottom) && l.key != kNoExpr;
}

// The sort-key range of axis `a`'s values in this run (none for the reduction axis).
KeyRange axis_key_range(const Instance& inst, AxisRole a) {
  switch (a) {
    case AxisRole::Row: return {inst.row.begin, uint64_t(inst.row.size())};
    case AxisRole::Col: return {inst.col.begin, uint64_t(inst.col.size())};
    case AxisRole::Batch: return {0, uint64_t(inst.batch)};
    case AxisRole::Red: break;
  }
  return {};
}

// The ranges of the list's columns that are the pair's axes (b, i, j as emitted): their sort
// keys take only the bits the run's ranges need.
std::vector<KeyRange> axis_column_ranges(const Plan& P, size_t l, const Instance& inst) {
  std::vector<KeyRange> out;
  const Stmt* e = emit_of(P, l);
  if (!e) return out;
  for (size_t c = 0; c < e->columns.size(); ++c) {
    const Expr& x = P.expr(e->columns[c]);
    out.push_back(x.kind == ExprKind::Axis ? axis_key_range(inst, AxisRole(x.index)) : KeyRange{});
  }
  return out;
}

// The columns of a plain list that order its rows: a list has one emit, run at most once per
// (b, i, j), so the shortest prefix of its columns holding the axis values i, j (and b) orders
// the rows totally; the later columns only come along (fewer sort passes: Q5's (i, j, value)
// sorts on one 64-bit word instead of two). All columns where no prefix holds them.
size_t plain_key_columns(const Plan& P, size_t l) {
  const Stmt* e = emit_of(P, l);
  if (!e) return SIZE_MAX;
  bool row = false, col = false, batch = !P.batched;
  for (size_t c = 0; c < e->columns.size(); ++c) {
    const Expr& x = P.expr(e->columns[c]);
    if (x.kind == ExprKind::Axis) {
      row = row || x.index == int(AxisRole::Row);
      col = col || x.index == int(AxisRole::Col);
      batch = batch || x.index == int(AxisRole::Batch);
    }
    if (row && col && batch) return c + 1;
  }
  return SIZE_MAX;
}
}  // namespace

CType list_key_type(const Plan& p, const ListOutput& l) { return l.key != kNoExpr ? p.expr(l.key).type : CType::I32; }

DeviceLists::DeviceLists(const Instance& inst, int64_t capacity, const TileConfig& tile,
                         const std::vector<std::optional<SeenBox>>& boxes) {
  reuse(inst, capacity, tile, boxes);
}

void DeviceLists::reuse(const Instance& inst, int64_t capacity, const TileConfig& tile,
                        const std::vector<std::optional<SeenBox>>& boxes) {
  inst_ = &inst;
  finalized_ = false;
  counts_.clear();
  early_.clear();
  const size_t n = inst.plan->lists.size();
  if (n == 0) return;  // (dense outputs only: nothing to allocate, nothing to wait for)
  if (lists_.size() != n || !counters_.get()) {
    lists_.clear();
    lists_.resize(n);
    finished_.clear();
    counters_ = DeviceBuffer(n * gm::kListCounterWords * sizeof(uint64_t));
  }
  for (size_t l = 0; l < n; ++l) {
    List& L = lists_[l];
    const ListOutput& spec = inst.plan->lists[l];
    if (top_bottom(spec)) {
      // One per group, as the kernel indexes them: (b, i - row_begin), (b, j - col_begin) or 0.
      const int64_t groups = spec.per == PerGroup::Row   ? size_mul_saturated(inst.batch, inst.row.size())
                             : spec.per == PerGroup::Col ? size_mul_saturated(inst.batch, inst.col.size())
                                                         : 1;
      const size_t threshold_bytes =
          size_t(size_mul_or_throw(std::max<int64_t>(groups, 1), sizeof(uint32_t), "list " + spec.name));
      if (L.threshold.size() < threshold_bytes) L.threshold = DeviceBuffer(threshold_bytes);
      // Reservoirs (gm::TileSelect::keep / refresh) where a tile's refresh, which reads the S
      // slots of each group it touched, reads at most one slot per pair of the tile, and they
      // are small.
      const int64_t limit = inst.list_limits[l], slots = gm::reservoir_slots(limit);
      const int64_t tile_groups = spec.per == PerGroup::Row ? tile.bm : spec.per == PerGroup::Col ? tile.bn : 1;
      // (saturating: N comes from the user and may be anything)
      if (limit > 0 && size_mul_saturated(tile_groups, slots) <= int64_t(tile.bm) * tile.bn &&
          size_mul_saturated(groups, slots) <= (int64_t(1) << 26)) {
        const size_t reservoir_bytes = size_t(groups * slots) * sizeof(uint32_t);
        if (L.reservoir.size() < reservoir_bytes) L.reservoir = DeviceBuffer(reservoir_bytes);
      } else {
        L.reservoir = DeviceBuffer();  // none: the kernel reads a null pointer as no reservoir
      }
    }
    L.box = l < boxes.size() ? boxes[l] : std::nullopt;
    if (L.box && L.seen.size() < size_t(L.box->words()) * 4) L.seen = DeviceBuffer(size_t(L.box->words()) * 4);
    // (A list on a seen table appends nothing: one row of room.)
    const int64_t rows = L.box ? 1 : capacity;
    if (L.capacity < std::max<int64_t>(rows, 1)) allocate(l, rows);
  }
}

size_t DeviceLists::held_bytes() const {
  size_t n = counters_.size();
  auto add = [&n](const DeviceBuffer& b) { n += b.size(); };
  for (const List& L : lists_) {
    for (const DeviceBuffer& c : L.cols) add(c);
    for (const DeviceBuffer* b : {&L.b, &L.i, &L.j, &L.key, &L.threshold, &L.reservoir, &L.seen}) add(*b);
  }
  for (const Finished& F : finished_) {
    for (const DeviceBuffer& c : F.cols) add(c);
    for (const DeviceBuffer& c : F.sorted) add(c);
    for (const DeviceBuffer* b :
         {&F.b, &F.i, &F.j, &F.key, &F.order_b, &F.order_g, &F.order, &F.rank, &F.scratch, &F.kept_n})
      add(*b);
  }
  for (const DeviceBuffer* b :
       {&order_scratch_.keys[0], &order_scratch_.keys[1], &order_scratch_.rows[0], &order_scratch_.rows[1],
        &order_scratch_.temp, &order_scratch_.table, &order_scratch_.refs, &order_scratch_.count})
    add(*b);
  return n;
}

size_t DeviceLists::counter_bytes() const { return lists_.size() * gm::kListCounterWords * sizeof(uint64_t); }

bool DeviceLists::usable_here() const {
  return counters_.get() && counters_.device_ordinal() == current_device() && counters_.stream() == current_stream();
}

void DeviceLists::allocate(size_t l, int64_t capacity) {
  const Plan& P = *inst_->plan;
  const ListOutput& spec = P.lists[l];
  List& L = lists_[l];
  capacity = std::max<int64_t>(capacity, 1);
  L.capacity = capacity;
  L.cols.clear();
  for (const ListColumn& c : spec.columns) L.cols.emplace_back(size_t(capacity) * dtype_size(storage_type_of(c.type)));
  L.b = DeviceBuffer(size_t(capacity) * sizeof(int32_t));
  L.i = DeviceBuffer(size_t(capacity) * sizeof(int32_t));
  L.j = DeviceBuffer(size_t(capacity) * sizeof(int32_t));
  L.key = spec.key != kNoExpr ? DeviceBuffer(size_t(capacity) * dtype_size(storage_type_of(list_key_type(P, spec))))
                              : DeviceBuffer();
  // Rows the kernel reserved but did not store would read as 0xff bytes (index -1, NaN), never
  // as plausible rows, so that the tests see them. One memset per allocation, not per launch.
  for (DeviceBuffer* buf : {&L.b, &L.i, &L.j, &L.key}) buf->fill_bytes(0xff);
  for (DeviceBuffer& c : L.cols) c.fill_bytes(0xff);
}

uint64_t* DeviceLists::pinned_words() const {
  // (One size for every use in a run, so that the thread's scratch never moves under a copy.)
  return static_cast<uint64_t*>(thread_pinned_scratch(2 * counter_bytes() + lists_.size() * sizeof(uint64_t)));
}
uint64_t* DeviceLists::pinned_counts() const { return pinned_words() + lists_.size() * gm::kListCounterWords; }
uint64_t* DeviceLists::pinned_kept(size_t l) const {
  return pinned_words() + 2 * lists_.size() * gm::kListCounterWords + l;
}

void DeviceLists::reset() {
  if (lists_.empty()) return;
  early_.clear();
  uint64_t* words = pinned_words();
  for (size_t l = 0; l < lists_.size(); ++l) {
    words[l * gm::kListCounterWords] = 0;
    words[l * gm::kListCounterWords + 1] = uint64_t(std::max<int64_t>(inst_->list_limits[l], 0));
    if (lists_[l].threshold.get()) lists_[l].threshold.fill_bytes(0xff);
    if (lists_[l].reservoir.get()) lists_[l].reservoir.fill_bytes(0xff);
    if (lists_[l].box) lists_[l].seen.fill_bytes(0);
  }
  // (The stream waited for the last launch's counts before the host wrote these words.)
  counters_.upload(words, counter_bytes());
  counts_.clear();
  finalized_ = false;
}

void DeviceLists::fill_args(const ArgLayout& layout, std::vector<uint64_t>& w) const {
  auto ptr = [](const DeviceBuffer& b) { return uint64_t(reinterpret_cast<uintptr_t>(b.get())); };
  for (size_t l = 0; l < lists_.size(); ++l) {
    const List& L = lists_[l];
    const ArgLayout::ListSlots& s = layout.lists[l];
    // (A slot of -1: a word the kernel does not read, kernel_args.h read_layout.)
    if (s.counter >= 0) w[size_t(s.counter)] = ptr(counters_) + l * gm::kListCounterWords * sizeof(uint64_t);
    if (s.capacity >= 0) w[size_t(s.capacity)] = uint64_t(L.capacity);
    for (size_t c = 0; c < L.cols.size(); ++c)
      if (s.cols[c] >= 0) w[size_t(s.cols[c])] = ptr(L.cols[c]);
    if (s.b >= 0) w[size_t(s.b)] = ptr(L.b);
    if (s.i >= 0) w[size_t(s.i)] = ptr(L.i);
    if (s.j >= 0) w[size_t(s.j)] = ptr(L.j);
    if (s.key >= 0) w[size_t(s.key)] = ptr(L.key);
    if (s.threshold >= 0) w[size_t(s.threshold)] = ptr(L.threshold);
    if (s.reservoir >= 0) w[size_t(s.reservoir)] = ptr(L.reservoir);  // 0: none
    if (s.seen >= 0) {                                                // 0: the tile hash
      w[size_t(s.seen)] = L.box ? ptr(L.seen) : 0;
      if (s.seen_words >= 0) w[size_t(s.seen_words)] = L.box ? uint64_t(L.box->words()) : 0;
      for (size_t c = 0; c < s.seen_lo.size(); ++c) {
        if (s.seen_lo[c] >= 0) w[size_t(s.seen_lo[c])] = L.box ? uint64_t(L.box->lo[c]) : 0;
        if (s.seen_stride[c] >= 0) w[size_t(s.seen_stride[c])] = L.box ? uint64_t(L.box->stride[c]) : 0;
      }
    }
  }
}

uint64_t DeviceLists::count(size_t l) const {
  // Read once per launch (reset() forgets it): the growth check, the finalisation and the
  // statistics all ask, and the read waits for the stream.
  // (The second half of the scratch: the first may still feed reset()'s copy on another stream.)
  uint64_t* words = pinned_counts();
  if (counts_.empty()) {
    // (Where select_before_count selected a list, it enqueued this copy too.)
    if (finished_with_kernel() == 0) counters_.download_async(words, counter_bytes());
    synchronize();
    // Kept here: the scratch is the thread's, and another DeviceLists may use it before the
    // next count(l) of this launch.
    counts_.resize(lists_.size());
    for (size_t k = 0; k < lists_.size(); ++k) counts_[k] = words[k * gm::kListCounterWords];
  }
  return counts_[l];
}

bool DeviceLists::grow_if_overflowed() {
  bool grew = false;
  for (size_t l = 0; l < lists_.size(); ++l) {
    const uint64_t n = count(l);
    if (n <= uint64_t(lists_[l].capacity)) continue;
    if (n > uint64_t(INT64_MAX / 64)) throw_device_error("list " + inst_->plan->lists[l].name + " is too long");
    // Room for every row, or a clear error naming the list (its old buffers go back first).
    MemoryEstimate need;
    need.add("list " + inst_->plan->lists[l].name + " (" + std::to_string(n) + " rows)",
             size_mul_saturated(int64_t(n), list_row_bytes(*inst_->plan, l)));
    const DeviceMemory mem = device_memory();
    require_fits(need,
                 size_add(int64_t(mem.free), size_mul_saturated(lists_[l].capacity, list_row_bytes(*inst_->plan, l)))
                     .value_or(INT64_MAX),
                 "device memory", "free of " + bytes_text(int64_t(mem.total)) + " on the device");
    // The same launch finds the same rows again. A distinct list's count may differ a little
    // from launch to launch (which rows overflow a tile's table depends on the order of its
    // threads' atomics): room for some more, so that one more launch is enough.
    const bool distinct = inst_->plan->lists[l].mode == ListMode::Distinct;
    allocate(l, int64_t(distinct ? n + n / 8 : n));
    grew = true;
  }
  return grew;
}

void DeviceLists::finalize_on_device() {
  const Plan& P = *inst_->plan;
  finished_.resize(lists_.size());
  for (size_t l = 0; l < lists_.size(); ++l) {
    const ListOutput& spec = P.lists[l];
    List& L = lists_[l];
    Finished& F = finished_[l];
    const int64_t limit = inst_->list_limits[l];
    F.rows = std::min<uint64_t>(count(l), uint64_t(L.capacity));
    L.last_rows = F.rows;
    F.from_list = F.host_order = true;
    F.gather_pending = false;  // (an earlier run's pending gather names that run's rows)
    if (L.box) {               // the kernel set cells, appended nothing: the set cells are the rows, in order
      std::vector<DType> types;
      for (const ListColumn& c : spec.columns) types.push_back(storage_type_of(c.type));
      F.rows = seen_rows(L.seen, *L.box, types, F.cols, order_scratch_.count);
      F.from_list = F.host_order = false;
      continue;
    }
    // Ordered with the kernel (select_before_count): the first rows of the order are the list's
    // where the order covered them all.
    if (l < early_.size() && early_[l] == kOrderedEarly && F.rows <= early_sorted_[l]) {
      F.cols.resize(L.cols.size());
      F.gather_pending = true;
      F.from_list = F.host_order = false;
      continue;
    }
    // Plain and distinct: ordered (and de-duplicated) on the device; the host only downloads.
    if ((spec.mode == ListMode::Plain || spec.mode == ListMode::Distinct) && F.rows <= kMaxDeviceOrderRows) {
      std::vector<const DeviceBuffer*> cols;
      std::vector<DType> types;
      list_columns(l, cols, types);
      const bool distinct = spec.mode == ListMode::Distinct;
      F.rows = order_list_rows(cols, types, F.rows, distinct, order_scratch_, F.cols,
                               distinct ? SIZE_MAX : plain_key_columns(P, l), axis_column_ranges(P, l, *inst_));
      F.from_list = F.host_order = false;
      continue;
    }
    if (!top_bottom(spec)) continue;
    if (limit <= 0) {
      F.rows = 0;
      continue;
    }
    // Selected with the kernel (select_before_count): the kept rows' number came down with the
    // counts. (A launch whose list overflowed ran again, and selected again, before this.)
    if (l < early_.size() && early_[l] == kSelectedEarly) {
      uint32_t m = 0;
      std::memcpy(&m, pinned_kept(l), 4);
      finish_top_of_groups(l, m, select_input(l, uint64_t(L.capacity)));
      continue;
    }
    // top/bottom: select on the device; what comes down is small (N per group plus ties).
    if (F.rows == 0) {  // (final: no rows; the columns empty, not absent)
      F.cols.resize(L.cols.size());
      F.from_list = F.host_order = false;
      continue;
    }
    const SelectInput in = select_input(l, F.rows);
    F.cols.resize(L.cols.size());
    // A global list of few candidates: selected and ordered by one block (one launch and one
    // wait instead of ~15 launches and two waits); results() gathers its columns in that order
    // (into the caller's memory where it gives some: no copy of the gathered columns).
    if (small_selection_fits(in) && select_small(in, F.order, &F.rows)) {
      F.gather_pending = true;
      F.from_list = F.host_order = false;
      continue;
    }
    // Per-group lists of small N: every candidate bucketed by group and each group's N best kept
    // in one pass (outputs/list/finish/top_of_groups.h), instead of the radix rounds and the sort below.
    if (top_of_groups_on_device(l, in)) continue;
    const DeviceBuffer idx = select_candidates(in, &F.rows);
    const size_t m = size_t(F.rows);
    // The kept rows' columns, b, i, j and key: one gather for all of them.
    std::vector<sortdev::GatherColumn> gather;
    auto take = [&](const DeviceBuffer& from, size_t elem, DeviceBuffer& to) {
      if (to.size() < std::max<size_t>(m, 1) * elem) to = DeviceBuffer(std::max<size_t>(m, 1) * elem);
      gather.push_back({to.get(), from.get(), int(elem)});
    };
    for (size_t c = 0; c < L.cols.size(); ++c)
      take(L.cols[c], dtype_size(storage_type_of(spec.columns[c].type)), F.cols[c]);
    take(L.b, 4, F.b);
    take(L.i, 4, F.i);
    take(L.j, 4, F.j);
    take(L.key, dtype_size(in.key_dtype), F.key);
    gather_list_columns(gather, static_cast<const uint32_t*>(idx.get()), m);
    F.from_list = false;
    // Ordered on the device too where the key's rank is exact (keys of 32 bits or fewer): by
    // (b, group, rank, other axis), or (rank, b, i, j) without groups; then each group's first
    // N rows (more where ranks tie at the N-th) are the list's final rows.
    if (exact_sort_rank(in.key_dtype) && m > 0 && m <= kMaxDeviceOrderRows) order_candidates(l, in, m, limit);
  }
  finalized_ = true;
}

void DeviceLists::list_columns(size_t l, std::vector<const DeviceBuffer*>& cols, std::vector<DType>& types) const {
  const List& L = lists_[l];
  for (size_t c = 0; c < L.cols.size(); ++c) {
    cols.push_back(&L.cols[c]);
    types.push_back(storage_type_of(inst_->plan->lists[l].columns[c].type));
  }
}

SelectInput DeviceLists::select_input(size_t l, uint64_t n) const {
  const Plan& P = *inst_->plan;
  const ListOutput& spec = P.lists[l];
  const List& L = lists_[l];
  SelectInput in;
  in.n = n;
  in.key = &L.key;
  in.b = &L.b;
  in.i = &L.i;
  in.j = &L.j;
  in.key_dtype = storage_type_of(list_key_type(P, spec));
  in.top = spec.mode == ListMode::Top;
  in.per = spec.per;
  in.limit = inst_->list_limits[l];
  const AxisRange& g_range = spec.per == PerGroup::Col ? inst_->col : inst_->row;
  in.begin = g_range.begin;
  in.extent = spec.per == PerGroup::None ? 1 : g_range.size();
  in.groups = spec.per == PerGroup::None ? 1 : g_range.size() * inst_->batch;
  in.threshold = L.threshold.get() ? &L.threshold : nullptr;
  return in;
}

bool DeviceLists::top_of_groups_fits(const SelectInput& in) {
  return in.per != PerGroup::None && exact_sort_rank(in.key_dtype) && in.limit > 0 &&
         in.limit <= int64_t(sortdev::kMaxGroupTopLimit) && in.groups > 0 &&
         uint64_t(in.groups) <= sortdev::kMaxGroupTopGroups && in.n > 0 && in.n <= kMaxDeviceOrderRows;
}

bool DeviceLists::select_before_count() {
  bool any = false;
  early_.assign(lists_.size(), kNotEarly);
  early_sorted_.assign(lists_.size(), 0);
  finished_.resize(lists_.size());
  const Plan& P = *inst_->plan;
  for (size_t l = 0; l < lists_.size(); ++l) {
    const List& L = lists_[l];
    const uint64_t* const n_device = static_cast<const uint64_t*>(counters_.get()) + l * gm::kListCounterWords;
    if (L.box) continue;
    // A plain list that appended rows in an earlier launch: about twice as many rows ordered
    // behind the kernel, those past the count last (a Q5 call waited for the count, then
    // enqueued ~25 launches of the sort while the device idled: bench/NOTES.md session 22).
    const uint64_t sorted = std::min<uint64_t>(early_rows(L.last_rows), uint64_t(L.capacity));
    if (P.lists[l].mode == ListMode::Plain && !L.cols.empty() && L.last_rows > 0 && sorted <= kOrderEarlyRows) {
      std::vector<const DeviceBuffer*> cols;
      std::vector<DType> types;
      list_columns(l, cols, types);
      enqueue_list_order(cols, types, sorted, n_device, order_scratch_, finished_[l].order, plain_key_columns(P, l),
                         axis_column_ranges(P, l, *inst_));
      early_[l] = kOrderedEarly;
      early_sorted_[l] = sorted;
      any = true;
      continue;
    }
    if (!top_bottom(P.lists[l])) continue;
    // Every row the buffers hold may be a candidate: the kernels read the counter's number.
    const SelectInput in = select_input(l, uint64_t(L.capacity));
    if (!top_of_groups_fits(in)) continue;
    enqueue_top_of_groups(l, in, n_device);
    finished_[l].kept_n.download_async(pinned_kept(l), 4);
    early_[l] = kSelectedEarly;
    any = true;
  }
  if (any) {  // the counts come down with them: one wait for both
    counters_.download_async(pinned_counts(), counter_bytes());
  }
  return any;
}

void DeviceLists::enqueue_top_of_groups(size_t l, const SelectInput& in, const uint64_t* n_device) {
  Finished& F = finished_[l];
  // (Kept for the next run: a kNN call allocated and freed three buffers here.)
  if (F.rank.size() < in.n * 4) F.rank = DeviceBuffer(in.n * 4);
  sort_ranks(in, *in.key, in.n, F.rank);
  const bool per_j = in.per == PerGroup::Col;
  sortdev::GroupTopInput g;
  g.b = static_cast<const int32_t*>(in.b->get());
  g.g = static_cast<const int32_t*>((per_j ? in.j : in.i)->get());
  g.other = static_cast<const int32_t*>((per_j ? in.i : in.j)->get());
  g.rank = static_cast<const int32_t*>(F.rank.get());
  g.n = uint32_t(in.n);
  g.n_device = n_device;
  g.groups = uint32_t(in.groups);
  g.extent = in.extent;
  g.g_begin = in.begin;
  g.o_begin = (per_j ? inst_->row : inst_->col).begin;
  g.limit = uint32_t(in.limit);
  // The final rows' indices into the list's own columns, in order: results() gathers them
  // (gather_final_rows), into the caller's memory where it gives some, as for select_small.
  const uint64_t room = kept_room(in);
  if (F.order.size() < room * 4) F.order = DeviceBuffer(room * 4);
  const size_t scratch = sortdev::top_of_groups_scratch_bytes(g.n, g.groups);
  if (F.scratch.size() < scratch) F.scratch = DeviceBuffer(scratch);
  if (F.kept_n.size() < 4) F.kept_n = DeviceBuffer(4);
  detail::check(
      sortdev::top_of_groups(g, F.scratch.get(), static_cast<uint32_t*>(F.order.get()),
                             static_cast<uint32_t*>(F.kept_n.get()), static_cast<cudaStream_t>(current_stream())),
      "list top of groups");
}

uint64_t DeviceLists::kept_room(const SelectInput& in) {
  return std::max<uint64_t>(1, std::min<uint64_t>(in.n, uint64_t(in.groups) * uint64_t(in.limit)));
}

// The final rows' number m (at most kept_room(in)), then what results() needs to gather them.
void DeviceLists::finish_top_of_groups(size_t l, uint32_t m, const SelectInput& in) {
  const ListOutput& spec = inst_->plan->lists[l];
  Finished& F = finished_[l];
  if (m > kept_room(in))
    throw_device_error("internal error: list " + spec.name + " kept more rows than its groups hold");
  F.cols.resize(lists_[l].cols.size());
  F.rows = m;
  F.gather_pending = true;
  F.from_list = F.host_order = false;
}

bool DeviceLists::top_of_groups_on_device(size_t l, const SelectInput& in) {
  if (!top_of_groups_fits(in)) return false;
  enqueue_top_of_groups(l, in, nullptr);
  uint32_t m = 0;
  finished_[l].kept_n.download(&m, 4);  // (waits for the stream)
  finish_top_of_groups(l, m, in);
  return true;
}

void DeviceLists::order_candidates(size_t l, const SelectInput& in, uint64_t m, int64_t limit) {
  const ListOutput& spec = inst_->plan->lists[l];
  Finished& F = finished_[l];
  DeviceBuffer rank(m * 4);
  sort_ranks(in, F.key, m, rank);
  const bool per_j = spec.per == PerGroup::Col;
  const DeviceBuffer& g = per_j ? F.j : F.i;
  const DeviceBuffer& o = per_j ? F.i : F.j;
  std::vector<const DeviceBuffer*> cols = spec.per == PerGroup::None
                                              ? std::vector<const DeviceBuffer*>{&rank, &F.b, &F.i, &F.j}
                                              : std::vector<const DeviceBuffer*>{&F.b, &g, &rank, &o};
  std::vector<DType> types(cols.size(), DType::I32);
  // b, i and j lie in the run's ranges: keyed in as few bits as those need (rank, b, i, j or
  // b, group, rank, other in one 64-bit word where they fit: one sort instead of two).
  const KeyRange kb = axis_key_range(*inst_, AxisRole::Batch), ki = axis_key_range(*inst_, AxisRole::Row),
                 kj = axis_key_range(*inst_, AxisRole::Col);
  const std::vector<KeyRange> ranges = spec.per == PerGroup::None
                                           ? std::vector<KeyRange>{{}, kb, ki, kj}
                                           : std::vector<KeyRange>{kb, per_j ? kj : ki, {}, per_j ? ki : kj};
  for (size_t c = 0; c < F.cols.size(); ++c) {
    cols.push_back(&F.cols[c]);
    types.push_back(storage_type_of(spec.columns[c].type));
  }
  // (The ordered buffers and the gathered ones trade places: both are kept for the next run.)
  // (b, i, j) names one row of a list (one emit, at most once per pair), so the four key
  // columns order the rows totally: the list's columns are carried, not sorted on.
  if (order_list_rows(cols, types, m, false, order_scratch_, F.sorted, 4, ranges) != m)
    throw_device_error("internal error: ordering the kept rows of list " + spec.name + " changed their number");
  std::swap(F.order_b, F.sorted[0]);
  std::swap(F.order_g, F.sorted[1]);
  for (size_t c = 0; c < F.cols.size(); ++c) std::swap(F.cols[c], F.sorted[4 + c]);
  if (spec.per == PerGroup::None) {
    F.rows = std::min<uint64_t>(m, uint64_t(limit));
  } else {
    const std::vector<DType> col_types(types.begin() + 4, types.end());
    F.rows = first_rows_of_groups(F.order_b, F.order_g, m, limit, order_scratch_, F.cols, col_types);
  }
  F.host_order = false;
}

}  // namespace gamut::cuda
