// The CPU engine: the executable definition of the query semantics.
#pragma once
#include "bind/instance.h"

namespace gamut {

// Run a bound, fully typed plan. threads = 0: one per hardware thread.
Results run_cpu(const Instance& inst, int threads = 0);

}  // namespace gamut
