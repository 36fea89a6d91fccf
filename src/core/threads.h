// Work spread over threads that may not all start.
#pragma once

#include <cstdint>
#include <functional>

namespace gamut {

// Runs body(i) for every i in [first, n) on a thread of its own, and body(i) for i < first on
// the calling thread; returns when all have returned. A thread that cannot start (the process's
// thread or address-space limit) leaves its index to the calling thread: the work is slower,
// not aborted. body must not throw.
void run_on_threads(int64_t n, int64_t first, const std::function<void(int64_t)>& body);

}  // namespace gamut
