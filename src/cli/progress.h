// The progress bar of long runs on stderr: `[########............]  40%  3.1 s`.
#pragma once
#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <string>

namespace gamut::cli {

class ProgressBar {
 public:
  using Write = std::function<void(const std::string&)>;   // raw text, with '\r'
  using Clock = std::function<double()>;                    // seconds, monotonic

  // Nothing is drawn before `delay_s` seconds have passed since construction (short runs stay
  // silent); afterwards at most ten times a second.
  ProgressBar(Write write, double delay_s, Clock clock);
  ~ProgressBar() { finish(); }
  ProgressBar(const ProgressBar&) = delete;
  ProgressBar& operator=(const ProgressBar&) = delete;

  // fraction in [0, 1]; the bar never moves back. Safe to call from several threads at once
  // (the CPU engine's workers): a call that finds another one drawing returns at once.
  void update(double fraction);
  // Erases the bar, if one was drawn, so that the next line (summary or error) starts clean.
  void finish();

  // One frame, starting with '\r'.
  static std::string frame(double fraction, double elapsed_s);

 private:
  Write write_;
  double delay_s_;
  Clock clock_;
  double start_;
  std::mutex mu_;
  double best_ = 0;          // highest fraction seen (guarded by mu_)
  std::atomic<double> next_draw_;
  bool drawn_ = false;       // guarded by mu_
  size_t last_width_ = 0;    // guarded by mu_
};

// The bar for `gamut run` on this process's stderr, or null when stderr is not a terminal or
// `quiet`. The delay is 2 s; GAMUT_PROGRESS_DELAY (seconds) overrides it (tests).
std::unique_ptr<ProgressBar> terminal_progress(bool quiet);

}  // namespace gamut::cli
