#include "core/host_phases.h"

#include <chrono>
#include <cstdlib>
#include <cstring>

namespace gamut {

namespace {

using Clock = std::chrono::steady_clock;

struct Phases {
  Clock::time_point last{};
  bool started = false;
  std::vector<std::pair<const char*, double>> marks;
};

Phases& phases() {
  thread_local Phases p;
  return p;
}

}  // namespace

bool host_phases_on() {
  static const bool on = [] {
    const char* v = std::getenv("GAMUT_HOST_PHASES");
    return v && std::strcmp(v, "1") == 0;
  }();
  return on;
}

void host_phase_start() {
  if (!host_phases_on()) return;
  Phases& p = phases();
  p.marks.clear();
  p.started = true;
  p.last = Clock::now();
}

bool host_phase_started() { return host_phases_on() && phases().started; }

void host_phase_mark(const char* name) {
  Phases& p = phases();
  const Clock::time_point now = Clock::now();
  if (p.started) p.marks.emplace_back(name, std::chrono::duration<double, std::micro>(now - p.last).count());
  p.started = true;
  p.last = now;
}

std::vector<std::pair<std::string, double>> host_phases_take(bool clear) {
  std::vector<std::pair<std::string, double>> out;
  if (!host_phases_on()) return out;
  Phases& p = phases();
  for (const auto& [name, us] : p.marks) out.emplace_back(name, us);
  if (!clear) return out;
  p.marks.clear();
  p.started = false;
  return out;
}

}  // namespace gamut
