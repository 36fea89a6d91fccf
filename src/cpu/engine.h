// The CPU engine: the executable definition of the query semantics.
#pragma once
#include <cstdint>
#include <functional>

#include "bind/instance.h"

namespace gamut {

// Run a bound, fully typed plan. threads = 0: one per hardware thread. `progress`, when set, is
// called after each row tile with (tiles done, tiles in all), from the worker threads.
Results run_cpu(const Instance& inst, int threads = 0,
                const std::function<void(int64_t done, int64_t total)>& progress = {});

}  // namespace gamut
