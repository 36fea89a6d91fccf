#include "api/helper_threads.h"

#include <pthread.h>

#include <condition_variable>
#include <mutex>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

namespace gamut::api {
namespace {

struct Helper {
  std::mutex mu;
  std::condition_variable cv;
  std::function<void()> job, done;
  bool has_job = false;
};

// Never destroyed: idle helpers wait on it until the process ends. After a fork the child has
// none of the helpers (only the forking thread is copied): it forgets them.
struct Pool {
  std::mutex mu;
  std::vector<Helper*> idle;
};

Pool* pool() {
  static Pool* p = [] {
    auto* made = new Pool;
    pthread_atfork([] { pool()->mu.lock(); }, [] { pool()->mu.unlock(); },
                   [] {
                     Pool* q = pool();
                     q->idle.clear();  // (those threads do not exist here; their memory is left)
                     q->mu.unlock();
                   });
    return made;
  }();
  return p;
}

void serve(Helper* h) {
  for (;;) {
    std::function<void()> job, done;
    {
      std::unique_lock<std::mutex> lock(h->mu);
      h->cv.wait(lock, [h] { return h->has_job; });
      job = std::move(h->job);
      done = std::move(h->done);
      h->job = nullptr;
      h->done = nullptr;
      h->has_job = false;
    }
    job();
    {
      std::lock_guard<std::mutex> lock(pool()->mu);
      pool()->idle.push_back(h);
    }
    done();
  }
}

}  // namespace

bool run_on_helper(std::function<void()> job, std::function<void()> done) {
  Pool* p = pool();
  Helper* h = nullptr;
  {
    std::lock_guard<std::mutex> lock(p->mu);
    if (!p->idle.empty()) {
      h = p->idle.back();
      p->idle.pop_back();
    }
  }
  if (!h) {
    h = new Helper;
    try {
      std::thread(serve, h).detach();
    } catch (const std::system_error&) {
      delete h;
      return false;
    }
  }
  {
    std::lock_guard<std::mutex> lock(h->mu);
    h->job = std::move(job);
    h->done = std::move(done);
    h->has_job = true;
  }
  h->cv.notify_one();
  return true;
}

}  // namespace gamut::api
