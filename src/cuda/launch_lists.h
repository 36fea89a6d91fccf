// Device side of list outputs (`emit`) for run_gpu: column buffers with a row counter per list.
// A kernel appends every row that reaches the emit; when a counter passes the capacity the
// buffers grow and the kernel runs again (rows are never dropped); the rows then go through
// finalize_list on the host.
// top/bottom lists: the kernel appends only the rows its tile pre-selection keeps (about N per
// group and tile, gm::TileSelect), and results() reduces those on the device to each group's
// N best plus rank ties (list_select.h) before downloading, so neither the device buffers nor
// the host ever hold M x N rows.
#pragma once
#include <cstdint>
#include <vector>

#include "bind/instance.h"
#include "cuda/codegen.h"
#include "cuda/runtime.h"

namespace gamut::cuda {

class DeviceLists {
 public:
  // `capacity`: rows per list to start with.
  DeviceLists(const Instance& inst, int64_t capacity);
  bool empty() const { return lists_.empty(); }
  // Counters to zero (before every launch); word 1 of a counter holds N for the kernel.
  void reset();
  // Write the pointers and capacities into the kernel argument words.
  void fill_args(const ArgLayout& layout, std::vector<uint64_t>& words) const;
  // After a launch: true when some list had more rows than room; those lists then have room
  // for all their rows (the caller resets, re-initialises the outputs and launches again).
  bool grow_if_overflowed();
  // The lists' final tables (finalize_list), in Plan::lists order.
  std::vector<Table> results() const;

 private:
  struct List {
    int64_t capacity = 0;
    DeviceBuffer counter;                 // two u64: rows reached, N
    std::vector<DeviceBuffer> cols;       // per column
    DeviceBuffer b, i, j, key;
  };
  void allocate(size_t l, int64_t capacity);
  uint64_t count(size_t l) const;
  const Instance& inst_;
  std::vector<List> lists_;
};

}  // namespace gamut::cuda
