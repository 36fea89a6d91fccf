// The CPU engine: the executable definition of the query semantics.
#pragma once
#include <atomic>
#include <cstdint>
#include <functional>

#include "bind/footprint.h"
#include "bind/instance.h"

namespace gamut {

// The threads run_cpu(inst, threads) runs: at most one per tile of pairs, one when an `=` store
// can be hit by several pairs. threads = 0: one per hardware thread. With more than one, every
// thread keeps its own copy of each shared aggregate output (dense_output_shared): fewer threads
// then, when those copies would not fit in `host_available` bytes (cpu_host_memory).
int cpu_thread_count(const Instance& inst, int threads = 0, int64_t host_available = INT64_MAX);

// Whether run_cpu runs `inst` transposed (few columns, many rows: the query's j as the engine's
// rows, its i as the lanes, so that a block evaluates many pairs at once). The results are the
// same as a run as written (float sums up to their order).
bool cpu_runs_transposed(const Instance& inst);

// Run a bound, fully typed plan. threads = 0: one per hardware thread. `lists_guard`, when given,
// hears how much host memory the lists hold as they grow, and stops the run when they outgrow it.
// `progress`, when set, is called after each tile of pairs with (tiles done, tiles in all), from
// the worker threads. `cancel`, when set (from any thread), stops the run with gamut::Cancelled:
// it is read before each tile and each block of columns and of k values.
Results run_cpu(const Instance& inst, int threads = 0, ListMemoryGuard* lists_guard = nullptr,
                const std::function<void(int64_t done, int64_t total)>& progress = {},
                const std::atomic<bool>* cancel = nullptr);

}  // namespace gamut
