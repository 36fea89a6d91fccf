#include "core/threads.h"

#include <system_error>
#include <thread>
#include <vector>

namespace gamut {

void run_on_threads(int64_t n, int64_t first, const std::function<void(int64_t)>& body) {
  std::vector<std::thread> pool;
  int64_t started = first;
  for (; started < n; ++started) {
    try {
      pool.emplace_back(body, started);
    } catch (const std::system_error&) {
      break;
    }
  }
  for (int64_t i = 0; i < first && i < n; ++i) body(i);
  for (int64_t i = started; i < n; ++i) body(i);
  for (auto& t : pool) t.join();
}

}  // namespace gamut
