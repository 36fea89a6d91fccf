// Device side of list outputs (`emit`) for run_gpu: column buffers with a row counter per list.
// A kernel appends every row that reaches the emit; when a counter passes the capacity the
// buffers grow and the kernel runs again (rows are never dropped). Plain and distinct lists are
// then ordered on the device (outputs/list/finish/order.h), exactly as finalize_list orders them.
// top/bottom lists: the kernel appends only the rows its tile pre-selection keeps (about N per
// group and tile, fewer once the per-group global thresholds fall, gm::TileSelect), and results() reduces those on the
// device to each group's N best plus rank ties (outputs/list/finish/select.h) before downloading, so neither the device
// buffers nor the host ever hold M x N rows. (Results and downloads: list_results.cpp.)
#pragma once
#include <algorithm>
#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "bind/instance.h"
#include "cuda/codegen/codegen.h"
#include "cuda/outputs/list/finish/order.h"
#include "cuda/outputs/list/finish/seen.h"
#include "cuda/outputs/list/finish/select.h"
#include "cuda/outputs/output_kind.h"
#include "cuda/runtime.h"

namespace gamut::cuda {

// The caller's device memory for list l's final rows (GpuRunOptions::list_output): one pointer
// per column, `rows` elements of the column's storage type each.
using ListOutputFn = std::function<std::vector<void*>(size_t l, int64_t rows)>;

// A list's key type (the rows' order for top / bottom lists; I32 where it has none).
CType list_key_type(const Plan& p, const ListOutput& l);

// The steps of a run (OutputBuffers, outputs/output_kind.h): bind is fill_args, before_launch
// reset, after_launch select_before_count, finish_on_device finalize_on_device, collect results.
class DeviceLists final : public OutputBuffers {
 public:
  // `capacity`: rows per list to start with; `tile`: the launch's block tile (it sizes the
  // top/bottom reservoirs' refresh, gm::TileSelect::refresh).
  // `boxes` (per list, seen_boxes): the lists that run on a seen table in this run (outputs/list/finish/seen.h).
  DeviceLists(const Instance& inst, int64_t capacity, const TileConfig& tile,
              const std::vector<std::optional<SeenBox>>& boxes = {});
  // For a later run of the same plan and tile (kept with the kernel memo): the buffers that are
  // large enough stay, with their rows' poison from their allocation (0xff: plausible rows of an
  // earlier run may show where a run reserved rows it did not store, never past its count).
  void reuse(const Instance& inst, int64_t capacity, const TileConfig& tile,
             const std::vector<std::optional<SeenBox>>& boxes = {});
  // Device memory held (what keeping this between runs costs).
  size_t held_bytes() const;
  // Whether a run on the current device and stream may use these buffers.
  bool usable_here() const;
  bool empty() const { return lists_.empty(); }
  // Counters to zero (before every launch); word 1 of a counter holds N for the kernel. The
  // global thresholds of top/bottom lists to 0xffffffff (keep everything). One copy from pinned
  // memory, in stream order.
  void reset();
  // Write the pointers and capacities into the kernel argument words.
  void fill_args(const ArgLayout& layout, std::vector<uint64_t>& words) const;
  // After a launch: true when some list had more rows than room; those lists then have room
  // for all their rows (the caller resets, re-initialises the outputs and launches again).
  bool grow_if_overflowed() override;
  // OutputBuffers' steps.
  void bind(const ArgLayout& layout, std::vector<uint64_t>& words) const override { fill_args(layout, words); }
  void before_launch() override { reset(); }
  void after_launch() override { select_before_count(); }
  void finish_on_device() override { finalize_on_device(); }
  // Results::lists, with `device_out` (collect_into) as results() takes it.
  void collect(Results& res) override {
    res.lists = results(device_out_);
    device_out_ = nullptr;  // (the caller's function is this run's; the buffers may serve the next)
  }
  // Where collect() puts final rows that are on the device (GpuRunOptions::list_output), or null.
  void collect_into(const ListOutputFn* device_out) { device_out_ = device_out; }
  // Right after a launch, before anything waits: per-group top / bottom lists that finish in
  // one pass (outputs/list/finish/top_of_groups.h) are selected in stream order, the kernels reading each
  // list's row counter on the device, and the kept rows' numbers come down with the counts, so
  // that the run waits once (a kNN call waited for the counts, then enqueued ~8 launches while
  // the device idled, then waited again: bench/NOTES.md session 21). A plain list that
  // appended rows in an earlier launch is ordered likewise (outputs/list/finish/order.h, enqueue_list_order):
  // its first early_rows(last) rows are sorted, those past the count last; where the count
  // turns out larger, finalize_on_device orders the list after the count instead. Returns
  // whether any list was.
  bool select_before_count();
  // How many lists select_before_count() finished in this launch.
  int finished_with_kernel() const {
    return int(std::count_if(early_.begin(), early_.end(), [](char e) { return e != kNotEarly; }));
  }
  // Rows a plain list's early order sorts, from the rows its last launch appended: twice as
  // many and at least 4096 (the sort's device time grows with them, not with the count: a
  // Q5 call sorting its 2^20 rows of room instead of its 27K rows lost the launches it saved).
  static uint64_t early_rows(uint64_t last) { return std::max<uint64_t>(4096, 2 * last); }
  static constexpr uint64_t kOrderEarlyRows = uint64_t(1) << 21;  // (at most: beyond, after the count)
  // Rows list l's kernel counter reached in the last launch (past the capacity too). The first
  // call after a launch reads every counter at once (one pinned copy, one wait).
  uint64_t count(size_t l) const;
  // The cells of list l's seen table in this run; 0 where it runs on the tile hash.
  int64_t seen_cells(size_t l) const { return lists_[l].box ? lists_[l].box->cells : 0; }
  // Finalise every list on the device after the last launch: plain and distinct lists are
  // ordered (outputs/list/finish/order.h), top/bottom lists reduced to their best rows (outputs/list/finish/select.h).
  // Top/bottom rows whose key rank is exact (keys of 32 bits or fewer) are also ordered there,
  // and each group's rows past N that tie at the N-th dropped, so that the rows are final.
  // The rows stay on the device, so benchmark repetitions can time the whole pipeline.
  void finalize_on_device();
  // The lists' final tables (as finalize_list makes them), in Plan::lists order: downloads what
  // finalize_on_device() left, running it first if it did not run since the last reset(); the
  // host orders only top/bottom rows with 64-bit keys (or too many to order on the device).
  // With `device_out`, a list whose final rows are on the device is copied into the memory it
  // gives (in stream order, nothing waits), and its table has the row count and no column
  // bytes; the others come down as without it.
  std::vector<Table> results(const ListOutputFn* device_out = nullptr);

 private:
  struct List {
    int64_t capacity = 0;
    std::vector<DeviceBuffer> cols;  // per column
    DeviceBuffer b, i, j, key;
    DeviceBuffer threshold;  // top/bottom: u32 rank per group, lowered by the tiles
    DeviceBuffer reservoir;  // top/bottom: u32[groups][N] ranks of kept rows, or none
    // Distinct lists of vector lookups: this run's value box where it is small, and its bitmap
    // (zeroed by reset(), set by the kernel); the kernel then appends nothing.
    std::optional<SeenBox> box;
    DeviceBuffer seen;
    uint64_t last_rows = 0;  // rows the last finalised launch appended (0: none yet)
  };
  void allocate(size_t l, int64_t capacity);
  const Instance* inst_ = nullptr;
  const ListOutputFn* device_out_ = nullptr;  // collect_into
  std::vector<List> lists_;
  // Every list's counter words (gm::kListCounterWords each); reset() writes them and count()
  // reads them through the thread's pinned scratch (thread_pinned_scratch: up, then down).
  DeviceBuffer counters_;
  size_t counter_bytes() const;
  mutable std::vector<uint64_t> counts_;  // rows per list once read after the launch; empty before
  // What finalize_on_device() left per list: `rows` rows in `cols` (and b, i, j, key for
  // top/bottom, which the host still orders); with `from_list`, the rows are the list's own.
  struct Finished {
    bool from_list = false, host_order = false;
    uint64_t rows = 0;
    std::vector<DeviceBuffer> cols;
    DeviceBuffer b, i, j, key, order_b, order_g;
    std::vector<DeviceBuffer> sorted;  // the device ordering's output, traded with the above
    // A list's final rows as indices into the list's own columns, in order (select_small,
    // top_of_groups_on_device): results() gathers them straight into the caller's memory, or into cols.
    DeviceBuffer order;
    bool gather_pending = false;
    DeviceBuffer rank, scratch, kept_n;  // top_of_groups's (kept between runs)
  };
  // Finished::gather_pending: list l's columns gathered in its final order into `to` (the
  // caller's device memory), or, without `to`, into its Finished::cols.
  void gather_final_rows(size_t l, const std::vector<void*>* to);
  // A top / bottom list's m kept rows (gathered into finished_[l]'s key, b, i, j and columns)
  // ordered by (b, group, rank, other axis), or (rank, b, i, j) without groups, then cut to each
  // group's first `limit` rows: its final rows. The key's rank is exact; m > 0.
  void order_candidates(size_t l, const SelectInput& in, uint64_t m, int64_t limit);
  // A per-group list of N <= sortdev::kMaxGroupTopLimit with an exact rank: its final rows from
  // all in.n candidates in one pass over the groups (outputs/list/finish/top_of_groups.h), as indices in
  // finished_[l].order for gather_final_rows; false (nothing done) where the list is not of that kind.
  bool top_of_groups_on_device(size_t l, const SelectInput& in);
  static bool top_of_groups_fits(const SelectInput& in);
  // The selection's launches for list l's in.n rows (with n_device: the kernels read the count
  // there, at most in.n), into finished_[l]'s order and kept_n; and, once m is known, the rest.
  void enqueue_top_of_groups(size_t l, const SelectInput& in, const uint64_t* n_device);
  void finish_top_of_groups(size_t l, uint32_t m, const SelectInput& in);
  // Room for the final rows' indices: min(in.n, groups x N), at least 1.
  static uint64_t kept_room(const SelectInput& in);
  // List l's selection input over its first n rows.
  SelectInput select_input(size_t l, uint64_t n) const;
  // List l's column buffers and their storage types (appended), as the orderings take them.
  void list_columns(size_t l, std::vector<const DeviceBuffer*>& cols, std::vector<DType>& types) const;
  // The thread's pinned words: reset()'s counters, count()'s, then one kept count per list.
  uint64_t* pinned_words() const;
  uint64_t* pinned_counts() const;        // count()'s part
  uint64_t* pinned_kept(size_t l) const;  // list l's kept count (select_before_count)
  // Per list, what select_before_count() did in this launch (which then also enqueued the
  // counts' copy): nothing, a top / bottom list's selection, a plain list's order.
  enum : char { kNotEarly = 0, kSelectedEarly = 1, kOrderedEarly = 2 };
  std::vector<char> early_;
  std::vector<uint64_t> early_sorted_;  // kOrderedEarly: the rows the order covers
  std::vector<Finished> finished_;
  bool finalized_ = false;  // finished_ is this launch's
  ListOrderScratch order_scratch_;
};

}  // namespace gamut::cuda
