// Running the `gamut` binary from tests without a shell: as a child process whose output is
// collected, with a file-size limit, on a pseudo-terminal, or started and left running (to be
// interrupted).
#pragma once
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace cli_test {

struct ChildOptions {
  std::map<std::string, std::string> env;   // added to the environment
  long file_size_limit = -1;                // RLIMIT_FSIZE in bytes, -1: unchanged
  bool unprivileged = false;                // when the tests run as root: run as `nobody`, so
                                            // that file permissions apply to the child
};

struct Exit {
  int code = -1;     // exit status, -1 when ended by a signal
  int signal = 0;    // the signal that ended it, 0 when it exited
  std::string out, err;
};

inline std::string slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

inline Exit exit_of(int status) {
  Exit e;
  if (WIFEXITED(status)) e.code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) e.signal = WTERMSIG(status);
  return e;
}

// In the child, before exec: the signals a test sends act as they do for a user's process,
// whatever the test runner inherited.
inline void child_setup(const ChildOptions& o) {
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGXFSZ}) ::signal(sig, SIG_DFL);
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  for (const auto& [k, v] : o.env) ::setenv(k.c_str(), v.c_str(), 1);
  if (o.unprivileged && ::geteuid() == 0) {
    const gid_t nogroup = 65534;
    if (::setgroups(0, nullptr) != 0 || ::setgid(nogroup) != 0 || ::setuid(65534) != 0) ::_exit(126);
  }
  if (o.file_size_limit >= 0) {
    struct rlimit r {rlim_t(o.file_size_limit), rlim_t(o.file_size_limit)};
    ::setrlimit(RLIMIT_FSIZE, &r);
  }
}

[[noreturn]] inline void exec_gamut(const std::vector<std::string>& args) {
  std::vector<char*> argv;
  std::string bin = GAMUT_BINARY;
  argv.push_back(bin.data());
  std::vector<std::string> copy = args;
  for (std::string& a : copy) argv.push_back(a.data());
  argv.push_back(nullptr);
  ::execv(bin.c_str(), argv.data());
  ::_exit(127);
}

// Started with stdout and stderr going to these files; the caller waits for it.
inline pid_t start_gamut(const std::vector<std::string>& args, const std::string& out_path, const std::string& err_path,
                         const ChildOptions& o = {}) {
  pid_t pid = ::fork();
  if (pid == 0) {
    child_setup(o);
    int out = ::open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    int err = ::open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ::dup2(out, 1);
    ::dup2(err, 2);
    exec_gamut(args);
  }
  return pid;
}

inline Exit wait_for(pid_t pid, const std::string& out_path, const std::string& err_path) {
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  Exit e = exit_of(status);
  e.out = slurp(out_path);
  e.err = slurp(err_path);
  std::filesystem::remove(out_path);
  std::filesystem::remove(err_path);
  return e;
}

inline std::string scratch_name(const char* what) {
  static int n = 0;
  return (std::filesystem::temp_directory_path() /
          ("gamut_child_" + std::to_string(::getpid()) + "_" + std::to_string(n++) + "." + what))
      .string();
}

inline Exit run_gamut(const std::vector<std::string>& args, const ChildOptions& o = {}) {
  const std::string out = scratch_name("out"), err = scratch_name("err");
  return wait_for(start_gamut(args, out, err, o), out, err);
}

// With stdout and stderr on a pseudo-terminal (what a user at a terminal sees, in one stream).
inline Exit run_gamut_on_terminal(const std::vector<std::string>& args, const ChildOptions& o = {}) {
  Exit e;
  int master = ::posix_openpt(O_RDWR | O_NOCTTY);
  if (master < 0 || ::grantpt(master) != 0 || ::unlockpt(master) != 0) return e;
  const std::string slave_name = ::ptsname(master);
  pid_t pid = ::fork();
  if (pid == 0) {
    ::setsid();
    int slave = ::open(slave_name.c_str(), O_RDWR);
    ::dup2(slave, 1);
    ::dup2(slave, 2);
    ::close(master);
    child_setup(o);
    exec_gamut(args);
  }
  char buf[4096];
  while (true) {
    ssize_t n = ::read(master, buf, sizeof buf);
    if (n > 0) e.out.append(buf, size_t(n));
    else if (n < 0 && errno == EINTR) continue;
    else break;   // EIO once the child and its terminal are gone
  }
  ::close(master);
  int status = 0;
  ::waitpid(pid, &status, 0);
  Exit done = exit_of(status);
  done.out = std::move(e.out);
  return done;
}

}  // namespace cli_test
