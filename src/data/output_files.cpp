#include "data/output_files.h"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <list>
#include <mutex>
#include <stdexcept>
#include <thread>

#include "core/error.h"
#include "data/npy.h"

namespace fs = std::filesystem;

namespace gamut {

// What an abort removes. Read and written only with registry().mu held, so the signal watcher
// sees a directory either before it exists or after it is recorded here.
struct OutputCommit::Cleanup {
  std::string staging;                     // "" until made
  std::vector<std::string> created_dirs;   // outermost first
};

namespace {

struct Registry {
  std::mutex mu;
  std::list<OutputCommit::Cleanup*> live;
};
// Never destroyed: the watcher thread may still use it while the process exits.
Registry& registry() {
  static Registry* r = new Registry;
  return *r;
}

// Renamed away before it is emptied: a write under way in another thread opens its file by the
// old path, so it cannot put a file into the directory after it was emptied.
void remove_staging(const std::string& staging) {
  if (staging.empty()) return;
  std::string doomed = staging + ".abort";
  if (::rename(staging.c_str(), doomed.c_str()) != 0) doomed = staging;
  std::error_code ec;
  fs::remove_all(doomed, ec);
}

void abort_cleanup(OutputCommit::Cleanup& c) {   // registry().mu held
  remove_staging(c.staging);
  c.staging.clear();
  // Only directories this run made, innermost first; rmdir refuses non-empty ones, so nothing
  // that someone else put there meanwhile is lost.
  for (auto it = c.created_dirs.rbegin(); it != c.created_dirs.rend(); ++it) ::rmdir(it->c_str());
  c.created_dirs.clear();
}

[[noreturn]] void clean_up_and_end(int sig) {
  registry().mu.lock();   // kept until the end: no staging file or directory can appear any more
  for (OutputCommit::Cleanup* c : registry().live) abort_cleanup(*c);
  std::signal(sig, SIG_DFL);
  sigset_t one;
  sigemptyset(&one);
  sigaddset(&one, sig);
  pthread_sigmask(SIG_UNBLOCK, &one, nullptr);
  ::raise(sig);   // ends the process with the signal's own status (130 for SIGINT in a shell)
  ::_exit(128 + sig);
}

void check_name(const std::string& name) {
  if (name.empty() || name == "." || name == ".." || name.find('/') != std::string::npos ||
      name.find('\0') != std::string::npos)
    throw std::invalid_argument("OutputCommit: bad output name '" + name + "'");
}

}  // namespace

std::string replaced_input(const std::string& output, const std::vector<std::string>& inputs) {
  struct stat out {};
  if (::lstat(output.c_str(), &out) != 0) return "";
  auto same = [&](const struct stat& s) { return s.st_dev == out.st_dev && s.st_ino == out.st_ino; };
  for (const std::string& in : inputs) {
    struct stat entry {}, file {};
    if (::lstat(in.c_str(), &entry) == 0 && same(entry)) return in;
    if (::stat(in.c_str(), &file) == 0 && same(file)) return in;
  }
  return "";
}

OutputCommit::OutputCommit(std::string dir)
    : dir_(dir.empty() ? "." : std::move(dir)), cleanup_(std::make_unique<Cleanup>()) {
  std::lock_guard<std::mutex> lock(registry().mu);
  registry().live.push_back(cleanup_.get());
}

OutputCommit::~OutputCommit() {
  std::lock_guard<std::mutex> lock(registry().mu);
  if (!committed_) abort_cleanup(*cleanup_);
  registry().live.remove(cleanup_.get());
}

std::string OutputCommit::final_path(const std::string& name) const {
  return (fs::path(dir_) / (name + ".npy")).string();
}

std::string OutputCommit::staged_path(const std::string& name) const {
  return (fs::path(cleanup_->staging) / (name + ".npy")).string();
}

void OutputCommit::protect(const std::vector<std::string>& inputs) {
  protected_.insert(protected_.end(), inputs.begin(), inputs.end());
}

void OutputCommit::check_protected(const std::string& name) const {
  std::string input = replaced_input(final_path(name), protected_);
  if (!input.empty())
    throw_usage_error("output " + name + " would replace the input file " + input + " (" + final_path(name) +
                      " is the same file); choose another -o directory");
}

void OutputCommit::ensure_staging_dir() {
  std::lock_guard<std::mutex> lock(registry().mu);
  if (!cleanup_->staging.empty()) return;
  fs::path d(dir_);
  if (d.filename().empty() && d.has_parent_path()) d = d.parent_path();   // "out/" -> "out"
  std::error_code ec;
  if (!fs::is_directory(d, ec)) {
    if (fs::exists(fs::symlink_status(d, ec)))
      throw_device_error("cannot create output directory " + dir_ + ": a file of that name exists");
    // Made level by level, each recorded as it appears, so that an abort removes exactly these.
    std::vector<fs::path> missing;
    for (fs::path p = d; !p.empty(); p = p.parent_path()) {
      if (fs::exists(fs::symlink_status(p, ec))) break;
      missing.push_back(p);
      if (p == p.parent_path()) break;
    }
    for (auto it = missing.rbegin(); it != missing.rend(); ++it) {
      if (::mkdir(it->c_str(), 0777) == 0) cleanup_->created_dirs.push_back(it->string());
      else if (errno != EEXIST)
        throw_device_error("cannot create output directory " + dir_ + ": " + std::strerror(errno));
    }
    if (!fs::is_directory(d, ec)) throw_device_error("cannot create output directory " + dir_ + ": not a directory");
  }
  for (unsigned n = 0;; ++n) {
    std::string s = (d / (".gamut-stage." + std::to_string(::getpid()) + "." + std::to_string(n))).string();
    if (::mkdir(s.c_str(), 0700) == 0) {
      cleanup_->staging = s;
      return;
    }
    if (errno != EEXIST || n >= 1000)
      throw_device_error("cannot write into output directory " + dir_ + ": " + std::strerror(errno));
  }
}

namespace {
template <class Write>
void stage_file(const std::string& name, const std::string& path, std::vector<std::string>& staged, Write write) {
  try {
    write();
  } catch (...) {
    // With the lock: while the signal watcher cleans up, this waits for the end of the process
    // instead of reporting a write error that the interruption caused.
    std::lock_guard<std::mutex> lock(registry().mu);
    std::error_code ec;
    fs::remove(path, ec);
    staged.erase(std::remove(staged.begin(), staged.end(), name), staged.end());
    throw;
  }
  if (std::find(staged.begin(), staged.end(), name) == staged.end()) staged.push_back(name);
}
}  // namespace

void OutputCommit::stage(const std::string& name, const NDArray& a) {
  check_name(name);
  ensure_staging_dir();
  const std::string path = staged_path(name);
  stage_file(name, path, staged_, [&] { write_npy(path, a, final_path(name)); });
}

void OutputCommit::stage(const std::string& name, const Table& t) {
  check_name(name);
  ensure_staging_dir();
  const std::string path = staged_path(name);
  stage_file(name, path, staged_, [&] { write_npy_table(path, t, final_path(name)); });
}

namespace {
// An exclusive flock on the output directory while one run's renames happen: runs writing into
// the same directory at once (other processes too) land their outputs one run after the other,
// never interleaved. Advisory, and it leaves no file behind.
struct DirectoryLock {
  int fd = -1;
  explicit DirectoryLock(const std::string& dir) {
    fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0) {
      while (::flock(fd, LOCK_EX) != 0 && errno == EINTR) {
      }
    }
  }
  ~DirectoryLock() {
    if (fd >= 0) ::close(fd);   // releases the lock
  }
  DirectoryLock(const DirectoryLock&) = delete;
  DirectoryLock& operator=(const DirectoryLock&) = delete;
};
}  // namespace

void OutputCommit::commit() {
  ensure_staging_dir();   // DIR exists afterwards even when nothing was staged
  const DirectoryLock others(dir_);
  // Held throughout: an interrupting signal waits until every rename is done or undone.
  std::lock_guard<std::mutex> lock(registry().mu);
  for (const std::string& name : staged_) check_protected(name);

  struct Renamed {
    std::string final, backup;   // backup: the earlier file, "" when there was none
  };
  std::vector<Renamed> done;
  auto undo = [&] {
    for (auto it = done.rbegin(); it != done.rend(); ++it) {
      if (it->backup.empty()) ::unlink(it->final.c_str());
      else ::rename(it->backup.c_str(), it->final.c_str());
    }
  };
  for (const std::string& name : staged_) {
    const std::string final = final_path(name), staged = staged_path(name);
    std::string backup;
    bool moved_aside = false;
    struct stat st {};
    if (::lstat(final.c_str(), &st) == 0 && !S_ISDIR(st.st_mode)) {
      // Keep the earlier file until the end: a second name for it (the final name stays valid
      // for readers), or, on file systems without hard links, the file itself moved aside.
      backup = staged + ".previous";
      if (::link(final.c_str(), backup.c_str()) != 0) {
        if (::rename(final.c_str(), backup.c_str()) != 0) {
          const int e = errno;
          undo();
          throw_device_error("cannot write " + final + ": " + std::strerror(e));
        }
        moved_aside = true;
      }
    }
    if (::rename(staged.c_str(), final.c_str()) != 0) {
      const int e = errno;
      if (moved_aside) ::rename(backup.c_str(), final.c_str());
      undo();
      throw_device_error("cannot write " + final + ": " + std::strerror(e));
    }
    done.push_back({final, backup});
  }
  committed_ = true;
  remove_staging(cleanup_->staging);   // the backups
  cleanup_->staging.clear();
  cleanup_->created_dirs.clear();      // committed: they stay
}

void install_interrupt_cleanup() {
  static std::once_flag once;
  std::call_once(once, [] {
    std::signal(SIGXFSZ, SIG_IGN);
    sigset_t set;
    sigemptyset(&set);
    for (int sig : {SIGINT, SIGTERM, SIGHUP}) {
      struct sigaction old {};
      // A signal inherited as ignored (nohup, a background job) stays ignored.
      if (::sigaction(sig, nullptr, &old) == 0 && old.sa_handler != SIG_IGN) sigaddset(&set, sig);
    }
    pthread_sigmask(SIG_BLOCK, &set, nullptr);   // inherited by every thread started later
    std::thread([set] {
      int sig = 0;
      while (sigwait(&set, &sig) != 0) {
      }
      clean_up_and_end(sig);
    }).detach();
  });
}

}  // namespace gamut
