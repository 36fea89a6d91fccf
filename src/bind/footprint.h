// What a run will hold in memory, estimated from the bound instance before anything is allocated,
// so that a run that cannot fit fails at once with exit 4, naming what needs the memory, instead
// of being killed by the kernel half-way (exit 137, no message). The CPU engine, the GPU engine and
// the driver all take their estimates from here.
//
// Counted: dense outputs (and the GPU's padded copies of them), per-thread partial copies of
// aggregates in the CPU engine, the GPU's copies of the inputs, and list buffers whose size is
// known up front (top/bottom lists: N rows per group; the GPU's initial list capacity). Plain and
// distinct lists grow with the rows the query emits, which nobody knows before the run: the
// engines check them as they grow (ListMemoryGuard below, DeviceLists).
#pragma once
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "bind/instance.h"

namespace gamut {

struct MemoryItem {
  std::string what;  // "output C", "per-thread copies of output C (8 threads)", "list L"
  int64_t bytes = 0;
  bool list = false;  // a list's rows (the engines also count them as they grow)
};

struct MemoryEstimate {
  std::vector<MemoryItem> items;
  void add(std::string what, int64_t bytes, bool list = false);
  int64_t total() const;        // saturates at INT64_MAX
  int64_t total_fixed() const;  // without the lists
};

// True when several (b, i, j) can write one element of dense output d (an aggregate whose index
// misses the row or the column axis): the CPU engine then gives every thread its own copy.
bool dense_output_shared(const Plan& plan, size_t d);

// Rows a top/bottom list can have at most (N per group, at most one per (b, i, j) pair); -1 for
// plain and distinct lists, whose rows are known only after the run.
int64_t list_row_bound(const Instance& inst, size_t l);
// Bytes of one list row as the engines collect it: the columns, the key, and b, i, j.
int64_t list_row_bytes(const Plan& plan, size_t l);

// Host memory of a CPU run with `partial_threads` per-thread copies of every shared dense output
// (0 or 1: none).
MemoryEstimate cpu_host_memory(const Instance& inst, int partial_threads);
// Host memory of a GPU run: the results, and staging for the initial values of min/max outputs.
MemoryEstimate gpu_host_memory(const Instance& inst);
// Device memory of a GPU run: inputs (not device inputs read in place) and outputs (matrix rows
// padded to 4 elements, as run_gpu lays them out) and list buffers of `list_rows` rows each.
MemoryEstimate gpu_device_memory(const Instance& inst, int64_t list_rows);

// Throws a resource error (exit 4) when `need` does not fit in `available` bytes of `memory`
// ("host memory", "device memory"); the message names the largest items, the total and what is
// available (`limited_by` says what limits it, e.g. "MemAvailable").
void require_fits(const MemoryEstimate& need, int64_t available, const std::string& memory,
                  const std::string& limited_by);

// Lists that grow during a run: every engine thread reports the bytes its lists hold; when they
// pass the budget, the run stops with a resource error naming the list.
class ListMemoryGuard {
 public:
  // `budget`: host bytes the lists may use (what is available less the estimate of the rest);
  // finalising a list copies its rows, so rows held count twice.
  ListMemoryGuard(int64_t budget, std::string limited_by) : budget_(budget), limited_by_(std::move(limited_by)) {}
  // A thread's lists now hold `bytes` (it held `previous` at its last report); throws when over.
  void report(int64_t previous, int64_t bytes, const std::string& largest_list);
  // How much a thread's lists may grow between reports: a small part of the budget.
  int64_t report_step() const { return std::clamp<int64_t>(budget_ / 64, int64_t(64) << 10, int64_t(8) << 20); }

 private:
  std::atomic<int64_t> held_{0};
  int64_t budget_;
  std::string limited_by_;
};

}  // namespace gamut
