#include "cli/progress.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace gamut::cli {

namespace {
constexpr double kRedrawSeconds = 0.1;
constexpr int kBarWidth = 30;

double steady_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}
}  // namespace

ProgressBar::ProgressBar(Write write, double delay_s, Clock clock)
    : write_(std::move(write)), delay_s_(delay_s), clock_(std::move(clock)), start_(clock_()),
      next_draw_(start_ + delay_s) {}

std::string ProgressBar::frame(double fraction, double elapsed_s) {
  fraction = std::clamp(fraction, 0.0, 1.0);
  const int filled = int(std::floor(fraction * kBarWidth));
  char tail[64];
  std::snprintf(tail, sizeof tail, "] %3d%%  %.1f s", int(std::floor(fraction * 100)), elapsed_s);
  return "\r[" + std::string(size_t(filled), '#') + std::string(size_t(kBarWidth - filled), '.') + tail;
}

void ProgressBar::update(double fraction) {
  const double now = clock_();
  if (now < next_draw_.load(std::memory_order_relaxed)) {
    // Not drawing now; still remember how far the run got, when nobody else holds the lock.
    if (mu_.try_lock()) {
      best_ = std::max(best_, fraction);
      mu_.unlock();
    }
    return;
  }
  std::unique_lock<std::mutex> lock(mu_, std::try_to_lock);
  if (!lock.owns_lock()) return;
  best_ = std::max(best_, fraction);
  next_draw_.store(now + kRedrawSeconds, std::memory_order_relaxed);
  std::string f = frame(best_, now - start_);
  last_width_ = f.size() - 1;
  drawn_ = true;
  write_(f);
}

void ProgressBar::finish() {
  std::lock_guard<std::mutex> lock(mu_);
  if (!drawn_) return;
  write_("\r" + std::string(last_width_, ' ') + "\r");
  drawn_ = false;
  next_draw_.store(INFINITY);   // nothing more after the end
}

std::unique_ptr<ProgressBar> terminal_progress(bool quiet) {
  if (quiet || !::isatty(STDERR_FILENO)) return nullptr;
  double delay = 2.0;
  if (const char* env = std::getenv("GAMUT_PROGRESS_DELAY")) {
    char* end = nullptr;
    double d = std::strtod(env, &end);
    if (end != env && *end == '\0' && d >= 0) delay = d;
  }
  return std::make_unique<ProgressBar>(
      [](const std::string& text) {
        std::fwrite(text.data(), 1, text.size(), stderr);
        std::fflush(stderr);
      },
      delay, steady_seconds);
}

}  // namespace gamut::cli
