// Helper threads for the library's interruptible runs (Options::interrupted): the engine works
// on a helper while the calling thread polls. Helpers are kept for the process, so that a call
// neither starts a thread nor loses the thread's warm state (its pinned scratch for list counts,
// cuda/runtime.h thread_pinned_scratch).
#pragma once
#include <functional>

namespace gamut::api {

// Runs job() on an idle helper thread, or on a new one when none is idle, and returns at once;
// false when no thread could start (the process's thread limit): the job did not run. A helper
// is idle again before done() is called (so that the next call finds it), then done() is
// called; neither may throw.
bool run_on_helper(std::function<void()> job, std::function<void()> done);

}  // namespace gamut::api
