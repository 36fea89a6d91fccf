// Errors carry the exit status of spec section 9 and exactly one line of text.
#pragma once
#include <atomic>
#include <string>

// ExitCode and Error are public (the library throws them as they are): gamut/error.h.
#include "gamut/error.h"

namespace gamut {

// A data error names the binding it is about: "data error: A: expected 2 dimensions, got 3".
[[noreturn]] void throw_data_error(const std::string& binding, const std::string& message);
[[noreturn]] void throw_device_error(const std::string& message);
[[noreturn]] void throw_usage_error(const std::string& message);
// Not enough memory (or a size beyond any memory): exit 4, "resource error: ...".
[[noreturn]] void throw_resource_error(const std::string& message);
// A broken invariant of gamut itself (exit 1, as a query error): "internal error: WHAT".
[[noreturn]] void throw_internal_error(const std::string& what);
// A run's cancel flag (RunOptions::cancel), read where a run may stop: set, the run ends with
// gamut::Cancelled.
inline void throw_if_cancelled(const std::atomic<bool>* flag) {
  if (flag && flag->load(std::memory_order_relaxed)) throw Cancelled();
}

}  // namespace gamut
