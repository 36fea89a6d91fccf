// Device side of list outputs (`emit`) for run_gpu: column buffers with a row counter per list.
// A kernel appends every row that reaches the emit; when a counter passes the capacity the
// buffers grow and the kernel runs again (rows are never dropped). Plain and distinct lists are
// then ordered on the device (lists/order.h), exactly as finalize_list orders them.
// top/bottom lists: the kernel appends only the rows its tile pre-selection keeps (about N per
// group and tile, fewer once the per-group global thresholds fall, gm::TileSelect), and results() reduces those on the device to each group's
// N best plus rank ties (lists/select.h) before downloading, so neither the device buffers nor
// the host ever hold M x N rows.
#pragma once
#include <cstdint>
#include <optional>
#include <vector>

#include "bind/instance.h"
#include "cuda/codegen/codegen.h"
#include "cuda/lists/order.h"
#include "cuda/runtime.h"

namespace gamut::cuda {

class DeviceLists {
 public:
  // `capacity`: rows per list to start with; `tile`: the launch's block tile (it sizes the
  // top/bottom reservoirs' refresh, gm::TileSelect::refresh).
  DeviceLists(const Instance& inst, int64_t capacity, const TileConfig& tile);
  bool empty() const { return lists_.empty(); }
  // Counters to zero (before every launch); word 1 of a counter holds N for the kernel. The
  // global thresholds of top/bottom lists to 0xffffffff (keep everything).
  void reset();
  // Write the pointers and capacities into the kernel argument words.
  void fill_args(const ArgLayout& layout, std::vector<uint64_t>& words) const;
  // After a launch: true when some list had more rows than room; those lists then have room
  // for all their rows (the caller resets, re-initialises the outputs and launches again).
  bool grow_if_overflowed();
  // Rows list l's kernel counter reached in the last launch (past the capacity too).
  uint64_t count(size_t l) const;
  // Finalise every list on the device after the last launch: plain and distinct lists are
  // ordered (lists/order.h), top/bottom lists reduced to their best rows (lists/select.h).
  // Top/bottom rows whose key rank is exact (keys of 32 bits or fewer) are also ordered there.
  // The rows stay on the device, so benchmark repetitions can time the whole pipeline.
  void finalize_on_device();
  // The lists' final tables (as finalize_list makes them), in Plan::lists order: downloads what
  // finalize_on_device() left, running it first if it never ran (so call it after the last
  // launch, or leave it to results()); the host orders only top/bottom rows with 64-bit keys,
  // and drops the rows past N of each group that tie at the N-th.
  std::vector<Table> results();

 private:
  struct List {
    int64_t capacity = 0;
    DeviceBuffer counter;                 // two u64: rows reached, N
    mutable std::optional<uint64_t> counted;  // rows reached, once read after the launch (a sync each)
    std::vector<DeviceBuffer> cols;       // per column
    DeviceBuffer b, i, j, key;
    DeviceBuffer threshold;               // top/bottom: u32 rank per group, lowered by the tiles
    DeviceBuffer reservoir;               // top/bottom: u32[groups][N] ranks of kept rows, or none
  };
  void allocate(size_t l, int64_t capacity);
  const Instance& inst_;
  std::vector<List> lists_;
  // What finalize_on_device() left per list: `rows` rows in `cols` (and b, i, j, key for
  // top/bottom, which the host still orders); with `from_list`, the rows are the list's own.
  struct Finished {
    bool from_list = false, host_order = false;
    // Top/bottom rows already in the list's order (device_ordered): the host keeps each group's
    // first N, the group of row r being (order_b[r], order_g[r]).
    bool device_ordered = false;
    uint64_t rows = 0;
    std::vector<DeviceBuffer> cols;
    DeviceBuffer b, i, j, key, order_b, order_g;
  };
  static Table first_of_each_group(const ListOutput& spec, int64_t limit, const Finished& F, Table t);
  std::vector<Finished> finished_;        // empty until finalize_on_device()
  ListOrderScratch order_scratch_;
};

}  // namespace gamut::cuda
