// Where a library call's host time goes, phase by phase (issue 39's call overhead): recorded only
// where the environment has GAMUT_HOST_PHASES=1 (bench/python_overhead.py sets it), on the calling
// thread. A mark adds the time since the previous mark under its name; Query::run puts what its
// thread recorded into RunStats::host_phases. Off, a mark is one test of a flag read once.
#pragma once
#include <string>
#include <utility>
#include <vector>

namespace gamut {

bool host_phases_on();
// A call begins on this thread: what an earlier call left is dropped, the clock starts.
void host_phase_start();
// Whether an outer call (the Python binding) started this thread's clock and has not taken its
// marks yet: Query::run then adds to them, else it starts (and clears) its own.
bool host_phase_started();
// The time since the last mark (or the start), in microseconds, under `name` (a literal).
void host_phase_mark(const char* name);
// This thread's marks since its start, in order (us); `clear`: and forget them.
std::vector<std::pair<std::string, double>> host_phases_take(bool clear = true);

inline void host_phase(const char* name) {
  if (host_phases_on()) host_phase_mark(name);
}

}  // namespace gamut
