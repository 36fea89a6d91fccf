// The CPU engine: the executable definition of the query semantics.
#pragma once
#include <cstdint>
#include <functional>

#include "bind/footprint.h"
#include "bind/instance.h"

namespace gamut {

// The threads run_cpu(inst, threads) runs: at most one per tile of rows, one when an `=` store
// can be hit by several pairs. threads = 0: one per hardware thread. With more than one, every
// thread keeps its own copy of each shared aggregate output (dense_output_shared): fewer threads
// then, when those copies would not fit in `host_available` bytes (cpu_host_memory).
int cpu_thread_count(const Instance& inst, int threads = 0, int64_t host_available = INT64_MAX);

// Run a bound, fully typed plan. threads = 0: one per hardware thread. `lists_guard`, when given,
// hears how much host memory the lists hold as they grow, and stops the run when they outgrow it.
// `progress`, when set, is called after each row tile with (tiles done, tiles in all), from the
// worker threads.
Results run_cpu(const Instance& inst, int threads = 0, ListMemoryGuard* lists_guard = nullptr,
                const std::function<void(int64_t done, int64_t total)>& progress = {});

}  // namespace gamut
